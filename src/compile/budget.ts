// The node-wide budget: what all NetworkPolicies together may make one node program. A per-policy limit
// bounds nothing when anyone who may create policies can create many; this bounds the sum, so no namespace
// can take the node agent past its memory limit. Policies are admitted oldest first (creationTimestamp,
// then namespace/name): a new policy can never evict an older one's enforcement, and the decision is a
// function of the policies alone, the same on a fresh compile and after any delta.

import type { NetworkPolicy, NodeBudget, PolicyRule, Problem } from '../model/index.js';
import { ipBlockAlts, resolvePorts, type PeerAlt } from './peers-ports.js';

/** What one valid policy writes: its ipBlock sets (by name key, with their sizes) and its rules. */
export interface PolicyCost {
  readonly sets: readonly (readonly [key: string, members: number])[];
  readonly rules: number;
}

const costs = new WeakMap<NetworkPolicy, PolicyCost>();

/** A policy's cost, from its spec alone (computed once per policy object). */
export function policyCost(policy: NetworkPolicy): PolicyCost {
  let cost = costs.get(policy);
  if (!cost) costs.set(policy, (cost = costOf(policy)));
  return cost;
}

function costOf(policy: NetworkPolicy): PolicyCost {
  const sets = new Map<string, number>();
  let rules = 0;
  for (const rule of [...(policy.ingress ?? []), ...(policy.egress ?? [])]) {
    const blocks = ([4, 6] as const).map((family) => ipBlockAlts(rule.peers ?? [], family));
    blocks.forEach((alts, i) => {
      for (const alt of alts) for (const [key, members] of setsOf(alt)) sets.set(`${i === 0 ? 4 : 6}|${key}`, members);
    });
    rules += ruleCount(rule, blocks[0]!.length + blocks[1]!.length);
  }
  return { sets: [...sets], rules };
}

/** The sets an ipBlock alternative asks for (set kind and key, as compile/policy-chains.ts names them). */
function setsOf(alt: PeerAlt): [string, number][] {
  switch (alt.kind) {
    case 'any':
    case 'pods':
      return [];
    case 'cidrs':
      return [[`b|${alt.key}`, alt.cidrs.length]];
    case 'block':
      return [
        ...(alt.cidrs.some((c) => c.prefix === 0) ? [] : [[`b|${alt.cidrsKey}`, alt.cidrs.length] as [string, number]]),
        [`x|${alt.key}`, alt.excepts.length],
      ];
  }
}

/**
 * iptables rules one NetworkPolicy rule compiles to: one per (peer alternative, port alternative), as
 * policy-chains.ts emits them (ports merged into multiport lists). Both families' ipBlock alternatives are
 * counted, so it never falls short of one family's chain.
 */
function ruleCount(rule: PolicyRule, blockAlternatives: number): number {
  const selectorPeers = rule.peers?.filter((p) => !p.ipBlock).length ?? 0;
  return Math.max(1, selectorPeers + blockAlternatives) * resolvePorts(rule.ports).length;
}

/** Oldest first; a policy without a timestamp (a manifest) counts as oldest, then by namespace/name. */
function byAge(a: NetworkPolicy, b: NetworkPolicy): number {
  const ta = a.creationTimestamp ?? '';
  const tb = b.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.namespace !== b.namespace) return a.namespace < b.namespace ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** What the admitted policies use of the budget, and how many valid policies it refused. */
export interface BudgetUse {
  readonly setMembers: number;
  readonly rules: number;
  readonly refused: number;
}

export interface Admission {
  /** Valid policies the budget could not take: they fail closed. */
  readonly refused: ReadonlySet<NetworkPolicy>;
  readonly problems: readonly Problem[];
  /** What the admitted policies use. */
  readonly used: { readonly setMembers: number; readonly rules: number };
}

/**
 * Admits `policies` (the valid ones this node programs) oldest first while the budget lasts. A set several
 * policies share is counted once, by the first. A policy that would cross a limit is refused, and later
 * (newer) policies that still fit are admitted: refusing one policy never refuses an older one.
 */
export function admit(policies: readonly NetworkPolicy[], budget: NodeBudget): Admission {
  const counted = new Set<string>();
  let setMembers = 0;
  let rules = 0;
  const refused = new Set<NetworkPolicy>();
  const problems: Problem[] = [];
  for (const policy of [...policies].sort(byAge)) {
    const cost = policyCost(policy);
    let added = 0;
    for (const [key, members] of cost.sets) if (!counted.has(key)) added += members;
    if (setMembers + added > budget.setMembers || rules + cost.rules > budget.rules) {
      refused.add(policy);
      problems.push(overBudget(policy, cost, added, { setMembers, rules }, budget));
      continue;
    }
    for (const [key] of cost.sets) counted.add(key);
    setMembers += added;
    rules += cost.rules;
  }
  return { refused, problems, used: { setMembers, rules } };
}

function overBudget(
  policy: NetworkPolicy,
  cost: PolicyCost,
  members: number,
  used: { setMembers: number; rules: number },
  budget: NodeBudget,
): Problem {
  const what =
    used.setMembers + members > budget.setMembers
      ? `${members} ipBlock set members on top of ${used.setMembers} would pass the node's budget of ${budget.setMembers}`
      : `${cost.rules} rules on top of ${used.rules} would pass the node's budget of ${budget.rules}`;
  return {
    object: `NetworkPolicy ${policy.namespace}/${policy.name}`,
    field: 'spec',
    message: `${what} (older policies come first); not enforced: the pods it selects stay isolated and nothing it allows is allowed`,
    severity: 'error',
  };
}
