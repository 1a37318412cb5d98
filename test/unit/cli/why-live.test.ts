// `netfence why --live` against stand-ins for two nodes' daemons: the daemon's own HTTP server
// (src/observe/http-server.ts) and flow log (src/observe/flow-log.ts) on loopback, with a readiness the test
// sets, reached through --daemon-url, or through a stand-in API server's pod proxy. Not the sandbox's daemons: the sandbox conformance runs compare `why`
// with real packets; this checks what --live reads and says.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/**
 * A stand-in API server: lists the netfence pod of a node (label and field selector as the DaemonSet's) and
 * proxies `pods/<pod>:9476/proxy/…` to that node's stand-in daemon, as the API server's pod proxy does; a
 * node whose daemon listens on loopback only gets the proxy's "connection refused" Status.
 */
/** Where the manifests' pods run, as the stand-in API server serves them. */
const POD_NODES: Readonly<Record<string, string>> = { 'shop/web': 'node-a', 'shop/api': 'node-a', 'shop/db': 'node-b' };

class FakeApi {
  readonly paths: string[] = [];
  private readonly server: Server;
  url = '';
  constructor(daemons: Readonly<Record<string, () => string | undefined>>) {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://api');
      this.paths.push(`${url.pathname}${url.search}`);
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      if (req.headers.authorization !== 'Bearer operator-token') return json(401, { kind: 'Status', message: 'Unauthorized' });
      const podDoc = (key: string) => ({ metadata: { name: key.split('/')[1] }, spec: { nodeName: POD_NODES[key] } });
      const one = /^\/api\/v1\/namespaces\/shop\/pods\/([^/:]+)$/.exec(url.pathname);
      if (one)
        return POD_NODES[`shop/${one[1]}`] ? json(200, podDoc(`shop/${one[1]}`)) : json(404, { kind: 'Status', message: 'not found' });
      if (url.pathname === '/api/v1/namespaces/shop/pods') return json(200, { kind: 'PodList', items: Object.keys(POD_NODES).map(podDoc) });
      if (url.pathname === '/api/v1/namespaces/kube-system/pods') {
        const node = /^spec\.nodeName=(.+)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
        const ok = url.searchParams.get('labelSelector') === 'app.kubernetes.io/name=netfence' && node !== undefined && node in daemons;
        return json(200, { kind: 'PodList', items: ok ? [{ metadata: { name: `netfence-${node}` } }] : [] });
      }
      const proxy = /^\/api\/v1\/namespaces\/kube-system\/pods\/netfence-([^:]+):9476\/proxy(\/.*)$/.exec(url.pathname);
      const daemon = proxy ? daemons[proxy[1]!]?.() : undefined;
      if (!proxy) return json(404, { kind: 'Status', message: 'not found' });
      if (daemon === undefined)
        return json(503, {
          kind: 'Status',
          message: 'error trying to reach service: dial tcp 192.168.0.2:9476: connect: connection refused',
        });
      void fetch(`${daemon}${proxy[2]}${url.search}`).then(async (r) => res.writeHead(r.status).end(await r.text()));
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }
  stop = () => new Promise<void>((resolve) => this.server.close(() => resolve()));
}

describe("why --live through the API server's pod proxy", () => {
  let dir: string;
  let file: string;
  let kubeconfig: string;
  let a: FakeDaemon;
  let b: FakeDaemon;
  let bOnLoopbackOnly = false;
  let api: FakeApi;
  // `--kubeconfig` loads @kubernetes/client-node on first use: seconds under jest's ESM loader on a loaded
  // machine, which made the first test here overrun its 5 s while the others take 0.1 s. Loaded once, up front.
  beforeAll(() => import('@kubernetes/client-node'), 60_000);
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-why-proxy-'));
    file = join(dir, 'cluster.yaml');
    writeFileSync(file, CLUSTER);
    a = await new FakeDaemon().start();
    b = await new FakeDaemon().start();
    bOnLoopbackOnly = false;
    api = await new FakeApi({ 'node-a': () => a.url, 'node-b': () => (bOnLoopbackOnly ? undefined : b.url) }).start();
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${api.url}", insecure-skip-tls-verify: true}}]
users: [{name: op, user: {token: operator-token}}]
contexts: [{name: ops, context: {cluster: c, user: op}}]
current-context: ops
`,
    );
  });
  afterEach(async () => {
    await api.stop();
    await a.stop();
    await b.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const why = async (...extra: string[]) => {
    let out = '';
    let err = '';
    const code = await main(['why', '--resources', file, '--live', '--kubeconfig', kubeconfig, ...extra], {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err };
  };

  it("finds the netfence pod on each node and reads /readyz and /flows through the proxy, with the kubeconfig's credentials", async () => {
    b.ready = { ok: false, reason: 'not ready: first sync not programmed yet' };
    const r = await why('--src', 'shop/api', '--dst', 'shop/db:5432');
    expect(r.code).toBe(0);
    expect(r.out.replace(/\s+/g, ' ')).toContain('node-b is not in sync (/readyz 503: not ready: first sync not programmed yet)');
    expect(api.paths).toEqual(
      expect.arrayContaining([
        '/api/v1/namespaces/kube-system/pods/netfence-node-a:9476/proxy/readyz',
        '/api/v1/namespaces/kube-system/pods/netfence-node-b:9476/proxy/flows?pod=shop%2Fdb',
      ]),
    );
  });

  it('a daemon listening on loopback only: the proxy cannot reach it, exit 2 naming the node and what it needs', async () => {
    bOnLoopbackOnly = true;
    const r = await why('--src', 'shop/web', '--dst', 'shop/db:5432');
    expect(r.code).toBe(2);
    expect(r.out).toContain('DROPPED at node-b');
    expect(r.err).toContain('cannot reach the daemon on node-b: pod proxy to kube-system/netfence-node-b:9476');
    expect(r.err).toContain("the daemon must listen on the node's address: listenAddress");
  });

  const drops = async (...args: string[]) => {
    let out = '';
    let err = '';
    const code = await main(['drops', '--kubeconfig', kubeconfig, ...args], { out: (t) => (out += t), err: (t) => (err += t) });
    return { code, out, err };
  };

  it("drops --pod: only the daemon on the pod's node is asked", async () => {
    b.flows.add(flow({ src: { ip: '10.244.1.10', pod: 'shop/web' } }));
    const r = await drops('--pod', 'shop/db');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\[node-b\] \d\d:\d\d:\d\d tcp\/5432 shop\/web \(10\.244\.1\.10\) -> shop\/db \(10\.244\.2\.20\), ingress/);
    expect(api.paths.filter((p) => p.includes('/proxy/'))).toEqual([
      '/api/v1/namespaces/kube-system/pods/netfence-node-b:9476/proxy/flows?pod=shop%2Fdb',
    ]);
  });

  it("drops --namespace: the daemons on every node running the namespace's pods, merged in time order", async () => {
    b.flows.add(flow({ time: 2000, src: { ip: '10.244.1.10', pod: 'shop/web' } }));
    a.flows.add(flow({ time: 1000, direction: 'egress', pod: 'shop/api', dst: { ip: '8.8.8.8', where: 'outside the cluster' } }));
    const r = await drops('--namespace', 'shop');
    expect(r.code).toBe(0);
    expect(r.out.split('\n').filter((l) => l.startsWith('['))).toEqual([
      expect.stringMatching(/^\[node-a\] 00:00:01 .* -> 8\.8\.8\.8 \(outside the cluster\),/),
      expect.stringMatching(/^\[node-b\] 00:00:02 .* -> shop\/db \(10\.244\.2\.20\), ingress/),
    ]);
  });

  it('drops: a node whose daemon the proxy cannot reach is exit 2 naming it, the others still printed', async () => {
    bOnLoopbackOnly = true;
    a.flows.add(flow({ direction: 'egress', pod: 'shop/api', dst: { ip: '8.8.8.8', where: 'outside the cluster' } }));
    const r = await drops('--namespace', 'shop');
    expect(r.code).toBe(2);
    expect(r.out).toContain('[node-a]');
    expect(r.err).toContain('cannot read the flow log of node-b');
  });
});
