export * from './iptables-render.js';
export * from './iptables-parse.js';
export * from './ipset.js';
export * from './saved-dump.js';
export * from './restore-as-save.js';
export * from './rule-text.js';
export * from './whole-save.js';
export * from './restore-lines.js';
