export * from './observed.js';
export * from './plan.js';
export * from './retype.js';
export * from './affected.js';
export * from './rule-identity.js';
export * from './expected-after.js';
