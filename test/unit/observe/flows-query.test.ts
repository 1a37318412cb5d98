// GET /flows with a query that cannot be read: refused with a message naming the parameter, never
// answered as if there were no filter. Served by an ObserveServer on 127.0.0.1 over a FlowLog holding
// records 1-4 (the daemon's wiring: answerFlowsQuery over its ring).

import { nullLogger } from '../../../src/log.js';
import { FlowLog } from '../../../src/observe/flow-log.js';
import type { DeniedFlow } from '../../../src/observe/flows.js';
import { answerFlowsQuery } from '../../../src/observe/flows-query.js';
import { HealthState } from '../../../src/observe/health.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import { createMetrics } from '../../../src/observe/metrics.js';

const flow = (dst: string, policy: string, port: number): DeniedFlow => ({
  time: 0,
  src: { ip: '10.244.2.9', pod: 'dev/api' },
  dst: { ip: '10.244.1.5', pod: dst },
  protocol: 'tcp',
  port,
  direction: 'ingress',
  reason: 'isolated',
  pod: dst,
  policies: [policy],
  because: 'isolated',
});

describe('GET /flows query parameters', () => {
  let server: ObserveServer;
  let base: string;
  beforeAll(async () => {
    const log = new FlowLog({ logger: nullLogger, now: () => 0 });
    log.add(flow('prod/db', 'prod/default-deny', 80));
    log.add(flow('prod/web', 'prod/web-in', 443));
    log.add(flow('staging/db', 'staging/deny', 5432));
    // A ClusterNetworkPolicy's Deny: the policy is cluster-scoped, named alone.
    log.add(flow('staging/web', 'lock', 8080));
    server = new ObserveServer({
      health: new HealthState({ now: () => 0, stallAfterMs: 1000 }),
      metrics: createMetrics(),
      flows: (q) => answerFlowsQuery(q, (filter) => log.list(filter)),
    });
    base = `http://127.0.0.1:${(await server.start('127.0.0.1:0')).port}`;
  });
  afterAll(async () => server.stop());

  const get = async (query: string) => {
    const response = await fetch(`${base}/flows?${query}`, { signal: AbortSignal.timeout(5000) });
    const body = (await response.json()) as { records?: { seq: number }[]; error?: string };
    return { status: response.status, ...body };
  };

  it.each([
    ['since=NaN', 'since'],
    ['since=-1', 'since'],
    ['since=1e3', 'since'],
    ['since=', 'since'],
    ['since=%201', 'since'],
    ['since=0x10', 'since'],
    ['since=1.5', 'since'],
    ['since=99999999999999999', 'since'],
    ['since=1&since=2', 'since'],
    ['pod=db', 'pod'],
    ['pod=prod/db/x', 'pod'],
    ['pod=Prod/db', 'pod'],
    ['pod=', 'pod'],
    ['namespace=prod/db', 'namespace'],
    ['namespace=', 'namespace'],
    ['policy=Default-Deny', 'policy'],
    ['policy=prod/db/x', 'policy'],
    ['namespce=prod', 'namespce'],
    ['pod=prod/db&%1B%5B31m=1', 'a parameter'],
  ])('%s: refused with 400, naming %s, nothing listed', async (query, parameter) => {
    const answer = await get(query);
    expect(answer.status).toBe(400);
    expect(answer.records).toBeUndefined();
    expect(answer.error).toMatch(new RegExp(`^${parameter}: `));
  });

  it.each([
    ['', [1, 2, 3, 4]],
    ['since=0', [1, 2, 3, 4]],
    ['since=2', [3, 4]],
    ['since=9007199254740991', []],
    ['pod=prod/db', [1]],
    ['namespace=prod', [1, 2]],
    ['policy=prod/web-in', [2]],
    ['namespace=staging&since=1', [3, 4]],
    ['policy=lock', [4]],
  ])('%s: the records it selects', async (query, seqs) => {
    const answer = await get(query);
    expect(answer.status).toBe(200);
    expect(answer.records?.map((r) => r.seq)).toEqual(seqs);
  });
});
