// `netfence why --live` against stand-ins for two nodes' daemons: the daemon's own HTTP server
// (src/observe/http-server.ts) and flow log (src/observe/flow-log.ts) on loopback, with a readiness the test
// sets, reached through --daemon-url. Not the sandbox's daemons: the sandbox conformance runs compare `why`
// with real packets; this checks what --live reads and says.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { nullLogger } from '../../../src/log.js';
import { FlowLog } from '../../../src/observe/flow-log.js';
import type { LoggedFlow } from '../../../src/observe/flows.js';
import type { Check } from '../../../src/observe/health.js';
import { ObserveServer } from '../../../src/observe/http-server.js';

const CLUSTER = `
apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {podCIDR: 10.244.1.0/24}
status: {addresses: [{type: InternalIP, address: 192.168.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
spec: {podCIDR: 10.244.2.0/24}
status: {addresses: [{type: InternalIP, address: 192.168.0.2}]}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: shop, labels: {app: web}}, spec: {nodeName: node-a}, status: {phase: Running, podIP: 10.244.1.10}}
---
{apiVersion: v1, kind: Pod, metadata: {name: api, namespace: shop, labels: {app: api}}, spec: {nodeName: node-a}, status: {phase: Running, podIP: 10.244.1.11}}
---
{apiVersion: v1, kind: Pod, metadata: {name: db, namespace: shop, labels: {app: db}}, spec: {nodeName: node-b}, status: {phase: Running, podIP: 10.244.2.20}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: api}}}], ports: [{port: 5432}]}]
`;

class FakeDaemon {
  ready: Check = { ok: true };
  readonly flows = new FlowLog({ logger: nullLogger, now: () => Date.now() });
  private readonly server = new ObserveServer({
    health: { liveness: () => ({ ok: true }), readiness: () => this.ready },
    metrics: { render: () => Promise.resolve(''), contentType: 'text/plain' },
    flows: (q) => ({ records: this.flows.list({ pod: q.get('pod') ?? undefined }) }),
  });
  url = '';
  async start(): Promise<this> {
    const bound = await this.server.start('127.0.0.1:0');
    this.url = `http://127.0.0.1:${bound.port}`;
    return this;
  }
  stop = () => this.server.stop();
}

const flow = (over: Partial<LoggedFlow>): LoggedFlow =>
  ({
    time: Date.now(),
    src: { ip: '10.244.1.11', pod: 'shop/api' },
    dst: { ip: '10.244.2.20', pod: 'shop/db' },
    protocol: 'tcp',
    port: 5432,
    direction: 'ingress',
    reason: 'isolated',
    pod: 'shop/db',
    policies: ['shop/db-ingress'],
    because: 'shop/db is isolated for ingress; policy shop/db-ingress selects it; none allowed this peer',
    ...over,
  }) as LoggedFlow;

describe('why --live', () => {
  let dir: string;
  let file: string;
  let a: FakeDaemon;
  let b: FakeDaemon;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-why-live-'));
    file = join(dir, 'cluster.yaml');
    writeFileSync(file, CLUSTER);
    a = await new FakeDaemon().start();
    b = await new FakeDaemon().start();
  });
  afterEach(async () => {
    await a.stop();
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const why = async (...extra: string[]) => {
    let out = '';
    let err = '';
    const code = await main(
      ['why', '--resources', file, '--live', '--daemon-url', `node-a=${a.url}`, '--daemon-url', `node-b=${b.url}`, ...extra],
      {
        out: (t) => (out += t),
        err: (t) => (err += t),
      },
    );
    return { code, out, err };
  };

  it('both nodes in sync and nothing recorded: the desired answer stands (allowed, exit 0)', async () => {
    const r = await why('--src', 'shop/api', '--dst', 'shop/db:5432');
    expect(r.code).toBe(0);
    expect(r.out).toContain('node-a  in sync');
    expect(r.out).toContain('node-b  in sync');
    expect(r.out).not.toContain('DISAGREES');
  });

  it('a node that is not in sync is named as a possible disagreement', async () => {
    b.ready = { ok: false, reason: 'not ready: first sync not programmed yet' };
    const r = await why('--src', 'shop/api', '--dst', 'shop/db:5432', '--json');
    expect(r.code).toBe(0);
    const live = (JSON.parse(r.out) as { live: { nodes: { node: string; disagreements: string[] }[] } }).live;
    expect(live.nodes.find((n) => n.node === 'node-b')!.disagreements).toEqual([
      'node-b is not in sync (/readyz 503: not ready: first sync not programmed yet): its kernel may not hold the desired rules yet',
    ]);
    expect(live.nodes.find((n) => n.node === 'node-a')!.disagreements).toEqual([]);
  });

  it("the kernel dropped a connection the desired rules allow: named, with the daemon's reason", async () => {
    b.flows.add(flow({}));
    // An allowed record of the same tuple (flowLogAllowed) is no drop.
    a.flows.add(flow({ reason: 'allowed', direction: 'egress', pod: 'shop/api', because: 'allowed by policy x/y rule egress:0' }));
    const r = await why('--src', 'shop/api', '--dst', 'shop/db', '--port', '5432');
    expect(r.code).toBe(0);
    expect(r.out.replace(/\s+/g, ' ')).toContain("DISAGREES: node-b's kernel dropped this connection (ingress) at");
    expect(r.out.replace(/\s+/g, ' ')).toContain('though the desired rules allow it: shop/db is isolated for ingress');
    expect(r.out).not.toMatch(/node-a's kernel dropped/);
  });

  it('a drop the kernel recorded as desired is a confirmation, not a disagreement (exit 1: dropped)', async () => {
    b.flows.add(flow({ src: { ip: '10.244.1.10', pod: 'shop/web' } }));
    const r = await why('--src', 'shop/web', '--dst', 'shop/db:5432');
    expect(r.code).toBe(1);
    expect(r.out).toContain("node-b's kernel dropped it too (ingress");
    expect(r.out).not.toContain('DISAGREES');
  });

  it('a daemon it cannot reach: exit 2 naming the node, the desired answer still printed', async () => {
    await b.stop();
    const r = await why('--src', 'shop/web', '--dst', 'shop/db:5432');
    expect(r.code).toBe(2);
    expect(r.out).toContain('DROPPED at node-b');
    expect(r.err).toContain('cannot reach the daemon on node-b');
    expect(r.err).not.toContain('node-a');
  });

  it('no way to reach a node (manifests, no --daemon-url for it, no API): exit 2 saying what to pass', async () => {
    let out = '';
    let err = '';
    const code = await main(['why', '--resources', file, '--live', '--src', 'shop/web', '--dst', 'shop/db:5432'], {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    expect(code).toBe(2);
    expect(out).toContain('DROPPED at node-b');
    expect(err).toContain('cannot reach the daemon on node-b: no way to ask it: pass --daemon-url node-b=http://HOST:PORT');
  });
});
