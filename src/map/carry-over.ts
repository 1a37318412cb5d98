// A diff's new cluster with every object the old one has unchanged replaced by the old one's object (and a
// whole list by the old list when nothing in it changed). The compiler keeps what it made by object
// identity, as the daemon's informers hand it the same object while nothing changed: the new side's compile
// then renders and resolves only what the change touched.

import { sameData } from '../compile/memo.js';
import type { ClusterSnapshot } from '../model/index.js';

export function carryOver(before: ClusterSnapshot, after: ClusterSnapshot): ClusterSnapshot {
  const named = (o: { readonly name: string; readonly namespace?: string }): string => `${o.namespace ?? ''}/${o.name}`;
  return {
    nodes: same(before.nodes, after.nodes, named),
    namespaces: same(before.namespaces, after.namespaces, named),
    pods: same(before.pods, after.pods, named),
    policies: same(before.policies, after.policies, named),
    ...(after.clusterPolicies ? { clusterPolicies: same(before.clusterPolicies ?? [], after.clusterPolicies, named) } : {}),
  };
}

function same<T extends object>(was: readonly T[], now: readonly T[], keyOf: (o: T) => string): readonly T[] {
  const old = new Map(was.map((o) => [keyOf(o), o]));
  let changed = was.length !== now.length;
  const out = now.map((o, i) => {
    const kept = old.get(keyOf(o));
    const value = kept !== undefined && sameData(kept, o) ? kept : o;
    if (value !== was[i]) changed = true;
    return value;
  });
  return changed ? out : was;
}
