// Resolution: which NetworkPolicies and ClusterNetworkPolicies select each local pod, in evaluation order,
// kept from one compile to the next (Felix's calc graph does this per endpoint). Only objects whose local
// targets changed are looked at, and of their targets only the pods that joined or left: a pod change
// touches that pod, a policy change the pods it selected before and after. A pod's list is replaced (a new
// array) only when it changes, so the renderer can reuse what it made from the old one.

import type { ClusterNetworkPolicy, NetworkPolicy, Pod } from '../model/index.js';
import { inEvaluationOrder } from './cluster-policy.js';

/** An object with the local pods it selects (the same array while they are the same pods). */
export interface Selecting<T> {
  readonly item: T;
  readonly targets: readonly Pod[];
}

const NONE: readonly never[] = [];

/** Per local pod the objects selecting it, ordered by `before`. */
class Selections<T> {
  private readonly targetsOf = new Map<T, readonly Pod[]>();
  private readonly byPod = new Map<Pod, readonly T[]>();

  constructor(private readonly before: (a: T, b: T) => number) {}

  /** `current`: every object that selects a local pod now. */
  update(current: Iterable<Selecting<T>>): void {
    const seen = new Set<T>();
    for (const { item, targets } of current) {
      seen.add(item);
      const was = this.targetsOf.get(item) ?? NONE;
      if (was === targets) continue;
      this.targetsOf.set(item, targets);
      const now = new Set(targets);
      const had = new Set(was);
      for (const pod of was) if (!now.has(pod)) this.remove(pod, item);
      for (const pod of targets) if (!had.has(pod)) this.insert(pod, item);
    }
    for (const [item, was] of this.targetsOf) {
      if (seen.has(item)) continue;
      this.targetsOf.delete(item);
      for (const pod of was) this.remove(pod, item);
    }
  }

  of(pod: Pod): readonly T[] {
    return this.byPod.get(pod) ?? NONE;
  }

  private insert(pod: Pod, item: T): void {
    const list = this.of(pod);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.before(list[mid]!, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    this.byPod.set(pod, [...list.slice(0, lo), item, ...list.slice(lo)]);
  }

  private remove(pod: Pod, item: T): void {
    const list = this.of(pod).filter((x) => x !== item);
    if (list.length === 0) this.byPod.delete(pod);
    else this.byPod.set(pod, list);
  }
}

/** What selects one local pod; the arrays are the same while what selects the pod is the same. */
export interface EndpointSelection {
  /** NetworkPolicies of the pod's namespace that select it, by name (any policy types). */
  readonly policies: readonly NetworkPolicy[];
  /** ClusterNetworkPolicies whose subject it is, in evaluation order: Admin, Baseline; priority; name. */
  readonly clusterPolicies: readonly ClusterNetworkPolicy[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
// A policy selects pods of its own namespace only, so a pod's policies differ by name alone.
const byName = (a: NetworkPolicy, b: NetworkPolicy): number => cmp(a.name, b.name);

export class EndpointResolver {
  private readonly policies = new Selections<NetworkPolicy>(byName);
  private readonly clusterPolicies = new Selections<ClusterNetworkPolicy>(inEvaluationOrder);

  /** Call once per compile with every NetworkPolicy and ClusterNetworkPolicy that selects a local pod. */
  update(policies: Iterable<Selecting<NetworkPolicy>>, clusterPolicies: Iterable<Selecting<ClusterNetworkPolicy>>): void {
    this.policies.update(policies);
    this.clusterPolicies.update(clusterPolicies);
  }

  selectionOf(pod: Pod): EndpointSelection {
    return { policies: this.policies.of(pod), clusterPolicies: this.clusterPolicies.of(pod) };
  }
}
