export * from './cluster.js';
export * from './cluster-policy.js';
export * from './dataplane.js';
export * from './node.js';
export * from './flow-log.js';
export * from './problem.js';
export * from './identity-diff.js';
