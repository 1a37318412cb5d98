export * from './format.js';
export * from './model.js';
export * from './schema.js';
