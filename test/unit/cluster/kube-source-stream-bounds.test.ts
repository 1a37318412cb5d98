// KubeSource against an API server (or a proxy in front of it) whose WatchList stream is hostile: one line
// that never ends, ADDED events that never end, silence, garbage. Each must be refused, logged with where it
// came from, counted, and end in a synced source through paged lists, which the fake still serves honestly.
// The ordinary watch after sync gets the same line bound.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../../../src/cluster/kube-source.js';
import type { KubeSourceOptions, StreamRefusal } from '../../../src/cluster/kube-source-options.js';
import type { Logger } from '../../../src/cluster/source.js';
import { FakeApiServer, writeKubeconfig, type HostileStream, type KubeObject } from '../../fakes/fake-apiserver.js';

interface Logged {
  readonly level: string;
  readonly message: string;
  readonly meta: Record<string, unknown> | undefined;
}

let server: FakeApiServer;
let dir: string;
let source: KubeSource | undefined;
let logged: Logged[];
let refusals: StreamRefusal[];

const pod = (name: string, ip: string): KubeObject => ({
  kind: 'Pod',
  metadata: { name, namespace: 'prod', labels: { app: name } },
  spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});

async function waitFor(what: string, cond: () => boolean, timeoutMs = 8_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function startSource(opts: Partial<KubeSourceOptions> = {}): KubeSource {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(writeKubeconfig(server, dir));
  const at = (level: string) => (message: string, meta?: Record<string, unknown>) => void logged.push({ level, message, meta });
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
  source = new KubeSource({
    kubeConfig,
    logger,
    backoff: { initialMs: 10, maxMs: 50 },
    onRefused: (r) => void refusals.push(r),
    ...opts,
  });
  return source;
}

const pods = () =>
  source!
    .snapshot()
    .pods.map((p) => p.name)
    .sort();
const podLists = () => server.requests.filter((r) => r.path === '/api/v1/pods' && !r.watch);

beforeEach(async () => {
  logged = [];
  refusals = [];
  dir = mkdtempSync(join(tmpdir(), 'nft-kube-stream-bounds-'));
  server = new FakeApiServer({ watchList: true });
  await server.start();
  server.create({ kind: 'Namespace', metadata: { name: 'prod' } });
  server.create({ kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } });
  server.create(pod('web', '10.244.1.5'));
});

afterEach(async () => {
  await source?.stop();
  source = undefined;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a hostile WatchList stream ends in paged lists', () => {
  it.each<{ mode: HostileStream; reason: StreamRefusal['reason']; limits: NonNullable<KubeSourceOptions['limits']> }>([
    // The line bound is not configurable: this stream passes 4 MiB within a few hundred milliseconds.
    { mode: 'endless-line', reason: 'line-too-long', limits: {} },
    { mode: 'endless-events', reason: 'too-many-objects', limits: { maxObjects: 5_000 } },
    { mode: 'endless-events', reason: 'too-many-bytes', limits: { maxBytes: 2 * 1024 * 1024 } },
    { mode: 'silence', reason: 'deadline', limits: { streamTimeoutMs: 500 } },
    { mode: 'garbage', reason: 'not-an-event', limits: {} },
  ])('$mode: refused ($reason), logged with its server and path, counted, then listed', async ({ mode, reason, limits }) => {
    server.hostileWatchList(mode, 'pods');
    const s = startSource({ limits });
    await s.synced;
    expect(pods()).toEqual(['web']);
    expect(podLists()).toHaveLength(1);
    expect(refusals).toContainEqual({ kind: 'Pod', request: 'watch-list', reason });
    const warning = logged.find((l) => l.level === 'warn' && l.message.includes(reason));
    expect(warning?.meta).toMatchObject({ kind: 'Pod', server: server.url, path: '/api/v1/pods' });
    expect(logged.filter((l) => l.message.includes('listing in pages instead'))).toHaveLength(1);
    // Nothing of the refused stream reached the store.
    expect(s.snapshot().pods.some((p) => p.name.startsWith('flood-'))).toBe(false);
  });

  it('a list page that never answers is refused at its deadline and retried, and the retry that is answered syncs', async () => {
    server.hostileWatchList('silence', 'pods');
    const release = server.holdLists('pods');
    const s = startSource({ limits: { streamTimeoutMs: 300, pageTimeoutMs: 300 } });
    await waitFor('a page refused at its deadline', () => refusals.some((r) => r.request === 'list' && r.reason === 'deadline'));
    release();
    await s.synced;
    expect(pods()).toEqual(['web']);
  });
});

describe('every kind flooded at once', () => {
  // The four kinds stream at once: each under its own bound, together they held four times it (438 MiB peak
  // at the default bound). Together they may hold 1.25 times the bound; the stream that passes it is refused.
  it('the kinds share one bound of 1.25 × maxObjects; each refused stream ends in paged lists', async () => {
    server.hostileWatchList('endless-events');
    const s = startSource({ limits: { maxObjects: 2_000 } });
    await s.synced;
    expect(pods()).toEqual(['web']);
    const shared = logged.filter(
      (l) => l.level === 'warn' && JSON.stringify(l.meta).includes('2500 objects in the initial states of all kinds'),
    );
    expect(shared.length).toBeGreaterThanOrEqual(1);
    expect(new Set(refusals.filter((r) => r.request === 'watch-list').map((r) => r.kind))).toEqual(
      new Set(['Namespace', 'Pod', 'Node', 'NetworkPolicy']),
    );
  });
});

describe('the object bound is inclusive', () => {
  // A cluster of exactly initialListMaxObjects pods (100,000 by default: the largest benchmark tier) is served
  // in full, by the stream and by paged lists alike; only an object past it is refused.
  it.each([{ watchList: true }, { watchList: false }])(
    'WatchList $watchList: exactly maxObjects pods sync, unrefused',
    async ({ watchList }) => {
      server.watchList = watchList;
      for (let i = 0; i < 3; i++) server.create(pod(`p-${i}`, `10.244.1.${10 + i}`));
      const s = startSource({ limits: { maxObjects: 4 } });
      await s.synced;
      expect(pods()).toEqual(['p-0', 'p-1', 'p-2', 'web']);
      expect(refusals).toEqual([]);
    },
  );
});

describe('the watch after sync is line-bounded too', () => {
  it('a line that never ends ends that watch (no crash), and the next watch delivers later events', async () => {
    const s = startSource();
    await s.synced;
    await waitFor('the pod watch', () => server.watchCount('pods') > 0);
    server.endlessLine('pods');
    await waitFor('the line refused', () => refusals.some((r) => r.request === 'watch' && r.reason === 'line-too-long'));
    server.create(pod('api', '10.244.1.6'));
    await waitFor('the pod created after it', () => pods().includes('api'));
    expect(logged.some((l) => l.level === 'warn' && l.meta?.['server'] === server.url && l.meta?.['path'] === '/api/v1/pods')).toBe(true);
  });
});
