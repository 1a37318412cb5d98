export { whyConnection, type WhyQuery } from './why.js';
export { formatAnswer } from './format.js';
export { compiledKey, nodeRulesOf, type CompiledRules, type NodeRules } from './walk.js';
export { EndpointError } from './endpoints.js';
export type { Answer } from './answer.js';
