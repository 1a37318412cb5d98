// Resolution: which NetworkPolicies and ClusterNetworkPolicies select each local pod, in evaluation order,
// kept from one compile to the next (Felix's calc graph does this per endpoint). Only objects whose local
// targets changed are looked at, and of their targets only the pods that joined or left: a pod change
// touches that pod, a policy change the pods it selected before and after. A pod's list is replaced (a new
// array) only when it changes, so the renderer can reuse what it made from the old one.

import type { ClusterNetworkPolicy, NetworkPolicy, Pod } from '../model/index.js';
import { inEvaluationOrder, reachesNodes } from './cluster-policy.js';
import { sameData } from './memo.js';
import { policyTypes } from './policy-chains.js';

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

  /** `current`: every object that selects a local pod now, each read as its reference by `ref`. */
  update<S>(current: Iterable<Selecting<S>>, ref: (item: S) => T): void {
    const seen = new Set<T>();
    // Joins and leaves gathered per pod first: each touched pod's list is then rebuilt once.
    const changes = new Map<Pod, { readonly joined: T[]; readonly left: Set<T> }>();
    const changeOf = (pod: Pod): { readonly joined: T[]; readonly left: Set<T> } => {
      let change = changes.get(pod);
      if (!change) changes.set(pod, (change = { joined: [], left: new Set() }));
      return change;
    };
    for (const selecting of current) {
      const item = ref(selecting.item);
      const targets = selecting.targets;
      seen.add(item);
      const was = this.targetsOf.get(item) ?? NONE;
      if (was === targets) continue;
      this.targetsOf.set(item, targets);
      // All joined or all left (a compiler moving to another node: every object's targets): no sets to build.
      if (was.length === 0 || targets.length === 0) {
        for (const pod of was) changeOf(pod).left.add(item);
        for (const pod of targets) changeOf(pod).joined.push(item);
        continue;
      }
      // A few pods each (an object's targets on one node): looked up in the lists themselves, no sets built.
      const small = was.length * targets.length <= 64;
      const now = small ? undefined : new Set(targets);
      const had = small ? undefined : new Set(was);
      for (const pod of was) if (!(now ? now.has(pod) : targets.includes(pod))) changeOf(pod).left.add(item);
      for (const pod of targets) if (!(had ? had.has(pod) : was.includes(pod))) changeOf(pod).joined.push(item);
    }
    for (const [item, was] of this.targetsOf) {
      if (seen.has(item)) continue;
      this.targetsOf.delete(item);
      for (const pod of was) changeOf(pod).left.add(item);
    }
    for (const [pod, { joined, left }] of changes) {
      const kept = left.size > 0 ? this.of(pod).filter((x) => !left.has(x)) : this.of(pod);
      const list = joined.length > 0 ? [...kept, ...joined].sort(this.before) : kept;
      if (list.length === 0) this.byPod.delete(pod);
      else this.byPod.set(pod, list);
    }
  }

  of(pod: Pod): readonly T[] {
    return this.byPod.get(pod) ?? NONE;
  }
}

/**
 * What a pod's chains need of a NetworkPolicy (Felix hands endpoints policy IDs, not policies): its chain
 * names come from its key, its types and audit mode decide the jumps. An edit that changes none of these
 * (a port added) keeps the same reference, so the pods it selects are not rendered again.
 */
export interface PolicyRef {
  readonly namespace: string;
  readonly name: string;
  readonly ingress: boolean;
  readonly egress: boolean;
  readonly audit: boolean;
}

/** The same for a ClusterNetworkPolicy: its place in the evaluation order, directions, audit mode. */
export interface ClusterPolicyRef {
  readonly name: string;
  readonly tier: ClusterNetworkPolicy['tier'];
  readonly priority: number;
  /** It has rules for the direction: "CNPs with no ingress rules do not affect ingress traffic". */
  readonly ingress: boolean;
  readonly egress: boolean;
  readonly audit: boolean;
  /** Its egress rules can match a node's address (cluster-policy.ts reachesNodes). */
  readonly reachesNodes: boolean;
}

/** What selects one local pod; the arrays are the same while what selects the pod is the same. */
export interface EndpointSelection {
  /** NetworkPolicies of the pod's namespace that select it, by name (any policy types). */
  readonly policies: readonly PolicyRef[];
  /** ClusterNetworkPolicies whose subject it is, in evaluation order: Admin, Baseline; priority; name. */
  readonly clusterPolicies: readonly ClusterPolicyRef[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
// A policy selects pods of its own namespace only, so a pod's policies differ by name alone.
const byName = (a: PolicyRef, b: PolicyRef): number => cmp(a.name, b.name);

/** One reference per object key while what it says is the same, whatever objects it was read from. */
class Refs<T extends object, R> {
  /** Per object its reference and its key (built once: every compile that sees the object marks it by key). */
  private readonly byObject = new WeakMap<T, { readonly ref: R; readonly key: string }>();
  private byKey = new Map<string, R>();
  private nextByKey = new Map<string, R>();

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly read: (item: T) => R,
  ) {}

  of(item: T): R {
    let known = this.byObject.get(item);
    if (known === undefined) {
      const key = this.keyOf(item);
      const fresh = this.read(item);
      const before = this.byKey.get(key) ?? this.nextByKey.get(key);
      known = { ref: before !== undefined && sameData(before, fresh) ? before : fresh, key };
      this.byObject.set(item, known);
    }
    this.nextByKey.set(known.key, known.ref);
    return known.ref;
  }

  /** After each compile: forget the keys it did not see. */
  rotate(): void {
    this.byKey = this.nextByKey;
    this.nextByKey = new Map();
  }
}

export class EndpointResolver {
  private readonly policies = new Selections<PolicyRef>(byName);
  private readonly clusterPolicies = new Selections<ClusterPolicyRef>(inEvaluationOrder);
  private readonly policyRefs = new Refs<NetworkPolicy, PolicyRef>(
    (p) => `${p.namespace}/${p.name}`,
    (p) => {
      const types = policyTypes(p);
      return {
        namespace: p.namespace,
        name: p.name,
        ingress: types.includes('Ingress'),
        egress: types.includes('Egress'),
        audit: p.audit ?? false,
      };
    },
  );
  private readonly clusterPolicyRefs = new Refs<ClusterNetworkPolicy, ClusterPolicyRef>(
    (c) => c.name,
    (c) => ({
      name: c.name,
      tier: c.tier,
      priority: c.priority,
      ingress: c.ingress.length > 0,
      egress: c.egress.length > 0,
      audit: c.audit ?? false,
      reachesNodes: reachesNodes(c),
    }),
  );

  /**
   * Call once per compile with every NetworkPolicy and ClusterNetworkPolicy that selects a local pod. The
   * same policies array as last time is taken as unchanged: nothing to look at, however many there are.
   */
  update(policies: readonly Selecting<NetworkPolicy>[], clusterPolicies: Iterable<Selecting<ClusterNetworkPolicy>>): void {
    if (policies !== this.lastPolicies) {
      this.lastPolicies = policies;
      this.policies.update(policies, (p) => this.policyRefs.of(p));
      this.policyRefs.rotate();
    }
    this.clusterPolicies.update(clusterPolicies, (c) => this.clusterPolicyRefs.of(c));
    this.clusterPolicyRefs.rotate();
  }
  private lastPolicies: readonly Selecting<NetworkPolicy>[] | undefined;

  selectionOf(pod: Pod): EndpointSelection {
    return { policies: this.policies.of(pod), clusterPolicies: this.clusterPolicies.of(pod) };
  }
}
