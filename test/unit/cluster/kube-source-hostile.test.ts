// KubeSource against a watch stream that carries something other than events: a corrupted
// line used to be skipped silently, losing the event it carried until the next relist (minutes away).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { decodeWatchEvent } from '../../../src/cluster/kube-list.js';
import { KubeSource } from '../../../src/cluster/kube-source.js';
import type { Logger } from '../../../src/cluster/source.js';
import { FakeApiServer, writeKubeconfig, type KubeObject } from '../../fakes/fake-apiserver.js';

const policy = (name: string): KubeObject => ({ kind: 'NetworkPolicy', metadata: { name, namespace: 'prod' }, spec: { podSelector: {} } });

let server: FakeApiServer;
let dir: string;
let source: KubeSource | undefined;
const warnings: string[] = [];

const logger: Logger = { info: () => undefined, debug: () => undefined, error: () => undefined, warn: (m) => void warnings.push(m) };

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const policies = () =>
  source!
    .snapshot()
    .policies.map((p) => p.name)
    .sort();
const watching = () => (['namespaces', 'pods', 'nodes', 'networkpolicies'] as const).every((r) => server.watchCount(r) > 0);

beforeEach(async () => {
  warnings.length = 0;
  server = new FakeApiServer();
  await server.start();
  dir = mkdtempSync(join(tmpdir(), 'nft-kube-hostile-'));
  server.create({ kind: 'Namespace', metadata: { name: 'prod' } });
  server.create(policy('first'));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(writeKubeconfig(server, dir));
  source = new KubeSource({ kubeConfig, logger, backoff: { initialMs: 20, maxMs: 200 } });
  await source.synced;
  await waitFor('every kind watching', watching);
});

afterEach(async () => {
  await source?.stop();
  source = undefined;
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('watch decode errors force a relist', () => {
  it('an event that arrives as a corrupted line is still applied (through a relist)', async () => {
    const lists = () => server.requests.filter((r) => r.resource === 'networkpolicies' && !r.watch).length;
    const listsBefore = lists();
    server.corruptNextEvent('networkpolicies');
    server.create(policy('second'));
    await waitFor('the corrupted ADDED event reaching the snapshot', () => policies().includes('second'));
    expect(policies()).toEqual(['first', 'second']);
    expect(lists()).toBeGreaterThan(listsBefore);
    expect(warnings.some((w) => w.includes('undecodable line'))).toBe(true);
  });

  it('a garbage line between events costs nothing: deletes and adds after it arrive', async () => {
    server.sendRawLine('networkpolicies', 'this is not JSON');
    server.delete({ kind: 'NetworkPolicy', metadata: { name: 'first', namespace: 'prod' } });
    server.create(policy('third'));
    await waitFor('the delete and the add', () => policies().join(',') === 'third');
  });

  it('a stream that keeps breaking backs off instead of relisting in a loop, and still delivers later events', async () => {
    const lists = () => server.requests.filter((r) => r.resource === 'networkpolicies' && !r.watch).length;
    const listsBefore = lists();
    server.sendRawLine('networkpolicies', 'garbage one');
    await waitFor('the relist after the first bad line', () => lists() === listsBefore + 1 && server.watchCount('networkpolicies') > 0);
    server.sendRawLine('networkpolicies', 'garbage two');
    await waitFor(
      'the watch resumed after the second bad line',
      () => warnings.filter((w) => w.includes('informer failed')).length > 0 && server.watchCount('networkpolicies') > 0,
    );
    server.create(policy('after'));
    await waitFor('the event after both bad lines', () => policies().includes('after'));
    expect(lists()).toBe(listsBefore + 1);
  });

  it.each([
    ['not JSON', '{"type":"ADDED","object":{'],
    ['JSON but no type', '{"object":{}}'],
    ['JSON but no object', '{"type":"ADDED"}'],
    ['a bare number', '42'],
  ])('%s is not an event', (_name, line) => {
    expect(decodeWatchEvent(line)).toBeUndefined();
  });
});
