// The store both sources keep their objects in: snapshots are built lazily, so a snapshot read long after
// later changes must still show the cluster as it was when it was handed out, and `changes.since` must name
// exactly the objects that differ between two snapshots.

import { jest } from '@jest/globals';
import { ObjectStore } from '../../../src/cluster/source.js';
import type { ClusterSnapshot, Pod } from '../../../src/model/index.js';

const pod = (namespace: string, name: string, app: string): Pod => ({
  namespace,
  name,
  labels: { app },
  nodeName: 'node-1',
  hostNetwork: false,
  phase: 'Running',
  ips: ['10.0.0.1'],
  ports: [],
});

/** A tiny deterministic generator (no dependence on Math.random). */
function lcg(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('ObjectStore', () => {
  it('a snapshot read after later changes shows the cluster as it was handed out; since() names exactly what differs', () => {
    const store = new ObjectStore();
    const next = lcg(42);
    const live = new Map<string, Pod>();
    const handedOut: { snapshot: ClusterSnapshot; pods: Map<string, Pod> }[] = [];
    for (let step = 0; step < 400; step++) {
      const key = `ns-${Math.floor(next() * 4)}/pod-${Math.floor(next() * 30)}`;
      const [namespace, name] = key.split('/') as [string, string];
      if (next() < 0.3) {
        store.delete('Pod', key);
        live.delete(key);
      } else {
        const p = pod(namespace, name, `app-${Math.floor(next() * 3)}`);
        // An equal value is not a change: the store keeps the object it had.
        if (store.set('Pod', key, p)) live.set(key, p);
      }
      if (next() < 0.3) handedOut.push({ snapshot: store.snapshot(), pods: new Map(live) });
    }
    const sorted = (m: Map<string, Pod>): Pod[] => [...m.keys()].sort().map((k) => m.get(k)!);
    // Read in a scrambled order, long after they were handed out.
    for (const i of handedOut.map((_, i) => i).sort((a, b) => ((a * 7919) % 13) - ((b * 7919) % 13))) {
      const { snapshot, pods } = handedOut[i]!;
      expect(snapshot.pods).toEqual(sorted(pods));
      expect(snapshot.pods).toBe(snapshot.pods);
    }
    for (let i = 0; i + 1 < handedOut.length; i += 3) {
      const earlier = handedOut[i]!;
      const later = handedOut[Math.min(handedOut.length - 1, i + 1 + (i % 5))]!;
      const delta = later.snapshot.changes!.since(earlier.snapshot)!;
      const differing = [...new Set([...earlier.pods.keys(), ...later.pods.keys()])].filter(
        (k) => earlier.pods.get(k) !== later.pods.get(k),
      );
      // Every differing key is named with its later value; a named key that does not differ has the same value.
      for (const k of differing) expect(delta.pods.get(k)).toBe(later.pods.get(k));
      for (const [k, v] of delta.pods) expect(v).toBe(later.pods.get(k));
      expect(delta.policies.size).toBe(0);
      // Backwards is not a delta it can give.
      if (later.snapshot.changes !== earlier.snapshot.changes) expect(earlier.snapshot.changes!.since(later.snapshot)).toBeUndefined();
    }
  });

  it('an unchanged kind keeps its array from one snapshot to the next; a snapshot compares as its lists', () => {
    const store = new ObjectStore();
    store.set('Namespace', 'a', { name: 'a', labels: {} });
    const first = store.snapshot();
    const namespaces = first.namespaces;
    store.set('Pod', 'a/p', pod('a', 'p', 'web'));
    const second = store.snapshot();
    expect(second.namespaces).toBe(namespaces);
    expect(second).toEqual({ nodes: [], namespaces: [{ name: 'a', labels: {} }], pods: [pod('a', 'p', 'web')], policies: [] });
    expect(second.changes!.since({ nodes: [], namespaces: [], pods: [], policies: [] })).toBeUndefined();
  });

  it('takes an initial list in no key order as one sort: no insertion moving the stored keys per object', () => {
    // 100,000 pods inserted one by one into a sorted array move half of it each time (minutes of CPU at
    // start-up); the store appends them and sorts once, when the snapshot is read.
    const store = new ObjectStore();
    const keys = Array.from({ length: 2_000 }, (_, i) => `ns-${i % 7}/pod-${1_999 - i}`);
    const splice = jest.spyOn(Array.prototype, 'splice');
    try {
      for (const key of keys) store.set('Pod', key, pod(key.split('/')[0]!, key.split('/')[1]!, 'a'));
      expect(splice.mock.calls.length).toBeLessThan(10);
    } finally {
      splice.mockRestore();
    }
    expect(store.snapshot().pods.map((p) => `${p.namespace}/${p.name}`)).toEqual([...keys].sort());
  });
});
