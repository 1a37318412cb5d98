export * from './addr.js';
export * from './format.js';
export * from './ipsets.js';
export * from './match.js';
export * from './packet.js';
export * from './ruleset.js';
export * from './trace.js';
export * from './wrap.js';
