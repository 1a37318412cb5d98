// The drop most flow-log tests start from: dev/api → prod/db, TCP 80, prod/db isolated for ingress by
// prod/default-deny; each case lays the fields it is about over it.

import type { DeniedFlow } from '../../src/observe/flows.js';

export const deniedFlow = (over: Partial<DeniedFlow> = {}): DeniedFlow => ({
  time: Date.parse('2026-11-24T11:20:01Z'),
  src: { ip: '10.244.2.9', pod: 'dev/api' },
  dst: { ip: '10.244.1.5', pod: 'prod/db' },
  protocol: 'tcp',
  port: 80,
  direction: 'ingress',
  reason: 'isolated',
  pod: 'prod/db',
  policies: ['prod/default-deny'],
  because: 'prod/db is isolated for ingress; policy prod/default-deny selects it; none allowed this peer',
  ...over,
});
