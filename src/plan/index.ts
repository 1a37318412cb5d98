export * from './observed.js';
export * from './plan.js';
