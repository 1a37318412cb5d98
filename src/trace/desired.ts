// The tracer's input built straight from a compiled FamilyState, with no kernel in between: FORWARD
// holding only our hooks (policy ACCEPT, as on a node with nothing else in FORWARD), our chains with
// their structured rules, and our ipsets. Strict mode judges conntrack entries against this, so the
// verdict is the one the rules just programmed give a new flow.

import type { FamilyState, Rule } from '../model/index.js';
import { canonicalRuleForm, joinArgs, ruleArgs, type SavedChain, type SavedIpSet, type SavedRule } from '../render/index.js';
import type { IpSets } from './ipsets.js';
import type { Ruleset } from './ruleset.js';

const saved = (rule: Rule): SavedRule => {
  const args = ruleArgs(rule);
  return {
    text: joinArgs(args),
    args,
    rule,
    ...(rule.comment !== undefined ? { comment: rule.comment } : {}),
    get form() {
      return canonicalRuleForm(args);
    },
  };
};

export function rulesetOfDesired(state: FamilyState): { ruleset: Ruleset; ipsets: IpSets } {
  const chains = new Map<string, SavedChain>();
  const hooks = (chain: string, position: 'insert' | 'append') =>
    state.hooks.filter((h) => h.chain === chain && h.position === position).map((h) => saved(h.rule));
  chains.set('FORWARD', { name: 'FORWARD', policy: 'ACCEPT', rules: [...hooks('FORWARD', 'insert'), ...hooks('FORWARD', 'append')] });
  // INPUT (local pods to this node) only when something hooks it: ClusterNetworkPolicy egress.
  if (state.hooks.some((h) => h.chain === 'INPUT'))
    chains.set('INPUT', { name: 'INPUT', policy: 'ACCEPT', rules: [...hooks('INPUT', 'insert'), ...hooks('INPUT', 'append')] });
  for (const chain of state.chains) chains.set(chain.name, { name: chain.name, policy: '-', rules: chain.rules.map(saved) });
  const ipsets = new Map<string, SavedIpSet>(
    state.ipsets.map((s) => [s.name, { name: s.name, type: s.type, family: s.family, members: [...s.members] }]),
  );
  return { ruleset: { name: 'filter', chains }, ipsets };
}
