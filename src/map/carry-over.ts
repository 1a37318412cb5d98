// A diff's two clusters made to look like two snapshots of one source. In the new cluster every object the
// old one has unchanged is replaced by the old one's object (and a whole list by the old list when nothing
// in it changed): the compiler keeps what it made by object identity, as the daemon's informers hand it the
// same object while nothing changed. Each side also says how it differs from the other (`changes`, pods and
// NetworkPolicies by key, as a source's snapshots do), so a compile of one side right after the other's on
// a node looks only at what changed, never at the whole policy list.

import { sameData } from '../compile/memo.js';
import type { ClusterSnapshot, SnapshotDelta } from '../model/index.js';

const named = (o: { readonly name: string; readonly namespace?: string }): string => `${o.namespace ?? ''}/${o.name}`;

/** The old cluster and the new one, carried over and each able to say what differs from the other. */
export function carryOver(before: ClusterSnapshot, after: ClusterSnapshot): readonly [ClusterSnapshot, ClusterSnapshot] {
  const carried: ClusterSnapshot = {
    nodes: same(before.nodes, after.nodes, named),
    namespaces: same(before.namespaces, after.namespaces, named),
    pods: same(before.pods, after.pods, named),
    policies: same(before.policies, after.policies, named),
    ...(after.clusterPolicies ? { clusterPolicies: same(before.clusterPolicies ?? [], after.clusterPolicies, named) } : {}),
  };
  const pods = deltas(before.pods, carried.pods);
  const policies = deltas(before.policies, carried.policies);
  // Two objects of one key in a list: no delta can say which one changed, so neither side says anything.
  if (!pods || !policies) return [before, carried];
  const forward: SnapshotDelta = { pods: pods.forward, policies: policies.forward };
  const backward: SnapshotDelta = { pods: pods.backward, policies: policies.backward };
  const old: ClusterSnapshot = { ...without(before), changes: { since: (earlier) => (earlier === neu ? backward : undefined) } };
  const neu: ClusterSnapshot = { ...carried, changes: { since: (earlier) => (earlier === old ? forward : undefined) } };
  return [old, neu];
}

function without(snapshot: ClusterSnapshot): ClusterSnapshot {
  const { changes: _changes, ...rest } = snapshot;
  return rest;
}

/** Keys whose object differs between two lists (after carrying over), with each side's value. */
function deltas<T extends { readonly name: string; readonly namespace: string }>(
  was: readonly T[],
  now: readonly T[],
): { forward: Map<string, T | undefined>; backward: Map<string, T | undefined> } | undefined {
  const forward = new Map<string, T | undefined>();
  const backward = new Map<string, T | undefined>();
  if (was === now) return { forward, backward };
  const before = byKey(was, named);
  const after = byKey(now, named);
  if (before.size !== was.length || after.size !== now.length) return undefined;
  after.forEach((o, key) => {
    if (before.get(key) !== o) {
      forward.set(key, o);
      backward.set(key, before.get(key));
    }
  });
  before.forEach((o, key) => {
    if (!after.has(key)) {
      forward.set(key, undefined);
      backward.set(key, o);
    }
  });
  return { forward, backward };
}

// Plain loops (a diff carries 10,000 pods over, and the one-shot commands run unoptimised: cli/main.ts).

/** A list by key; a later object of a key replaces an earlier one. */
function byKey<T extends object>(list: readonly T[], keyOf: (o: T) => string): Map<string, T> {
  const out = new Map<string, T>();
  for (let i = 0; i < list.length; i++) out.set(keyOf(list[i]!), list[i]!);
  return out;
}

function same<T extends object>(was: readonly T[], now: readonly T[], keyOf: (o: T) => string): readonly T[] {
  const old = byKey(was, keyOf);
  let changed = was.length !== now.length;
  const out: T[] = [];
  for (let i = 0; i < now.length; i++) {
    const o = now[i]!;
    const kept = old.get(keyOf(o));
    const value = kept !== undefined && sameData(kept, o) ? kept : o;
    if (value !== was[i]) changed = true;
    out.push(value);
  }
  return changed ? out : was;
}
