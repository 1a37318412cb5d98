export * from './format.js';
export * from './model.js';
export * from './report.js';
export * from './schema.js';
