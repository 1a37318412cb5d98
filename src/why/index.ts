export { whyConnection, FamilyError, type WhyQuery } from './why.js';
export { formatAnswer } from './format.js';
export { EndpointError, type Endpoint } from './endpoints.js';
export type { Answer, Side, SideVerdict } from './answer.js';
export type { ClosestRule } from './closest.js';
