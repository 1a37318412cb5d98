// The informer loop against a scripted watch: what it lists, from which resourceVersion each watch starts,
// and what it removes on a relist, without an object cache of its own.

import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { KindInformer } from '../../../src/cluster/kind-informer.js';

type Callback = (phase: string, obj: unknown) => void;
type Done = (err: unknown) => void;

interface OpenWatch {
  readonly resourceVersion: string;
  readonly send: Callback;
  readonly end: Done;
  readonly controller: AbortController;
}

const obj = (name: string, resourceVersion: string): KubernetesObject => ({ metadata: { name, namespace: 'ns', resourceVersion } });

function harness(lists: (() => KubernetesListObject<KubernetesObject>)[]) {
  const watches: OpenWatch[] = [];
  const held = new Set<string>();
  const log: string[] = [];
  const errors: unknown[] = [];
  let listCalls = 0;
  const watcher = {
    watch: (_path: string, query: Record<string, unknown>, send: Callback, end: Done): Promise<AbortController> => {
      const controller = new AbortController();
      watches.push({ resourceVersion: String(query['resourceVersion']), send, end, controller });
      return Promise.resolve(controller);
    },
  };
  const list = (): Promise<KubernetesListObject<KubernetesObject>> => {
    const next = lists[listCalls++];
    return next ? Promise.resolve(next()) : Promise.reject(new Error('no more lists'));
  };
  const keyOf = (o: KubernetesObject) => `${o.metadata!.namespace}/${o.metadata!.name}`;
  const informer = new KindInformer('/api/v1/pods', watcher, list, {
    upsert: (o) => {
      held.add(keyOf(o));
      log.push(`upsert ${keyOf(o)}@${o.metadata!.resourceVersion}`);
    },
    remove: (key) => {
      held.delete(key);
      log.push(`remove ${key}`);
    },
    heldKeys: () => held,
    keyOf,
    error: (err) => void errors.push(err),
    connect: () => undefined,
  });
  return { informer, watches, held, log, errors, listCalls: () => listCalls };
}

const listOf =
  (resourceVersion: string, ...items: KubernetesObject[]) =>
  () => ({ metadata: { resourceVersion }, items });
const settle = () => new Promise((r) => setImmediate(r));

describe('KindInformer', () => {
  it('lists, then watches from the list’s resourceVersion and applies events', async () => {
    const h = harness([listOf('10', obj('a', '5'))]);
    await h.informer.start();
    expect(h.watches.map((w) => w.resourceVersion)).toEqual(['10']);
    h.watches[0]!.send('ADDED', obj('b', '11'));
    h.watches[0]!.send('MODIFIED', obj('a', '12'));
    h.watches[0]!.send('DELETED', obj('b', '13'));
    expect(h.log).toEqual(['upsert ns/a@5', 'upsert ns/b@11', 'upsert ns/a@12', 'remove ns/b']);
  });

  it('a watch that ends cleanly is reopened from the last bookmark, without listing', async () => {
    const h = harness([listOf('10', obj('a', '5'))]);
    await h.informer.start();
    h.watches[0]!.send('BOOKMARK', { metadata: { resourceVersion: '40' } });
    h.watches[0]!.end(null);
    await settle();
    expect(h.watches.map((w) => w.resourceVersion)).toEqual(['10', '40']);
    expect(h.listCalls()).toBe(1);
    expect(h.log).toEqual(['upsert ns/a@5']); // a bookmark is no object
  });

  it('after 410 it relists, removes every held key the new list lacks, and watches from the new list', async () => {
    const h = harness([listOf('10', obj('a', '5'), obj('b', '6')), listOf('50', obj('b', '6'), obj('c', '45'))]);
    await h.informer.start();
    h.held.add('ns/rejected'); // held by the owner though never upserted (an object it could not read)
    h.watches[0]!.send('ERROR', { code: 410, metadata: {} });
    h.watches[0]!.end(null);
    await settle();
    expect(h.listCalls()).toBe(2);
    expect(h.log.slice(2)).toEqual(['remove ns/a', 'remove ns/rejected', 'upsert ns/b@6', 'upsert ns/c@45']);
    expect([...h.held].sort()).toEqual(['ns/b', 'ns/c']);
    expect(h.watches.map((w) => w.resourceVersion)).toEqual(['10', '50']);
  });

  it('a watch that ends with 410 relists too', async () => {
    const h = harness([listOf('10'), listOf('20', obj('a', '15'))]);
    await h.informer.start();
    h.watches[0]!.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await settle();
    expect(h.listCalls()).toBe(2);
    expect(h.watches.map((w) => w.resourceVersion)).toEqual(['10', '20']);
  });

  it('another failure is reported and the loop stays stopped; start() resumes from the last resourceVersion', async () => {
    const h = harness([listOf('10', obj('a', '5'))]);
    await h.informer.start();
    h.watches[0]!.send('MODIFIED', obj('a', '30'));
    h.watches[0]!.end(new Error('connection reset'));
    await settle();
    expect(h.errors).toHaveLength(1);
    expect(h.watches).toHaveLength(1);
    await h.informer.start();
    expect(h.watches.map((w) => w.resourceVersion)).toEqual(['10', '30']);
    expect(h.listCalls()).toBe(1);
  });

  it('a list that fails removes nothing and is reported', async () => {
    const h = harness([listOf('10', obj('a', '5'))]);
    await h.informer.start();
    h.watches[0]!.end(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await settle(); // the second list rejects
    expect(h.errors).toHaveLength(1);
    expect([...h.held]).toEqual(['ns/a']);
    expect(h.watches).toHaveLength(1);
  });

  it('stop() aborts the open watch and does not reopen it', async () => {
    const h = harness([listOf('10')]);
    await h.informer.start();
    await h.informer.stop();
    expect(h.watches[0]!.controller.signal.aborted).toBe(true);
    h.watches[0]!.end(null);
    await settle();
    expect(h.watches).toHaveLength(1);
  });
});
