// Which spec rule a logged packet met. An `nf:alw:` / `nf:cnp:` prefix names its rule by index and by content
// (compile/flow-log.ts ruleId): chains are named by their object, not its content, so a packet logged just before
// an edit (rules reordered, one inserted or removed) would otherwise be explained with whatever rule now sits at
// its index.

import { ruleId } from '../compile/flow-log.js';
import type { ClusterSnapshot, CnpRule, PolicyRule } from '../model/index.js';
import type { PolicyDirection } from '../trace/reasons.js';

/** The rule's index in the policy as it is now, or `changed`: no rule of it has the logged content any more. */
export type LoggedRule = { readonly index: number } | 'changed';

/**
 * The rule at the logged index when its content is the logged one; else the rule with that content wherever it
 * moved; else `changed`. A prefix without identity (the previous version's) is read by its index, as it was then.
 */
export function loggedRule(rules: readonly (PolicyRule | CnpRule)[] | undefined, index: number, id: string | undefined): LoggedRule {
  if (id === undefined) return { index };
  if (!rules) return 'changed';
  const at = rules[index];
  if (at !== undefined && ruleId(at) === id) return { index };
  const moved = rules.findIndex((r) => ruleId(r) === id);
  return moved >= 0 ? { index: moved } : 'changed';
}

/** The rules of a NetworkPolicy (`ns/name`) in one direction, as the cluster now has them. */
export function policyRules(snapshot: ClusterSnapshot, policy: string, direction: PolicyDirection): readonly PolicyRule[] | undefined {
  const p = snapshot.policies.find((x) => `${x.namespace}/${x.name}` === policy);
  return p ? ((direction === 'ingress' ? p.ingress : p.egress) ?? []) : undefined;
}

/** The rules of a ClusterNetworkPolicy in one direction, as the cluster now has them. */
export function clusterPolicyRules(snapshot: ClusterSnapshot, name: string, direction: PolicyDirection): readonly CnpRule[] | undefined {
  const c = snapshot.clusterPolicies?.find((x) => x.name === name);
  return c ? (direction === 'ingress' ? c.ingress : c.egress) : undefined;
}
