// The ruleset the tools read: the filter table of an `iptables-save` dump (or of the restore payload
// `netfence compile` prints; src/render reads both), with clear errors for input that is not one, and the
// naming conventions that tell our chains and comments apart.

import { chainKindOf, KERNEL_CHAINS, readComment, type ChainKind, type CommentDirection, type IpFamily } from '../model/index.js';
import {
  asSaveText,
  IpsetParseError,
  parseIptablesSave,
  parseSavedDump,
  SaveParseError,
  type SavedChain,
  type SavedDump,
  type SavedTable,
} from '../render/index.js';

export type Ruleset = SavedTable;

/** The input cannot be read as a ruleset; the message says what is wrong and what was expected. */
export class RulesetError extends Error {
  override readonly name = 'RulesetError';
}

export const NO_NETFENCE_CHAINS = 'no netfence chains found — is netfence running in this network namespace?';

export interface LoadOptions {
  /** Policy assumed for built-in chains a restore payload uses without declaring (default ACCEPT). */
  readonly builtinPolicy?: 'ACCEPT' | 'DROP';
}

/**
 * The filter table of `text`. Accepts `iptables-save` output and also restore payloads (`-N`, `-I chain n`,
 * rules for undeclared built-in chains), so the output of `netfence compile` can be traced too.
 */
export function loadRuleset(text: string, opts: LoadOptions = {}): Ruleset {
  requireInput(text);
  let tables: Map<string, SavedTable>;
  try {
    tables = parseIptablesSave(asSaveText(text, opts.builtinPolicy));
  } catch (err) {
    throw asRulesetError(err, '');
  }
  return filterRuleset(tables);
}

/**
 * One family's filter table (or restore payload, as loadRuleset) and `ipset save` text parsed together;
 * `source` (`saved dump a.txt`, `live kernel (IPv4)`) prefixes an ipset error.
 */
export function loadSavedDump(family: IpFamily, iptables: string, ipsets: string, source: string, opts: LoadOptions = {}): SavedDump {
  requireInput(iptables);
  try {
    return parseSavedDump(family, iptables, ipsets, opts.builtinPolicy);
  } catch (err) {
    throw asRulesetError(err, source);
  }
}

/** The filter table of parsed tables (a SavedDump's, or loadRuleset's). */
export function filterRuleset(tables: ReadonlyMap<string, SavedTable>): Ruleset {
  const filter = tables.get('filter');
  if (!filter) throw new RulesetError(`no *filter table in the input (tables: ${[...tables.keys()].join(', ') || 'none'})`);
  return filter;
}

function requireInput(iptables: string): void {
  if (iptables.trim() === '') throw new RulesetError('empty input: expected the output of iptables-save');
}

function asRulesetError(err: unknown, source: string): unknown {
  if (err instanceof SaveParseError) return new RulesetError(`not a complete iptables-save dump: ${err.message}`);
  if (err instanceof IpsetParseError) return new RulesetError(`${source}: ${err.message}`);
  return err;
}

/** Throws the operator-facing error when the ruleset holds nothing of ours. */
export function requireOwnedChains(ruleset: Ruleset, prefix: string): void {
  if (![...ruleset.chains.keys()].some((name) => name.startsWith(prefix))) throw new RulesetError(NO_NETFENCE_CHAINS);
}

// What our chain names and comments mean: written and read in src/model (chain-kinds.ts, rule-comments.ts).
export { readComment, type ChainKind } from '../model/index.js';
export type Direction = CommentDirection;

/** Classifies a chain by the names src/compile/names.ts gives (`nf-fw-…`, `nf-fd-…`, …). */
export const chainKind = (name: string, prefix: string): ChainKind => chainKindOf(name, prefix, KERNEL_CHAINS);

/** A few words on what one of our chains is for, read from its kind and its comments. */
export function chainLabel(chain: SavedChain, prefix: string): string {
  const kind = chainKind(chain.name, prefix);
  const meanings = chain.rules.flatMap((r) => (r.comment !== undefined ? [readComment(r.comment)] : []));
  switch (kind) {
    case 'builtin':
      return `built-in, policy ${chain.policy}`;
    case 'foreign':
      return 'not netfence';
    case 'forward':
      return 'netfence entry';
    case 'input':
      return 'netfence entry for local pods to this node (ClusterNetworkPolicy egress)';
    case 'dispatch-host':
      return 'find the local pod sending to this node';
    case 'workload-host': {
      const w = chain.rules.find((r) => r.comment !== undefined && / to its own node: /.test(r.comment));
      return `${w?.comment?.split(' ')[0] ?? 'pod'} to this node`;
    }
    case 'dispatch-from':
      return 'find the sending local pod';
    case 'dispatch-to':
      return 'find the receiving local pod';
    case 'workload-egress':
    case 'workload-ingress': {
      const w = meanings.find((m) => m.kind === 'workload');
      return `${w?.kind === 'workload' ? w.pod : 'pod'} ${kind === 'workload-egress' ? 'egress' : 'ingress'}`;
    }
    case 'policy-ingress':
    case 'policy-egress': {
      const p = meanings.find((m) => m.kind === 'policy-rule' || m.kind === 'policy-empty');
      const name = p && (p.kind === 'policy-rule' || p.kind === 'policy-empty') ? p.policy : '?';
      return `policy ${name} ${kind === 'policy-ingress' ? 'ingress' : 'egress'}`;
    }
    case 'cluster-policy-ingress':
    case 'cluster-policy-egress': {
      const p = meanings.find((m) => m.kind === 'cluster-policy-rule' || m.kind === 'cluster-policy-empty');
      const name = p && (p.kind === 'cluster-policy-rule' || p.kind === 'cluster-policy-empty') ? p.policy : 'ClusterNetworkPolicy ?';
      return `${name} ${kind === 'cluster-policy-ingress' ? 'ingress' : 'egress'}`;
    }
    case 'owned-other':
      return 'netfence (unknown kind)';
  }
}
