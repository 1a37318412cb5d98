export * from './iptables-render.js';
export * from './iptables-parse.js';
export * from './ipset.js';
export * from './rule-form.js';
