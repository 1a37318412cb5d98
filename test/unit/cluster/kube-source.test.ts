// KubeSource against the fake API server (loopback HTTP, no root): the real client-node informers
// speaking the real list/watch protocol.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../../../src/cluster/kube-source.js';
import { backoffDelay, LIST_PAGE_SIZE } from '../../../src/cluster/kube-source-options.js';
import type { ClusterChange, Logger } from '../../../src/cluster/source.js';
import { compile } from '../../../src/compile/index.js';
import { defaultNodeSettings, type ClusterSnapshot } from '../../../src/model/index.js';
import { FakeApiServer, writeKubeconfig, type KubeObject } from '../../fakes/fake-apiserver.js';

// --- builders ---------------------------------------------------------------------------------

const ns = (name: string, labels: Record<string, string> = {}): KubeObject => ({ kind: 'Namespace', metadata: { name, labels } });
const node = (name: string, podCIDR: string): KubeObject => ({ kind: 'Node', metadata: { name }, spec: { podCIDR, podCIDRs: [podCIDR] } });
const pod = (namespace: string, name: string, ip: string, labels: Record<string, string> = {}): KubeObject => ({
  kind: 'Pod',
  metadata: { name, namespace, labels },
  spec: { nodeName: 'n1', containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }] },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});
const policy = (namespace: string, name: string, spec: Record<string, unknown> = { podSelector: {} }): KubeObject => ({
  kind: 'NetworkPolicy',
  metadata: { name, namespace },
  spec,
});

// --- harness ----------------------------------------------------------------------------------

interface Logged {
  readonly level: string;
  readonly message: string;
  readonly meta?: Record<string, unknown>;
}

function testLogger(): Logger & { readonly lines: Logged[] } {
  const lines: Logged[] = [];
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) =>
    void lines.push({ level, message, ...(meta ? { meta } : {}) });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const keys = (s: ClusterSnapshot) => ({
  namespaces: s.namespaces.map((n) => n.name),
  nodes: s.nodes.map((n) => n.name),
  pods: s.pods.map((p) => `${p.namespace}/${p.name}`),
  policies: s.policies.map((p) => `${p.namespace}/${p.name}`),
});

let server: FakeApiServer;
let dir: string;
let source: KubeSource | undefined;
let logger: ReturnType<typeof testLogger>;
let changes: ClusterChange[];

function startSource(): KubeSource {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(writeKubeconfig(server, dir));
  logger = testLogger();
  source = new KubeSource({ kubeConfig, logger, backoff: { initialMs: 20, maxMs: 200 } });
  changes = [];
  source.onChange((c) => changes.push(c));
  return source;
}

/** All four informers are watching (so an event written now reaches them through the watch). */
const allWatching = () => (['namespaces', 'pods', 'nodes', 'networkpolicies'] as const).every((r) => server.watchCount(r) > 0);

beforeEach(async () => {
  server = new FakeApiServer();
  await server.start();
  dir = mkdtempSync(join(tmpdir(), 'nft-kube-'));
  server.create(ns('prod', { team: 'a' }));
  server.create(node('n1', '10.244.1.0/24'));
  server.create(pod('prod', 'web', '10.244.1.5', { app: 'web' }));
  server.create(policy('prod', 'deny'));
});

afterEach(async () => {
  await source?.stop();
  source = undefined;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

// --- tests ------------------------------------------------------------------------------------

describe('KubeSource', () => {
  it('syncs every kind from the initial lists', async () => {
    const s = startSource();
    await s.synced;
    expect(keys(s.snapshot())).toEqual({ namespaces: ['prod'], nodes: ['n1'], pods: ['prod/web'], policies: ['prod/deny'] });
    expect(s.snapshot().namespaces[0]?.labels).toEqual({ team: 'a', 'kubernetes.io/metadata.name': 'prod' });
    expect(s.snapshot().pods[0]).toMatchObject({
      ips: ['10.244.1.5'],
      phase: 'Running',
      ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
    });
    expect(s.snapshot().nodes[0]).toEqual({ name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: [] });
    // The same snapshot object until something changes.
    expect(s.snapshot()).toBe(s.snapshot());
    const lists = server.requests
      .filter((r) => !r.watch)
      .map((r) => r.path)
      .sort();
    // Plus ClusterNetworkPolicy discovery (404 here: the fake serves no CRD unless asked).
    expect(lists).toEqual([
      '/api/v1/namespaces',
      '/api/v1/nodes',
      '/api/v1/pods',
      '/apis/networking.k8s.io/v1/networkpolicies',
      '/apis/policy.networking.k8s.io/v1alpha2',
    ]);
  });

  it('does not resolve synced until every kind has been listed', async () => {
    const release = server.holdLists('nodes');
    const s = startSource();
    let synced = false;
    void s.synced.then(() => (synced = true));
    await waitFor(
      'three kinds watching',
      () => server.watchCount('pods') > 0 && server.watchCount('namespaces') > 0 && server.watchCount('networkpolicies') > 0,
    );
    expect(server.requests.some((r) => r.path === '/api/v1/nodes' && !r.watch)).toBe(true);
    expect(synced).toBe(false);
    release();
    await s.synced;
    expect(keys(s.snapshot()).nodes).toEqual(['n1']);
  });

  interface KindCase {
    readonly kind: ClusterChange['kind'];
    readonly key: string;
    readonly created: KubeObject;
    readonly updated: KubeObject;
    readonly read: (s: ClusterSnapshot) => unknown;
    readonly expectUpdated: unknown;
  }
  it.each<KindCase>([
    {
      kind: 'Namespace',
      key: 'dev',
      created: ns('dev'),
      updated: ns('dev', { team: 'b' }),
      read: (s) => s.namespaces.find((n) => n.name === 'dev')?.labels,
      expectUpdated: { team: 'b', 'kubernetes.io/metadata.name': 'dev' },
    },
    {
      kind: 'Pod',
      key: 'prod/db',
      created: pod('prod', 'db', '10.244.1.9'),
      updated: pod('prod', 'db', '10.244.1.10', { app: 'db' }),
      read: (s) => s.pods.find((p) => p.name === 'db')?.ips,
      expectUpdated: ['10.244.1.10'],
    },
    {
      kind: 'Node',
      key: 'n2',
      created: node('n2', '10.244.2.0/24'),
      updated: node('n2', '10.244.3.0/24'),
      read: (s) => s.nodes.find((n) => n.name === 'n2')?.podCidrs,
      expectUpdated: ['10.244.3.0/24'],
    },
    {
      kind: 'NetworkPolicy',
      key: 'prod/allow',
      created: policy('prod', 'allow'),
      updated: policy('prod', 'allow', { podSelector: {}, policyTypes: ['Egress'] }),
      read: (s) => {
        const p = s.policies.find((x) => x.name === 'allow');
        return p && (p.policyTypes ?? 'defaulted');
      },
      expectUpdated: ['Egress'],
    },
  ])('reflects add, update and delete of a $kind', async ({ kind, key, created, updated, read, expectUpdated }) => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    changes.length = 0;
    server.create(created);
    await waitFor('add', () => read(s.snapshot()) !== undefined);
    server.update(updated);
    await waitFor('update', () => JSON.stringify(read(s.snapshot())) === JSON.stringify(expectUpdated));
    server.delete(created);
    await waitFor('delete', () => read(s.snapshot()) === undefined);
    expect(changes).toEqual([
      { kind, key, type: 'add' },
      { kind, key, type: 'update' },
      { kind, key, type: 'delete' },
    ]);
  });

  it('ignores updates that change nothing netfence reads', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    const before = s.snapshot();
    server.update({
      ...pod('prod', 'web', '10.244.1.5', { app: 'web' }),
      metadata: { name: 'web', namespace: 'prod', labels: { app: 'web' }, annotations: { touched: 'yes' } },
    });
    server.create(ns('marker'));
    await waitFor('marker namespace', () => s.snapshot().namespaces.some((n) => n.name === 'marker'));
    expect(changes.filter((c) => c.kind === 'Pod')).toEqual([{ kind: 'Pod', key: 'prod/web', type: 'add' }]);
    expect(s.snapshot().pods).toBe(s.snapshot().pods);
    expect(s.snapshot().pods).toEqual(before.pods);
  });

  it('relists after 410 Gone and drops what was deleted while disconnected', async () => {
    server.create(pod('prod', 'old', '10.244.1.6'));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    const requestsBefore = server.requests.length;
    // In one tick: the client cannot reconnect between these.
    server.dropWatches();
    server.delete(pod('prod', 'old', '10.244.1.6'));
    server.create(pod('prod', 'new', '10.244.1.7'));
    server.compact();
    await waitFor('old pod gone, new pod present', () => {
      const pods = keys(s.snapshot()).pods;
      return !pods.includes('prod/old') && pods.includes('prod/new');
    });
    const after = server.requests.slice(requestsBefore);
    expect(server.expiredWatches).toContain('pods'); // the resumed watch got 410 Gone…
    expect(after.some((r) => r.path === '/api/v1/pods' && !r.watch)).toBe(true); // …and the informer relisted
    expect(keys(s.snapshot()).pods).toEqual(['prod/new', 'prod/web']);
    expect(changes).toContainEqual({ kind: 'Pod', key: 'prod/old', type: 'delete' });
  });

  it('keeps its state while the API server is down and catches up when it returns', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    await server.stop();
    server.delete(pod('prod', 'web', '10.244.1.5'));
    server.create(pod('prod', 'api', '10.244.1.8'));
    // Retries are failing against the closed port, not just reconnecting.
    await waitFor('a refused retry', () =>
      logger.lines.some((l) => l.level === 'warn' && String(l.meta?.['error']).includes('ECONNREFUSED')),
    );
    // The last state is kept: the kernel goes on enforcing it.
    expect(keys(s.snapshot()).pods).toEqual(['prod/web']);
    await server.start();
    await waitFor('caught up', () => JSON.stringify(keys(s.snapshot()).pods) === JSON.stringify(['prod/api']));
    expect(keys(s.snapshot())).toEqual({ namespaces: ['prod'], nodes: ['n1'], pods: ['prod/api'], policies: ['prod/deny'] });
  });

  it('shows only the new pod when a deleted pod’s IP is reused', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    server.delete(pod('prod', 'web', '10.244.1.5'));
    server.create(pod('prod', 'web2', '10.244.1.5'));
    await waitFor('web2', () => s.snapshot().pods.some((p) => p.name === 'web2'));
    expect(
      s
        .snapshot()
        .pods.filter((p) => p.ips.includes('10.244.1.5'))
        .map((p) => p.name),
    ).toEqual(['web2']);
  });

  it('keeps a policy with shape errors (listed or watched) with its problems', async () => {
    server.create(policy('prod', 'bad-listed', { podSelector: {}, ingress: [{ ports: [{ protocol: 'ICMP' }] }] }));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    server.create(policy('prod', 'bad-watched', { podSelector: {}, ingress: [{ ports: [{ port: true }] }] }));
    await waitFor('bad-watched', () => s.snapshot().policies.some((p) => p.name === 'bad-watched'));
    const problems = s.snapshot().policies.flatMap((p) => (p.problems ?? []).map((x) => `${x.object} ${x.field}`));
    expect(problems).toEqual([
      'NetworkPolicy prod/bad-listed spec.ingress[0].ports[0].protocol',
      'NetworkPolicy prod/bad-watched spec.ingress[0].ports[0].port',
    ]);
    expect(s.problems()).toEqual([]);
  });

  it('reads ingress peers of listed and watched policies alike (client-node lists them as `_from`)', async () => {
    const spec = { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'x' } } }], ports: [{ port: 80 }] }] };
    server.create(policy('prod', 'listed', spec));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    server.create(policy('prod', 'watched', spec));
    await waitFor('watched', () => s.snapshot().policies.some((p) => p.name === 'watched'));
    for (const name of ['listed', 'watched']) {
      const got = s.snapshot().policies.find((p) => p.name === name);
      expect(got?.ingress?.[0]?.peers).toEqual([{ podSelector: { matchLabels: { app: 'x' }, matchExpressions: [] } }]);
    }
  });

  it('reports a watched update it cannot read and keeps the last version that could (the pod still exists)', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    const before = s.snapshot().pods;
    changes.length = 0;
    server.update({ ...pod('prod', 'web', '10.244.1.5', { app: 'web' }), status: { phase: 'Exploded', podIP: '10.244.1.5' } });
    await waitFor('reported', () => s.problems().length > 0);
    expect(s.problems().map((p) => `${p.object} ${p.field}`)).toEqual(['Pod prod/web status.phase']);
    expect(s.snapshot().pods).toEqual(before);
    expect(changes).toEqual([]);
    server.update(pod('prod', 'web', '10.244.1.5', { app: 'web', v: '2' }));
    await waitFor('the next good version', () => s.snapshot().pods[0]?.labels['v'] === '2');
    expect(s.problems()).toEqual([]);
  });

  it('leaves out a new object it cannot read (nothing to keep), and reports it', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    server.create({ ...pod('prod', 'odd', '10.244.1.9'), status: { phase: 'Exploded', podIP: '10.244.1.9' } });
    await waitFor('reported', () => s.problems().length > 0);
    expect(keys(s.snapshot()).pods).toEqual(['prod/web']);
  });

  it('a relist after 410 clears the problems of an unreadable object deleted meanwhile', async () => {
    const odd = { ...pod('prod', 'odd', '10.244.1.9'), status: { phase: 'Exploded', podIP: '10.244.1.9' } };
    server.create(odd);
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    expect(s.problems().length).toBeGreaterThan(0);
    server.dropWatches();
    server.delete(odd);
    server.compact();
    await waitFor('its problems cleared', () => s.problems().length === 0);
    expect(server.expiredWatches).toContain('pods');
    expect(keys(s.snapshot()).pods).toEqual(['prod/web']);
  });

  it('a relist that fails halfway removes nothing; the retry catches up', async () => {
    server.create(pod('prod', 'db', '10.244.1.6'));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    changes.length = 0;
    const requestsBefore = server.requests.length;
    // Force a relist (410 after a dropped watch), and cut the next two lists of pods off halfway.
    server.truncateLists('pods', 2);
    server.dropWatches();
    server.create(pod('prod', 'new', '10.244.1.7'));
    server.compact();
    await waitFor('caught up', () => keys(s.snapshot()).pods.includes('prod/new'), 8_000);
    const podLists = server.requests.slice(requestsBefore).filter((r) => r.path === '/api/v1/pods' && !r.watch);
    expect(podLists.length).toBeGreaterThanOrEqual(3); // two cut off, then one whole
    expect(logger.lines.filter((l) => l.message.includes('retrying') && l.meta?.['kind'] === 'Pod').length).toBeGreaterThanOrEqual(2);
    expect(changes.filter((c) => c.type === 'delete')).toEqual([]);
    expect(keys(s.snapshot()).pods).toEqual(['prod/db', 'prod/new', 'prod/web']);
  });

  it('a namespace deleted before its pods and policies keeps their rules: they stay in the snapshot', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    changes.length = 0;
    const settings = defaultNodeSettings('n1', ['10.244.1.0/24']);
    const chains = () => compile(s.snapshot(), settings).desired.v4.chains.map((c) => `${c.name} ${c.rules.length}`);
    const before = chains();
    // The pod and policy informers lag: only the namespace's delete has arrived.
    server.delete(ns('prod'));
    await waitFor('namespace gone', () => s.snapshot().namespaces.length === 0);
    expect(keys(s.snapshot())).toEqual({ namespaces: [], nodes: ['n1'], pods: ['prod/web'], policies: ['prod/deny'] });
    expect(changes).toEqual([{ kind: 'Namespace', key: 'prod', type: 'delete' }]);
    // The pod stays isolated by its policy: the same chains with the same rules compile.
    expect(chains()).toEqual(before);
    expect(before.some((c) => c.startsWith('nf-pi-'))).toBe(true);
  });

  it('retries a failing list with backoff, then syncs', async () => {
    server.failRequests('networkpolicies', 500, 2);
    const s = startSource();
    await s.synced;
    const retries = logger.lines.filter((l) => l.message.includes('retrying')).map((l) => l.meta?.['kind']);
    expect(retries).toEqual(['NetworkPolicy', 'NetworkPolicy']);
    expect(keys(s.snapshot()).policies).toEqual(['prod/deny']);
  });

  it('asks the server to end watches, and resumes them from the last resourceVersion', async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(writeKubeconfig(server, dir));
    source = new KubeSource({ kubeConfig, logger: testLogger(), watchTimeoutSeconds: 1 });
    await source.synced;
    // The informers' watches (not the WatchList attempt this fake, without the gate, refused).
    const podWatches = () =>
      server.requests.filter((r) => r.watch && r.path === '/api/v1/pods' && r.query['sendInitialEvents'] === undefined);
    await waitFor('a second pod watch', () => podWatches().length >= 2);
    expect(podWatches().map((r) => r.query['timeoutSeconds'])).toEqual(podWatches().map(() => '1'));
    // The server ended the first watch cleanly, so the informer resumed without relisting.
    expect(server.requests.filter((r) => !r.watch && r.path === '/api/v1/pods')).toHaveLength(1);
    expect(podWatches()[1]?.query['resourceVersion']).toBe(podWatches()[0]?.query['resourceVersion']);
  });

  it('asks for bookmarks, so a dropped watch resumes past a compaction without relisting', async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(writeKubeconfig(server, dir));
    source = new KubeSource({ kubeConfig, logger: testLogger(), backoff: { initialMs: 10, maxMs: 20 } });
    await source.synced;
    await waitFor('watches', allWatching);
    const podRequests = () => server.requests.filter((r) => r.path === '/api/v1/pods');
    expect(
      podRequests()
        .filter((r) => r.watch)
        .every((r) => r.query['allowWatchBookmarks'] === 'true'),
    ).toBe(true);
    // Writes elsewhere move the server's resourceVersion past what the pod watch last saw; only a
    // bookmark tells the pod informer about it.
    for (let i = 0; i < 3; i++) server.create(ns(`other-${i}`));
    server.bookmark();
    await new Promise((r) => setTimeout(r, 200));
    server.compact();
    server.dropWatches();
    await waitFor('the pod watch back', () => podRequests().filter((r) => r.watch).length >= 2 && server.watchCount('pods') > 0);
    expect(podRequests().filter((r) => !r.watch)).toHaveLength(1);
    expect(server.expiredWatches.filter((r) => r === 'pods')).toEqual([]);
  });

  it('stops watching on stop()', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    await s.stop();
    await waitFor('no watches', () => server.watchCount() === 0);
    server.create(ns('late'));
    expect(keys(s.snapshot()).namespaces).toEqual(['prod']);
  });
});

describe('backoffDelay', () => {
  it.each([
    { attempt: 0, random: 0.5, expected: 375 },
    { attempt: 3, random: 0.5, expected: 3000 },
    { attempt: 10, random: 0.5, expected: 22_500 },
    { attempt: 10, random: 0, expected: 15_000 },
    { attempt: 10, random: 0.999, expected: 29_985 },
  ])('attempt $attempt, random $random → $expected ms', ({ attempt, random, expected }) => {
    expect(backoffDelay(attempt, 500, 30_000, () => random)).toBe(expected);
  });
});

describe('KubeSource paged lists', () => {
  it(`lists in pages of ${LIST_PAGE_SIZE} and keeps every object of every page`, async () => {
    const paged = new FakeApiServer();
    await paged.start();
    const dir = mkdtempSync(join(tmpdir(), 'nft-kube-paged-'));
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(paged.writeKubeconfig(dir));
    const count = 2 * LIST_PAGE_SIZE + 7;
    paged.create({ kind: 'Namespace', metadata: { name: 'prod' } });
    for (let i = 0; i < count; i++) {
      paged.create({
        kind: 'Pod',
        metadata: { name: `p${i}`, namespace: 'prod' },
        spec: { nodeName: 'n1' },
        status: { phase: 'Running', podIP: `10.1.${i >> 8}.${i & 255}` },
      });
    }
    const source = new KubeSource({ kubeConfig, logger: testLogger() });
    try {
      await source.synced;
      expect(source.snapshot().pods).toHaveLength(count);
      const pages = paged.requests.filter((r) => !r.watch && r.path === '/api/v1/pods');
      expect(pages.map((r) => [r.query['limit'], r.query['continue']])).toEqual([
        [String(LIST_PAGE_SIZE), undefined],
        [String(LIST_PAGE_SIZE), expect.stringMatching(/^500:/)],
        [String(LIST_PAGE_SIZE), expect.stringMatching(/^1000:/)],
      ]);
      // The watch resumes from the list's resourceVersion: a pod created now arrives as an event.
      paged.create({
        kind: 'Pod',
        metadata: { name: 'late', namespace: 'prod' },
        spec: { nodeName: 'n1' },
        status: { phase: 'Running', podIP: '10.9.9.9' },
      });
      await waitFor('the late pod', () => source.snapshot().pods.length === count + 1);
    } finally {
      await source.stop();
      await paged.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
