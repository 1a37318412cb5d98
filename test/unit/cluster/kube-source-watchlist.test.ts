// KubeSource's cheaper ways to read the cluster, against the fake API server: the WatchList stream
// (sendInitialEvents) and its fallback to paged lists, and the pod field selector (peerPodsOnly) with its
// fallbacks for servers that do not know a field label.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../../../src/cluster/kube-source.js';
import type { KubeSourceOptions } from '../../../src/cluster/kube-source-options.js';
import type { ClusterChange, Logger } from '../../../src/cluster/source.js';
import { FakeApiServer, writeKubeconfig, type FakeApiServerOptions, type KubeObject } from '../../fakes/fake-apiserver.js';

const pod = (name: string, phase: string, extra: { hostNetwork?: boolean; ip?: string } = {}): KubeObject => ({
  kind: 'Pod',
  metadata: { name, namespace: 'prod', labels: { app: name } },
  spec: { nodeName: 'n1', ...(extra.hostNetwork ? { hostNetwork: true } : {}), containers: [{ name: 'c' }] },
  status: { phase, podIP: extra.ip ?? '10.244.1.5', podIPs: [{ ip: extra.ip ?? '10.244.1.5' }] },
});

interface Logged {
  readonly level: string;
  readonly message: string;
}

let server: FakeApiServer;
let dir: string;
let source: KubeSource | undefined;
let logged: Logged[];
let changes: ClusterChange[];

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function startServer(opts: FakeApiServerOptions): Promise<void> {
  server = new FakeApiServer(opts);
  await server.start();
  server.create({ kind: 'Namespace', metadata: { name: 'prod' } });
  server.create({ kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } });
  server.create({ kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: 'prod' }, spec: { podSelector: {} } });
}

function startSource(opts: Partial<KubeSourceOptions> = {}): KubeSource {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(writeKubeconfig(server, dir));
  logged = [];
  const at = (level: string) => (message: string) => void logged.push({ level, message });
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
  source = new KubeSource({ kubeConfig, logger, backoff: { initialMs: 10, maxMs: 50 }, ...opts });
  changes = [];
  source.onChange((c) => changes.push(c));
  return source;
}

const pods = () => source!.snapshot().pods.map((p) => `${p.name} ${p.phase}`);
const podRequests = () => server.requests.filter((r) => r.path === '/api/v1/pods');
const streams = () => server.requests.filter((r) => r.query['sendInitialEvents'] === 'true');
const lists = () => server.requests.filter((r) => r.resource !== undefined && !r.watch);
const allWatching = () => (['namespaces', 'pods', 'nodes', 'networkpolicies'] as const).every((r) => server.watchCount(r) > 0);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-kube-watchlist-'));
});
afterEach(async () => {
  await source?.stop();
  source = undefined;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('WatchList', () => {
  it('reads every kind as one stream, lists nothing, and watches on from the end bookmark', async () => {
    await startServer({ watchList: true });
    server.create(pod('web', 'Running'));
    const s = startSource();
    await s.synced;
    expect(pods()).toEqual(['web Running']);
    expect(s.snapshot().policies.map((p) => p.name)).toEqual(['deny']);
    expect(lists()).toEqual([]);
    expect(
      streams()
        .map((r) => [r.path, r.query['resourceVersionMatch'], r.query['allowWatchBookmarks']])
        .sort(),
    ).toEqual([
      ['/api/v1/namespaces', 'NotOlderThan', 'true'],
      ['/api/v1/nodes', 'NotOlderThan', 'true'],
      ['/api/v1/pods', 'NotOlderThan', 'true'],
      ['/apis/networking.k8s.io/v1/networkpolicies', 'NotOlderThan', 'true'],
    ]);
    // The informer's watch starts at the bookmark's resourceVersion (the state's), and sees what follows.
    const rvAtStart = server.resourceVersion;
    await waitFor('watches', allWatching);
    const podWatch = podRequests().find((r) => r.watch && r.query['sendInitialEvents'] === undefined);
    expect(podWatch?.query['resourceVersion']).toBe(rvAtStart);
    server.create(pod('api', 'Running', { ip: '10.244.1.6' }));
    await waitFor('the new pod', () => pods().length === 2);
  });

  it("resolves 'synced' only after the initial-events-end bookmark, though the pods have streamed", async () => {
    await startServer({ watchList: true });
    server.create(pod('web', 'Running'));
    const release = server.holdInitialEventsEnd('pods');
    const s = startSource();
    let synced = false;
    void s.synced.then(() => (synced = true));
    await waitFor('the other kinds watching', () => server.watchCount('namespaces') > 0 && server.watchCount('nodes') > 0);
    await new Promise((r) => setTimeout(r, 100));
    expect(synced).toBe(false);
    expect(pods()).toEqual([]); // nothing of the unfinished stream is in the store
    release();
    await s.synced;
    expect(pods()).toEqual(['web Running']);
  });

  it('falls back to paged lists when the server refuses it (422), and says so once', async () => {
    await startServer({ watchList: false });
    server.create(pod('web', 'Running'));
    const s = startSource();
    await s.synced;
    expect(pods()).toEqual(['web Running']);
    expect(logged.filter((l) => l.message.includes('does not serve WatchList'))).toHaveLength(1);
    expect(
      lists()
        .map((r) => r.path)
        .sort(),
    ).toEqual(['/api/v1/namespaces', '/api/v1/nodes', '/api/v1/pods', '/apis/networking.k8s.io/v1/networkpolicies']);
    // Remembered: a relist after 410 lists at once, without asking for a stream again.
    const streamsBefore = streams().length;
    await waitFor('watches', allWatching);
    server.create({ kind: 'Namespace', metadata: { name: 'other' } }); // the pod watch's resourceVersion falls behind
    server.compact();
    server.dropWatches();
    await waitFor('a second pod list', () => podRequests().filter((r) => !r.watch).length === 2);
    expect(streams().length).toBe(streamsBefore);
  });

  it('falls back to paged lists when the server ignores it (a plain watch that ends without the bookmark)', async () => {
    await startServer({ watchList: 'ignored' });
    server.create(pod('web', 'Running'));
    const s = startSource({ watchTimeoutSeconds: 1 });
    await s.synced;
    expect(pods()).toEqual(['web Running']);
    expect(streams().every((r) => r.query['timeoutSeconds'] === '1')).toBe(true);
    expect(logged.filter((l) => l.message.includes('does not serve WatchList'))).toHaveLength(1);
    expect(podRequests().filter((r) => !r.watch)).toHaveLength(1);
  });

  it('a dropped watch resumes from the last bookmark, with no second stream and no 410', async () => {
    await startServer({ watchList: true });
    server.create(pod('web', 'Running'));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    for (let i = 0; i < 3; i++) server.create({ kind: 'Namespace', metadata: { name: `other-${i}` } });
    server.bookmark();
    await new Promise((r) => setTimeout(r, 200));
    server.compact();
    server.dropWatches();
    await waitFor('the pod watch back', () => server.watchCount('pods') > 0 && podRequests().filter((r) => r.watch).length >= 3);
    expect(podRequests().filter((r) => r.query['sendInitialEvents'] === 'true')).toHaveLength(1);
    expect(server.expiredWatches).toEqual([]);
  });

  it('relists through a new stream after 410, dropping what was deleted meanwhile', async () => {
    await startServer({ watchList: true });
    server.create(pod('web', 'Running'));
    server.create(pod('gone', 'Running', { ip: '10.244.1.9' }));
    const s = startSource();
    await s.synced;
    await waitFor('watches', allWatching);
    await server.stop();
    server.delete(pod('gone', 'Running'));
    server.compact();
    await server.start();
    await waitFor('the deleted pod gone', () => pods().length === 1);
    expect(pods()).toEqual(['web Running']);
    expect(podRequests().filter((r) => r.query['sendInitialEvents'] === 'true').length).toBeGreaterThanOrEqual(2);
    expect(lists()).toEqual([]);
  });
});

describe('peerPodsOnly: the pod field selector', () => {
  const SELECTOR = 'status.phase!=Succeeded,status.phase!=Failed,spec.hostNetwork=false';

  it.each([{ watchList: true }, { watchList: false }])(
    'leaves completed and host-network pods on the server (WatchList $watchList)',
    async ({ watchList }) => {
      await startServer({ watchList });
      server.create(pod('web', 'Running'));
      server.create(pod('job-done', 'Succeeded', { ip: '10.244.1.7' }));
      server.create(pod('job-failed', 'Failed', { ip: '10.244.1.8' }));
      server.create(pod('kube-proxy', 'Running', { hostNetwork: true, ip: '192.168.0.1' }));
      startSource({ peerPodsOnly: true });
      await source!.synced;
      expect(pods()).toEqual(['web Running']);
      await waitFor('the pod watch', () => server.watchCount('pods') > 0);
      expect(podRequests().every((r) => r.query['fieldSelector'] === SELECTOR)).toBe(true);
    },
  );

  it('a pod that completes arrives as a deletion, and leaves the snapshot', async () => {
    await startServer({ watchList: true });
    server.create(pod('web', 'Running'));
    server.create(pod('job', 'Running', { ip: '10.244.1.7' }));
    startSource({ peerPodsOnly: true });
    await source!.synced;
    await waitFor('watches', allWatching);
    changes.length = 0;
    server.update(pod('job', 'Succeeded', { ip: '10.244.1.7' }));
    await waitFor('the completed pod gone', () => pods().length === 1);
    expect(pods()).toEqual(['web Running']);
    expect(changes.map((c) => [c.kind, c.type, c.key])).toEqual([['Pod', 'delete', 'prod/job']]);
  });

  it.each([
    {
      server: 'before 1.28 (no spec.hostNetwork)',
      labels: ['metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase'],
      kept: 'status.phase!=Succeeded,status.phase!=Failed',
      // The host-network pod is read again (and still left out by the compiler).
      read: ['kube-proxy Running', 'web Running'],
    },
    {
      server: 'without pod field selectors',
      labels: ['metadata.name'],
      kept: undefined,
      read: ['job-done Succeeded', 'kube-proxy Running', 'web Running'],
    },
  ])('asks with less when a server $server refuses a field label (400), and says so', async ({ labels, kept, read }) => {
    await startServer({ watchList: true, podFieldLabels: labels });
    server.create(pod('web', 'Running'));
    server.create(pod('job-done', 'Succeeded', { ip: '10.244.1.7' }));
    server.create(pod('kube-proxy', 'Running', { hostNetwork: true, ip: '192.168.0.1' }));
    startSource({ peerPodsOnly: true });
    await source!.synced;
    expect(pods().sort()).toEqual(read);
    expect(logged.filter((l) => l.message.includes('refused a field selector')).length).toBe(kept === undefined ? 2 : 1);
    await waitFor('the pod watch', () => server.watchCount('pods') > 0);
    const last = podRequests()[podRequests().length - 1]!;
    expect(last.query['fieldSelector']).toBe(kept);
  });
});
