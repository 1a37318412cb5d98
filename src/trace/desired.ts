// The tracer's input built straight from a compiled FamilyState, with no kernel in between: FORWARD
// holding only our hooks (policy ACCEPT, as on a node with nothing else in FORWARD), our chains with
// their structured rules, and our ipsets. Strict mode judges conntrack entries against this, so the
// verdict is the one the rules just programmed give a new flow.

import type { Chain, FamilyState, Hook, IpSet, Rule } from '../model/index.js';
import { canonicalRuleForm, joinArgs, ruleArgs, type SavedChain, type SavedIpSet, type SavedRule } from '../render/index.js';
import type { IpSets } from './ipsets.js';
import type { Ruleset } from './ruleset.js';

/**
 * A compiled rule as the tracer reads it. Its iptables words, line and canonical form are made when first read:
 * the tracer reads them only for the rules a packet meets, and a map of the cluster holds every pod's rules while
 * it traces a few pods of each kind.
 */
class DesiredRule implements SavedRule {
  readonly comment?: string;
  private words: readonly string[] | undefined;
  private line: string | undefined;
  private canonical: string | undefined;

  constructor(readonly rule: Rule) {
    if (rule.comment !== undefined) this.comment = rule.comment;
  }

  get args(): readonly string[] {
    return (this.words ??= ruleArgs(this.rule));
  }

  get text(): string {
    return (this.line ??= joinArgs(this.args));
  }

  get form(): string {
    return (this.canonical ??= canonicalRuleForm(this.args));
  }
}

const saved = (rule: Rule): SavedRule => new DesiredRule(rule);

/**
 * A compiled chain as the tracer reads it, its rules wrapped when first read: a map holds every pod's chains
 * and traces through a few pods of each kind, so most chains' rules are never read.
 */
class DesiredChain implements SavedChain {
  readonly name: string;
  readonly policy = '-';
  private wrapped: SavedRule[] | undefined;

  constructor(private readonly chain: Chain) {
    this.name = chain.name;
  }

  get rules(): SavedRule[] {
    return (this.wrapped ??= this.chain.rules.map(saved));
  }
}

/**
 * Saved forms already made, by the compiled object they were made from: a caller reading the states of many
 * nodes (a map of the cluster) gets one saved form of a chain or set the compiler handed every node alike.
 */
export class SavedForms {
  readonly chains = new WeakMap<Chain, SavedChain>();
  readonly sets = new WeakMap<IpSet, SavedIpSet>();
  /**
   * The last state read and what was made of it: the next state with the same hooks and chains (a node of a
   * diff's new cluster that the change did not reach) gets the same ruleset, the same sets the same map.
   */
  last: { readonly hooks: readonly Hook[]; readonly chains: readonly Chain[]; readonly ruleset: Ruleset } | undefined;
  lastSets: { readonly sets: readonly IpSet[]; readonly ipsets: IpSets } | undefined;
}

const sameItems = <T>(a: readonly T[], b: readonly T[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

export function rulesetOfDesired(state: FamilyState, forms?: SavedForms): { ruleset: Ruleset; ipsets: IpSets } {
  const last = forms?.last;
  const ruleset =
    last && last.hooks === state.hooks && sameItems(last.chains, state.chains)
      ? last.ruleset
      : { name: 'filter', chains: chainsOf(state, forms) };
  const lastSets = forms?.lastSets;
  const ipsets = lastSets && sameItems(lastSets.sets, state.ipsets) ? lastSets.ipsets : setsOf(state, forms);
  if (forms) {
    forms.last = { hooks: state.hooks, chains: state.chains, ruleset };
    forms.lastSets = { sets: state.ipsets, ipsets };
  }
  return { ruleset, ipsets };
}

function chainsOf(state: FamilyState, forms: SavedForms | undefined): Map<string, SavedChain> {
  const chains = new Map<string, SavedChain>();
  const hooks = (chain: string, position: 'insert' | 'append') =>
    state.hooks.filter((h) => h.chain === chain && h.position === position).map((h) => saved(h.rule));
  chains.set('FORWARD', { name: 'FORWARD', policy: 'ACCEPT', rules: [...hooks('FORWARD', 'insert'), ...hooks('FORWARD', 'append')] });
  // INPUT (local pods to this node) only when something hooks it: ClusterNetworkPolicy egress.
  if (state.hooks.some((h) => h.chain === 'INPUT'))
    chains.set('INPUT', { name: 'INPUT', policy: 'ACCEPT', rules: [...hooks('INPUT', 'insert'), ...hooks('INPUT', 'append')] });
  for (const chain of state.chains) {
    let form = forms?.chains.get(chain);
    if (!form) {
      form = new DesiredChain(chain);
      forms?.chains.set(chain, form);
    }
    chains.set(chain.name, form);
  }
  return chains;
}

function setsOf(state: FamilyState, forms: SavedForms | undefined): IpSets {
  return new Map<string, SavedIpSet>(
    state.ipsets.map((s) => {
      let form = forms?.sets.get(s);
      if (!form) {
        form = { name: s.name, type: s.type, family: s.family, members: [...s.members] };
        forms?.sets.set(s, form);
      }
      return [s.name, form];
    }),
  );
}
