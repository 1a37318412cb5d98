// Which local pods each NetworkPolicy selects, and its validation problems, kept from one compile to the
// next: only namespaces whose policies changed (problems) or that hold local pods (targets) are looked at,
// and a policy's targets are worked out again only when it or its namespace's local pods changed.

import type { ClusterSnapshot, NetworkPolicy, Pod, PolicyType, Problem, SnapshotDelta } from '../model/index.js';
import type { ClusterState } from './cluster-state.js';
import { policyTypes } from './policy-chains.js';
import { byNamespaceKey, PolicyIndex } from './policy-index.js';
import { matcherMatches, selectorMatcher, type SelectorMatcher } from './selectors.js';
import { validatePolicy } from './validate.js';

export interface CheckedPolicy {
  readonly policy: NetworkPolicy;
  readonly key: string;
  readonly valid: boolean;
  readonly types: readonly PolicyType[];
  /** Local pods it selects. */
  readonly targets: readonly Pod[];
}

export class PolicyTargets {
  private readonly index = new PolicyIndex();
  /** Validation problems per namespace (only namespaces with some), and all of them in policy key order. */
  private readonly problemsByNamespace = new Map<string, readonly Problem[]>();
  private policyProblems: readonly Problem[] = [];
  /** Per namespace with local pods: its policies that select one, while its policies and local pods are the same arrays. */
  private readonly activeByNamespace = new Map<
    string,
    { readonly policies: readonly NetworkPolicy[]; readonly local: readonly Pod[]; readonly active: readonly CheckedPolicy[] }
  >();
  private lastActive: readonly CheckedPolicy[] | undefined;
  private localNamespaces: { readonly local: readonly Pod[]; readonly sorted: readonly string[] } = { local: [], sorted: [] };
  private readonly validations = new WeakMap<NetworkPolicy, readonly Problem[]>();
  private readonly facts = new WeakMap<NetworkPolicy, PolicyFacts>();

  constructor(private readonly state: Pick<ClusterState, 'localPods' | 'localPodsIn'>) {}

  /** Bring the policies to the snapshot (by the source's delta when there is one). */
  update(snapshot: ClusterSnapshot, delta: SnapshotDelta | undefined): void {
    this.index.update(snapshot, delta);
  }

  /**
   * Does ahead of compile() the per-policy work it would do first (validation, which reads every ipBlock's
   * cidr and excepts once per policy object), and says whether there was any. A caller that must keep its
   * event loop answering can prepare new policies one at a time and yield between them; compile() then finds
   * the work done. The result is the same either way.
   */
  prepare(policy: NetworkPolicy): boolean {
    if (this.validations.has(policy)) return false;
    this.validationOf(policy);
    return true;
  }

  private validationOf(policy: NetworkPolicy): readonly Problem[] {
    let found = this.validations.get(policy);
    if (!found) this.validations.set(policy, (found = validatePolicy(policy)));
    return found;
  }

  /** Every policy's validation problems in policy key order; only namespaces whose policies changed are looked at. */
  problems(): readonly Problem[] {
    let moved = false;
    for (const ns of this.index.takeChanged()) {
      const found = this.index.policiesIn(ns).flatMap((p) => this.validationOf(p));
      if (found.length > 0) this.problemsByNamespace.set(ns, found);
      else if (!this.problemsByNamespace.delete(ns)) continue;
      moved = true;
    }
    if (moved)
      this.policyProblems = [...this.problemsByNamespace.keys()].sort(byNamespaceKey).flatMap((ns) => this.problemsByNamespace.get(ns)!);
    return this.policyProblems;
  }

  /**
   * Policies that select a local pod, in policy key order: only namespaces with local pods are looked at.
   * The same array while none of them changed, so the compiler can keep what it made from it.
   */
  active(): readonly CheckedPolicy[] {
    const local = this.state.localPods;
    let moved = false;
    if (local !== this.localNamespaces.local) {
      moved = true;
      const sorted = [...new Set(local.map((p) => p.namespace))].sort(byNamespaceKey);
      this.localNamespaces = { local, sorted };
      const keep = new Set(sorted);
      for (const ns of this.activeByNamespace.keys()) if (!keep.has(ns)) this.activeByNamespace.delete(ns);
    }
    const entries: (readonly CheckedPolicy[])[] = [];
    for (const ns of this.localNamespaces.sorted) {
      const policies = this.index.policiesIn(ns);
      const localIn = this.state.localPodsIn(ns);
      let entry = this.activeByNamespace.get(ns);
      if (entry?.policies !== policies || entry.local !== localIn) {
        const active: CheckedPolicy[] = [];
        for (const p of policies) {
          const cp = this.checkPolicy(p, localIn);
          if (cp.targets.length > 0) active.push(cp);
        }
        moved ||= !sameChecked(entry?.active, active);
        this.activeByNamespace.set(ns, (entry = { policies, local: localIn, active }));
      }
      entries.push(entry.active);
    }
    if (moved || this.lastActive === undefined) this.lastActive = entries.flat();
    return this.lastActive;
  }

  /** `local`: the local pods of the policy's namespace. */
  private checkPolicy(policy: NetworkPolicy, local: readonly Pod[]): CheckedPolicy {
    const facts = this.factsOf(policy);
    // Targets depend on the policy and its namespace's local pods only: reuse them while neither changed.
    if (facts.last?.local !== local) facts.last = { local, checked: this.checkTargets(policy, facts, local) };
    return facts.last.checked;
  }

  /** What a policy says whatever pods it selects (a compiler asked for each node checks every policy on each). */
  private factsOf(policy: NetworkPolicy): PolicyFacts {
    let facts = this.facts.get(policy);
    if (facts) return facts;
    const errors = this.validationOf(policy).filter((p) => p.severity === 'error');
    const key = `${policy.namespace}/${policy.name}`;
    // Any loading problem (wrong types, unknown values) invalidates the policy; semantic warnings do not.
    const valid = errors.length === 0 && (policy.problems?.length ?? 0) === 0;
    const types = policyTypes(policy);
    facts = {
      // An invalid podSelector cannot say which pods it meant; failing closed means isolating the namespace.
      badSelector: errors.some((p) => p.field.startsWith('spec.podSelector')),
      podSelector: selectorMatcher(policy.podSelector),
      selectsNone: { policy, key, valid, types, targets: NO_PODS },
      last: undefined,
    };
    this.facts.set(policy, facts);
    return facts;
  }

  /** `local`: the local pods of the policy's namespace. */
  private checkTargets(policy: NetworkPolicy, facts: PolicyFacts, local: readonly Pod[]): CheckedPolicy {
    let targets: readonly Pod[] | undefined;
    if (facts.badSelector) targets = local;
    else {
      let matched: Pod[] | undefined;
      for (const p of local) if (matcherMatches(facts.podSelector, p.labels)) (matched ??= []).push(p);
      targets = matched;
    }
    // Most policies select no pod of a given node: nothing made for them.
    if (!targets || targets.length === 0) return facts.selectsNone;
    return { ...facts.selectsNone, targets };
  }
}

/** A policy's validity, types and key, as every check of its targets reads them, and its last check. */
interface PolicyFacts {
  readonly badSelector: boolean;
  readonly podSelector: SelectorMatcher;
  /** The policy checked with no targets. */
  readonly selectsNone: CheckedPolicy;
  /** The last check, with the local pods of the policy's namespace it was made against. */
  last: { readonly local: readonly Pod[]; readonly checked: CheckedPolicy } | undefined;
}

const NO_PODS: readonly Pod[] = [];

const sameChecked = (a: readonly CheckedPolicy[] | undefined, b: readonly CheckedPolicy[]): boolean =>
  a !== undefined && a.length === b.length && a.every((cp, i) => cp === b[i]);
