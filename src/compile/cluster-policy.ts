// ClusterNetworkPolicy in the compiler: in which order the tiers run, which chains that needs per address
// family, and the problems to report. Which local pods each CNP selects is kept in cluster-policy-subjects.ts,
// the chains themselves are built in cluster-policy-chains.ts; which CNPs select each pod is kept in resolution.ts, the per-pod
// tier layout in endpoint-chains.ts and workload-chains.ts.
//
// "Policy tiers are evaluated in this order: Admin, NetworkPolicy, Baseline"; within a tier "lower
// priority values have higher precedence", and for equal priorities "the implementation can apply any
// of the matching policies": netfence (like kube-network-policies) breaks ties by name, so the order is
// stable. "CNPs with no ingress rules do not affect ingress traffic": a CNP joins a pod's chain only in
// directions it has rules for. There is no implicit isolation from being a subject.

import type { Chain, ChainName, ClusterNetworkPolicy, IpFamily, NodeSettings, Pod, Problem } from '../model/index.js';
import { parseCidr } from '../model/address.js';
import { ipsOfFamily, type ClusterState } from './cluster-state.js';
import { cnpChain, cnpInvalid, learnsNames } from './cluster-policy-chains.js';
import type { ChainCache } from './chain-cache.js';
import { ClusterPolicySubjects } from './cluster-policy-subjects.js';
import type { IpSetRegistry } from './ipsets.js';
import type { Direction } from './policy-chains.js';

export interface CnpFamilyResult {
  readonly chains: readonly Chain[];
  /** Audit mode: the verdict-only copy of a CNP chain (Deny sets a bit), added to `chains` when first asked for. */
  readonly verdictOf: (chain: ChainName) => ChainName;
}

/**
 * Whether a CNP's egress rules can match a packet to a node's own address: `nodes` and `networks` peers
 * can, and so can a rule that fails closed (a Deny-all). `namespaces`/`pods` peers cannot: their sets
 * hold pod IPs only ("host-networked pods are not included"), never a node's. Such a chain would only
 * return on INPUT, so leaving it out of a pod's chain to its node changes no verdict.
 */
export function reachesNodes(cnp: ClusterNetworkPolicy): boolean {
  return (
    cnpInvalid(cnp) ||
    cnp.egress.some(
      (r) =>
        r.action === undefined ||
        r.peers.some((p) => p.kind !== 'namespaces' && p.kind !== 'pods') ||
        (r.protocols ?? []).some((p) => p.kind === 'unknown'),
    )
  );
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

type Ordered = Pick<ClusterNetworkPolicy, 'tier' | 'priority' | 'name'>;
const tierRank = (c: Ordered): number => (c.tier === 'Admin' ? 0 : 1);

/** Evaluation order: Admin before Baseline, then priority, then name. */
export const inEvaluationOrder = (a: Ordered, b: Ordered): number =>
  tierRank(a) - tierRank(b) || a.priority - b.priority || cmp(a.name, b.name);

export function sortClusterPolicies(cnps: readonly ClusterNetworkPolicy[]): ClusterNetworkPolicy[] {
  return [...cnps].sort(inEvaluationOrder);
}

/** The loader's problems, plus CIDRs of `networks` peers that do not parse (their rules fail closed). */
export function clusterPolicyProblems(cnp: ClusterNetworkPolicy): Problem[] {
  const object = `ClusterNetworkPolicy ${cnp.name}`;
  const out: Problem[] = [...(cnp.problems ?? [])];
  cnp.egress.forEach((rule, i) =>
    rule.peers.forEach((peer, j) => {
      if (peer.kind !== 'networks') return;
      peer.cidrs.forEach((cidr, k) => {
        const parsed = parseCidr(cidr);
        if (!parsed.ok)
          out.push({
            object,
            field: `spec.egress[${i}].to[${j}].networks[${k}]`,
            message: `${parsed.message}; the rule fails closed`,
            severity: 'error',
          });
      });
    }),
  );
  return out;
}

/** Remembers the evaluation order, problems per CNP object and subject lists per CNP, so unchanged CNPs cost a lookup. */
export class ClusterPolicyCompiler {
  private lastInput: readonly ClusterNetworkPolicy[] | undefined;
  private sorted: readonly ClusterNetworkPolicy[] = [];
  private problemsOf = new WeakMap<ClusterNetworkPolicy, readonly Problem[]>();
  /** Which local pods each CNP selects, kept incrementally (cluster-policy-subjects.ts). */
  private readonly subjects = new ClusterPolicySubjects();

  /** Call once per compile, before compileFamily. Returns the CNPs' problems. */
  update(cnps: readonly ClusterNetworkPolicy[] | undefined, state: ClusterState): Problem[] {
    const list = cnps ?? NONE;
    if (list !== this.lastInput) {
      this.lastInput = list;
      this.sorted = sortClusterPolicies(list);
    }
    this.subjects.update(this.sorted, state);
    const problems: Problem[] = [];
    for (const cnp of this.sorted) {
      let found = this.problemsOf.get(cnp);
      if (!found) this.problemsOf.set(cnp, (found = clusterPolicyProblems(cnp)));
      problems.push(...found);
    }
    return problems;
  }

  get active(): boolean {
    return this.sorted.length > 0;
  }

  subjectsOf = (cnp: ClusterNetworkPolicy): readonly Pod[] => this.subjects.of(cnp.name);

  /** Every CNP that has a local subject, with its subjects (for resolution.ts). */
  *selecting(): Iterable<{ readonly item: ClusterNetworkPolicy; readonly targets: readonly Pod[] }> {
    for (const cnp of this.sorted) {
      const targets = this.subjectsOf(cnp);
      if (targets.length > 0) yield { item: cnp, targets };
    }
  }

  /** The CNP chains of one family, rendered through `chains` (one cache with the NetworkPolicy chains), their sets added to `sets`. */
  compileFamily(family: IpFamily, sets: IpSetRegistry, chains: ChainCache, settings: NodeSettings): CnpFamilyResult {
    const out: Chain[] = [];
    const sources = new Map<ChainName, { cnp: ClusterNetworkPolicy; direction: Direction }>();
    const verdicts = new Map<ChainName, ChainName>();
    const render = (cnp: ClusterNetworkPolicy, direction: Direction, verdictOnly: boolean): Chain => {
      // A `domainNames` rule matches each subject pod's own learned set: its chain follows the subjects.
      const subjects = learnsNames(cnp) && direction === 'egress' ? this.subjectsOf(cnp) : undefined;
      const rendered = chains.get(cnp, [direction, family, verdictOnly, subjects ?? null], () =>
        cnpChain(cnp, direction, family, settings, verdictOnly, subjects),
      );
      sets.add(rendered.sets);
      out.push(rendered.chain);
      return rendered.chain;
    };
    const verdictOf = (name: ChainName): ChainName => {
      let found = verdicts.get(name);
      if (found === undefined) {
        const { cnp, direction } = sources.get(name)!;
        verdicts.set(name, (found = render(cnp, direction, true).name));
      }
      return found;
    };
    for (const cnp of this.sorted) {
      if (!this.subjectsOf(cnp).some((p) => ipsOfFamily(p, family).length > 0)) continue;
      for (const direction of ['ingress', 'egress'] as const) {
        if ((direction === 'ingress' ? cnp.ingress : cnp.egress).length === 0) continue;
        sources.set(render(cnp, direction, false).name, { cnp, direction });
      }
    }
    return { chains: out, verdictOf };
  }
}

const NONE: readonly ClusterNetworkPolicy[] = [];
