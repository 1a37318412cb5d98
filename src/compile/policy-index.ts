// NetworkPolicies by namespace, kept from one snapshot to the next: a compile then looks only at the
// namespaces whose policies changed (problems) or that hold local pods (targets), never at all 5,000
// policies of a cluster for a one-object change.

import type { ClusterSnapshot, NetworkPolicy, SnapshotDelta } from '../model/index.js';

const NONE: readonly NetworkPolicy[] = [];
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The order of `ns/name` keys, namespace first: names hold no '/', so `a/…` and `a-b/…` compare as
 * `a/` and `a-b/` do (namespaces sorted this way, names within one, give the order of the whole keys).
 */
export const byNamespaceKey = (a: string, b: string): number => cmp(`${a}/`, `${b}/`);

export class PolicyIndex {
  /** Per namespace its policies sorted by name; an array is replaced only when that namespace's policies change. */
  private readonly byNamespace = new Map<string, readonly NetworkPolicy[]>();
  /** The list the index was last built from, while known (after a delta only the keys are). */
  private list: readonly NetworkPolicy[] | undefined = NONE;
  private changed = new Set<string>();

  /** Bring the index to the snapshot: by the source's delta when there is one, else by comparing the whole list. */
  update(snapshot: ClusterSnapshot, delta: SnapshotDelta | undefined): void {
    if (delta) {
      if (delta.policies.size === 0) return;
      this.list = undefined;
      for (const [key, policy] of delta.policies) this.put(key, policy);
      return;
    }
    if (snapshot.policies === this.list) return;
    this.list = snapshot.policies;
    const fresh = new Map<string, NetworkPolicy[]>();
    for (const p of snapshot.policies) {
      let inNs = fresh.get(p.namespace);
      if (!inNs) fresh.set(p.namespace, (inNs = []));
      inNs.push(p);
    }
    // Stable: policies of equal names keep their list order, as the whole list sorted by key did.
    for (const inNs of fresh.values()) inNs.sort((a, b) => cmp(a.name, b.name));
    for (const [ns, before] of this.byNamespace) if (!fresh.has(ns)) this.replace(ns, NONE, before);
    for (const [ns, now] of fresh) this.replace(ns, now, this.byNamespace.get(ns) ?? NONE);
  }

  /** A namespace's policies sorted by name; the same array until one of them changes. */
  policiesIn(namespace: string): readonly NetworkPolicy[] {
    return this.byNamespace.get(namespace) ?? NONE;
  }

  /** Namespaces whose policies changed since the last call. */
  takeChanged(): ReadonlySet<string> {
    const out = this.changed;
    this.changed = new Set();
    return out;
  }

  private replace(ns: string, now: readonly NetworkPolicy[], before: readonly NetworkPolicy[]): void {
    if (now.length === before.length && now.every((p, i) => p === before[i])) return;
    if (now.length === 0) this.byNamespace.delete(ns);
    else this.byNamespace.set(ns, now);
    this.changed.add(ns);
  }

  private put(key: string, policy: NetworkPolicy | undefined): void {
    const slash = key.indexOf('/');
    const ns = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const before = this.policiesIn(ns);
    let i = 0;
    let hi = before.length;
    while (i < hi) {
      const mid = (i + hi) >>> 1;
      if (before[mid]!.name < name) i = mid + 1;
      else hi = mid;
    }
    const there = i < before.length && before[i]!.name === name;
    if (!there && policy === undefined) return;
    if (there && before[i] === policy) return;
    const now = before.slice();
    if (policy === undefined) now.splice(i, 1);
    else if (there) now[i] = policy;
    else now.splice(i, 0, policy);
    this.replace(ns, now, before);
  }
}
