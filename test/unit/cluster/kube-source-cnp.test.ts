// KubeSource and the ClusterNetworkPolicy CRD, against the fake API server: found by discovery and
// watched; absent (404) without errors or retries; installed later; removed again. A 404 from a restarting
// API server is not believed: the policies stay until discovery has said three times, spaced, that the API is gone.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../../../src/cluster/kube-source.js';
import { GONE_CONFIRMATIONS } from '../../../src/cluster/kube-source-options.js';
import type { Logger } from '../../../src/cluster/source.js';
import { FakeApiServer, writeKubeconfig, type KubeObject } from '../../fakes/fake-apiserver.js';

const cnp = (name: string, priority = 10, action = 'Deny'): KubeObject => ({
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: {
    tier: 'Admin',
    priority,
    subject: { namespaces: { matchLabels: { team: 'a' } } },
    ingress: [{ name: 'no-ravenclaw', action, from: [{ namespaces: { matchLabels: { house: 'ravenclaw' } } }] }],
  },
});

function testLogger(): Logger & { readonly lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let server: FakeApiServer;
let dir: string;
let source: KubeSource | undefined;
let logger: ReturnType<typeof testLogger>;

async function setup(crd: boolean): Promise<void> {
  server = new FakeApiServer({ clusterNetworkPolicyCrd: crd });
  await server.start();
  dir = mkdtempSync(join(tmpdir(), 'nft-cnp-'));
  server.create({ kind: 'Namespace', metadata: { name: 'prod', labels: { team: 'a' } } });
  server.create({
    kind: 'Node',
    metadata: { name: 'n1', labels: { zone: 'z1' } },
    spec: { podCIDR: '10.244.1.0/24' },
    status: { addresses: [{ type: 'InternalIP', address: '192.168.0.1' }] },
  });
}

/** What the source told `onUnconfirmed`, in order (undefined: settled). */
let unconfirmed: (string | undefined)[];

function startSource(crdRecheckMs = 60_000, goneConfirmIntervalMs = 50): KubeSource {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(writeKubeconfig(server, dir));
  logger = testLogger();
  unconfirmed = [];
  source = new KubeSource({
    kubeConfig,
    logger,
    backoff: { initialMs: 20, maxMs: 200 },
    crdRecheckMs,
    goneConfirmIntervalMs,
    onUnconfirmed: (reason) => void unconfirmed.push(reason),
  });
  return source;
}

const discoveries = () => server.requests.filter((r) => r.path === '/apis/policy.networking.k8s.io/v1alpha2').length;
const cnpNames = (s: KubeSource) => s.snapshot().clusterPolicies?.map((c) => c.name);

afterEach(async () => {
  await source?.stop();
  source = undefined;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('KubeSource: ClusterNetworkPolicy', () => {
  it('watches ClusterNetworkPolicies when discovery lists them, and reads node labels', async () => {
    await setup(true);
    server.create(cnp('guard'));
    const s = startSource();
    await s.synced;
    expect(s.snapshot().clusterPolicies?.map((c) => [c.name, c.tier, c.priority])).toEqual([['guard', 'Admin', 10]]);
    expect(s.snapshot().clusterPolicies?.[0]?.ingress[0]).toEqual({
      name: 'no-ravenclaw',
      action: 'Deny',
      peers: [{ kind: 'namespaces', namespaceSelector: { matchLabels: { house: 'ravenclaw' }, matchExpressions: [] } }],
    });
    expect(s.snapshot().nodes[0]).toMatchObject({ labels: { zone: 'z1' }, addresses: ['192.168.0.1'] });
    // Live changes arrive through the watch.
    await waitFor('cnp watch', () => server.watchCount('clusternetworkpolicies') > 0);
    server.update(cnp('guard', 40, 'Pass'));
    await waitFor('priority change', () => s.snapshot().clusterPolicies?.[0]?.priority === 40);
    expect(s.snapshot().clusterPolicies?.[0]?.ingress[0]?.action).toBe('Pass');
    server.delete({ kind: 'ClusterNetworkPolicy', metadata: { name: 'guard' } });
    await waitFor('deletion', () => s.snapshot().clusterPolicies === undefined);
  });

  it('syncs without the CRD: one discovery 404, logged once, no errors and no retry loop', async () => {
    await setup(false);
    const s = startSource();
    await s.synced;
    expect(s.snapshot().clusterPolicies).toBeUndefined();
    expect(s.snapshot().nodes.map((n) => n.name)).toEqual(['n1']);
    await new Promise((r) => setTimeout(r, 300));
    const cnpRequests = server.requests.filter((r) => r.path.startsWith('/apis/policy.networking.k8s.io'));
    expect(cnpRequests.map((r) => r.path)).toEqual(['/apis/policy.networking.k8s.io/v1alpha2']);
    expect(logger.lines.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    expect(logger.lines.filter((l) => l.message.includes('not installed'))).toHaveLength(1);
  });

  it('picks the CRD up once it is installed, and forgets its policies when it is removed', async () => {
    await setup(false);
    const s = startSource(50);
    await s.synced;
    server.installCrd();
    server.create(cnp('late'));
    await waitFor('late cnp', () => s.snapshot().clusterPolicies?.[0]?.name === 'late');
    server.uninstallCrd();
    await waitFor('cnp gone', () => s.snapshot().clusterPolicies === undefined);
    // The dropped informer's own stop is not retried; discovery finds the CRD again when it comes back.
    server.installCrd();
    server.create(cnp('again'));
    await waitFor('cnp back', () => s.snapshot().clusterPolicies?.[0]?.name === 'again');
    expect(server.watchCount('clusternetworkpolicies')).toBeLessThanOrEqual(1);
    // Back to quiet discovery: still no error-level log.
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('one 404 (a restarting API server) keeps every policy and reports unconfirmed until the watch is back', async () => {
    await setup(true);
    server.create(cnp('guard'));
    const s = startSource(60_000, 150);
    await s.synced;
    await waitFor('cnp watch', () => server.watchCount('clusternetworkpolicies') > 0);
    const deletions: string[] = [];
    s.onChange((c) => c.type === 'delete' && deletions.push(`${c.kind} ${c.key}`));
    const before = discoveries();
    // The server restarts: every watch is cut, the next CNP watch gets 404, and discovery blinks too.
    server.failRequests('clusternetworkpolicies', 404, 1);
    server.scriptDiscovery(404, 'absent');
    server.dropWatches();
    await waitFor('reported unconfirmed', () => unconfirmed.some((r) => r?.includes('answered 404')));
    expect(cnpNames(s)).toEqual(['guard']);
    await waitFor('settled', () => unconfirmed.length > 0 && unconfirmed.at(-1) === undefined);
    await waitFor('cnp watched again', () => server.watchCount('clusternetworkpolicies') > 0);
    // Two absent answers, then one that lists it: never three in a row, so nothing was forgotten.
    expect(discoveries() - before).toBe(3);
    expect(cnpNames(s)).toEqual(['guard']);
    expect(deletions).toEqual([]);
    expect(logger.lines.filter((l) => l.message.includes('no longer enforced'))).toEqual([]);
    // Still followed afterwards.
    server.update(cnp('guard', 40));
    await waitFor('update after the blink', () => s.snapshot().clusterPolicies?.[0]?.priority === 40);
  });

  it(`a CRD really removed is dropped only after ${GONE_CONFIRMATIONS} absent answers from discovery in a row, an error between them counting for nothing`, async () => {
    await setup(true);
    server.create(cnp('guard'));
    const s = startSource(60_000, 100);
    await s.synced;
    await waitFor('cnp watch', () => server.watchCount('clusternetworkpolicies') > 0);
    const before = discoveries();
    server.scriptDiscovery(404, 503);
    server.uninstallCrd();
    await waitFor('reported unconfirmed', () => unconfirmed.some((r) => r !== undefined));
    await waitFor('cnp gone', () => s.snapshot().clusterPolicies === undefined, 6_000);
    // 404, 503 (says nothing), then two more absent answers; then back to the slow recheck.
    expect(discoveries() - before).toBe(GONE_CONFIRMATIONS + 1);
    expect(unconfirmed.at(-1)).toBeUndefined();
    expect(logger.lines.filter((l) => l.message.includes('no longer enforced'))).toHaveLength(1);
  });
});
