// What `inspect` flags in our chains: the INPUT hook behind a foreign rule, rules netfence did not write as
// they are, and owned chains nothing jumps to.

import { targetOf } from '../render/index.js';
import type { Ruleset } from '../trace/index.js';
import type { InspectProblem } from './report.js';

/** When our INPUT chain exists (ClusterNetworkPolicies), INPUT must jump to it before any foreign rule. */
export function inputHookProblems(ruleset: Ruleset, prefix: string): InspectProblem[] {
  if (!ruleset.chains.get(`${prefix}INPUT`)) return [];
  const input = ruleset.chains.get('INPUT');
  const at = input?.rules.findIndex((r) => targetOf(r.args)?.target === `${prefix}INPUT`) ?? -1;
  if (at < 0)
    return [
      {
        kind: 'missing-hook',
        chain: 'INPUT',
        message: `no rule in INPUT jumps to ${prefix}INPUT: ClusterNetworkPolicy egress to this node is not enforced`,
      },
    ];
  return (input?.rules.slice(0, at) ?? []).map((r, i) => ({
    kind: 'foreign-above-hook' as const,
    chain: 'INPUT',
    ruleIndex: i + 1,
    text: r.text,
    message: 'runs before netfence: it can accept pod traffic to this node before ClusterNetworkPolicy is checked',
  }));
}

/** Rules in our chains that netfence did not write as they are (no hash comment, or parts it never emits). */
export function unexpectedOwnedRules(ruleset: Ruleset, prefix: string): InspectProblem[] {
  const out: InspectProblem[] = [];
  for (const c of ruleset.chains.values()) {
    if (!c.name.startsWith(prefix)) continue;
    c.rules.forEach((r, i) => {
      if (r.hash !== undefined && r.rule) return;
      const message =
        r.hash === undefined
          ? 'owned chain holds a rule without a netfence hash comment (added by hand?)'
          : 'owned but unexpected: netfence cannot parse this rule';
      out.push({ kind: 'owned-unexpected', chain: c.name, ruleIndex: i + 1, text: r.text, message });
    });
  }
  return out;
}

/** Owned chains nothing jumps to: left over from an interrupted apply, or cut loose by a hand edit. */
export function unreferencedChains(ruleset: Ruleset, prefix: string): InspectProblem[] {
  const referenced = new Set<string>();
  for (const c of ruleset.chains.values())
    for (const r of c.rules) {
      const t = targetOf(r.args);
      if (t) referenced.add(t.target);
    }
  return [...ruleset.chains.keys()]
    .filter((name) => name.startsWith(prefix) && !referenced.has(name))
    .map((name) => ({ kind: 'unreferenced-chain' as const, chain: name, message: 'owned chain that no rule jumps to' }));
}
