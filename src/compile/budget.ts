// The node-wide budget: what all NetworkPolicies together may make one node program. A per-policy limit
// bounds nothing when anyone who may create policies can create many; this bounds the sum, so no namespace
// can take the node agent past its memory limit. The budget is shared between the namespaces whose policies
// the node programs by max-min fairness: each gets what it asks for up to an equal share, and what the
// smaller ones leave is split among the larger ones the same way. So a namespace that asks for no more than
// budget/N (N namespaces) is never refused because of another's size: one tenant's long lists fail only its
// own policies. Within its share a namespace's policies are admitted oldest first (creationTimestamp, then
// name): its new policy can never evict its older one. What the shares leave unused (a namespace below its
// share, sets shared between namespaces, rounding) then goes to the policies past their share, oldest first
// across the node. The decision is a function of the policies alone, the same on a fresh compile and after
// any delta.

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

/** Each namespace's share of one resource: max-min fair (water-filling) over what each asks for. */
function maxMinShares(demands: ReadonlyMap<string, number>, capacity: number): Map<string, number> {
  const shares = new Map<string, number>();
  // Smallest demand first: each takes what it asks up to an equal split of what is left, so what a small one
  // leaves is split among the larger ones. The split never shrinks as it goes, so a demand up to capacity/N
  // is always granted in full.
  const order = [...demands].sort(([na, a], [nb, b]) => a - b || (na < nb ? -1 : na > nb ? 1 : 0));
  let left = capacity;
  let remaining = order.length;
  for (const [namespace, demand] of order) {
    const share = Math.min(demand, Math.floor(left / remaining));
    shares.set(namespace, share);
    left -= share;
    remaining--;
  }
  return shares;
}

interface Use {
  readonly counted: Set<string>;
  setMembers: number;
  rules: number;
}

/** Set members `cost` adds to `use` (sets it already counts are free) and its rules. */
function membersAdded(use: Use, cost: PolicyCost): number {
  let members = 0;
  for (const [key, n] of cost.sets) if (!use.counted.has(key)) members += n;
  return members;
}

function take(use: Use, cost: PolicyCost, members: number): void {
  for (const [key] of cost.sets) use.counted.add(key);
  use.setMembers += members;
  use.rules += cost.rules;
}

const newUse = (): Use => ({ counted: new Set(), setMembers: 0, rules: 0 });

/** Per namespace, its share of each resource of the budget, from what all its policies would use. */
function fairShares(sorted: readonly NetworkPolicy[], budget: NodeBudget): Map<string, NodeBudget> {
  const demand = new Map<string, Use>();
  for (const policy of sorted) {
    let use = demand.get(policy.namespace);
    if (!use) demand.set(policy.namespace, (use = newUse()));
    const cost = policyCost(policy);
    take(use, cost, membersAdded(use, cost));
  }
  const members = maxMinShares(new Map([...demand].map(([ns, u]) => [ns, u.setMembers])), budget.setMembers);
  const rules = maxMinShares(new Map([...demand].map(([ns, u]) => [ns, u.rules])), budget.rules);
  return new Map([...demand.keys()].map((ns) => [ns, { setMembers: members.get(ns)!, rules: rules.get(ns)! }]));
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
 * Admits `policies` (the valid ones this node programs): first each namespace's, oldest first, within its
 * fair share (fairShares); then, oldest first across the node, those past their share while what the shares
 * left lasts. A set several policies share is counted once, by the first. A policy that would cross a limit
 * is refused, and later (newer) policies that still fit are admitted: refusing one policy never refuses an
 * older one of its namespace, and never one of a namespace within its share.
 */
export function admit(policies: readonly NetworkPolicy[], budget: NodeBudget): Admission {
  return withinWholeBudget(policies, budget) ?? admitByShares(policies, budget);
}

/**
 * The admission when every policy fits the node's whole budget even counting shared sets once per policy:
 * then no policy can be refused (one past its namespace's share is admitted from what the shares left, and
 * the whole never passes the budget), and what is used is every distinct set once and every rule. Undefined
 * otherwise. Most nodes are far within their budget, and a compiler asked for each node in turn admits on each.
 */
function withinWholeBudget(policies: readonly NetworkPolicy[], budget: NodeBudget): Admission | undefined {
  let most = 0;
  let rules = 0;
  // Only ipBlock sets count, and most policies have none: those with some are kept for the second walk.
  const withSets: PolicyCost[] = [];
  for (const policy of policies) {
    const cost = policyCost(policy);
    rules += cost.rules;
    if (cost.sets.length === 0) continue;
    withSets.push(cost);
    for (const [, members] of cost.sets) most += members;
  }
  if (most > budget.setMembers || rules > budget.rules) return undefined;
  const counted = new Map<string, number>();
  for (const cost of withSets) for (const [key, members] of cost.sets) if (!counted.has(key)) counted.set(key, members);
  let setMembers = 0;
  for (const members of counted.values()) setMembers += members;
  return { refused: new Set(), problems: [], used: { setMembers, rules } };
}

function admitByShares(policies: readonly NetworkPolicy[], budget: NodeBudget): Admission {
  const sorted = [...policies].sort(byAge);
  const shares = fairShares(sorted, budget);
  const perNamespace = new Map<string, Use>();
  const node = newUse();
  const pastShare: NetworkPolicy[] = [];
  for (const policy of sorted) {
    const share = shares.get(policy.namespace)!;
    let own = perNamespace.get(policy.namespace);
    if (!own) perNamespace.set(policy.namespace, (own = newUse()));
    const cost = policyCost(policy);
    const ownAdded = membersAdded(own, cost);
    if (own.setMembers + ownAdded > share.setMembers || own.rules + cost.rules > share.rules) {
      pastShare.push(policy);
      continue;
    }
    take(own, cost, ownAdded);
    take(node, cost, membersAdded(node, cost));
  }
  const counted = node.counted;
  let { setMembers, rules } = node;
  const refused = new Set<NetworkPolicy>();
  const problems: Problem[] = [];
  for (const policy of pastShare) {
    const cost = policyCost(policy);
    let added = 0;
    for (const [key, members] of cost.sets) if (!counted.has(key)) added += members;
    if (setMembers + added > budget.setMembers || rules + cost.rules > budget.rules) {
      refused.add(policy);
      problems.push(overBudget(policy, cost, added, { setMembers, rules }, budget, shares.get(policy.namespace)!));
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
  share: NodeBudget,
): Problem {
  const what =
    used.setMembers + members > budget.setMembers
      ? `${members} ipBlock set members on top of ${used.setMembers} would pass the node's budget of ${budget.setMembers}`
      : `${cost.rules} rules on top of ${used.rules} would pass the node's budget of ${budget.rules}`;
  const fair = `namespace ${policy.namespace}'s fair share is ${share.setMembers} set members and ${share.rules} rules`;
  return {
    object: `NetworkPolicy ${policy.namespace}/${policy.name}`,
    field: 'spec',
    message: `${what} (older policies come first; ${fair}); not enforced: the pods it selects stay isolated and nothing it allows is allowed`,
    severity: 'error',
  };
}
