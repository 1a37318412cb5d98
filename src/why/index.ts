export { whyConnection, FamilyError, type WhyQuery } from './why.js';
export { formatAnswer } from './format.js';
export { EndpointError, type Endpoint } from './endpoints.js';
export type { Answer, HopSummary, Side, SideVerdict } from './answer.js';
export type { ClosestRule } from './closest.js';
