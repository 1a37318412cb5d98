// ClusterNetworkPolicy `domainNames` in a trace: a rule that matches a pod's learned set (its comment says
// `learned by <pod> for <names>`, model/rule-comments.ts) either allowed the packet because the destination
// is a member the DNS agent learned (then: for which queried name, when, and how long it has left, from the
// member's comment and counting-down timeout), or would have allowed it after a lookup of one of its names
// (every other match of the rule held).

import { parseIp, parseLearnedComment, readComment, type Match, type Rule } from '../model/index.js';
import { savedEntryOf } from '../render/index.js';
import type { IpSets } from './ipsets.js';
import { evaluateMatches } from './match.js';
import type { Packet } from './packet.js';

/** The destination was learned: what the kernel says about it. */
export interface LearnedGrant {
  readonly pod: string;
  readonly address: string;
  /** The queried name and when its answer was seen (seconds since the epoch), from the member's comment. */
  readonly name?: string;
  readonly learnedAt?: number;
  /** Seconds the entry had left when the set was read. */
  readonly remainingSeconds?: number;
}

/** A `domainNames` rule that would allow the packet once the pod looks up one of its names. */
export interface AfterLookup {
  readonly policy: string;
  readonly rule: string;
  readonly pod: string;
  readonly names: readonly string[];
}

/** A rule's names as a sentence says them: `good.example or *.cdn.example` (a comment cut short: `… or another of its names`). */
export const lookupNamesText = (names: readonly string[]): string =>
  (names.at(-1) === '...' ? [...names.slice(0, -1), 'another of its names'] : names).join(' or ');

/**
 * Whether a rule's comment can be a `domainNames` rule's: it names the pod it was learned by
 * (model/rule-comments.ts). A trace asks of every rule a packet misses; most say no without a parse.
 */
export const mayBeLearned = (comment: string | undefined): comment is string => comment !== undefined && comment.includes(' learned by ');

const learnedRule = (comment: string | undefined) => {
  const meaning = mayBeLearned(comment) ? readComment(comment) : undefined;
  return meaning?.kind === 'cluster-policy-rule' && meaning.learned ? { ...meaning, learned: meaning.learned } : undefined;
};

const learnedSetMatch = (rule: Rule): Extract<Match, { kind: 'set' }> | undefined =>
  rule.match.find((m): m is Extract<Match, { kind: 'set' }> => m.kind === 'set' && m.direction === 'dst' && m.negate !== true);

/** The learned member that let `packet` through the rule, when the rule is a `domainNames` one. */
export function learnedGrant(rule: Rule, comment: string | undefined, packet: Packet, ipsets: IpSets): LearnedGrant | undefined {
  const meaning = learnedRule(comment);
  const set = learnedSetMatch(rule);
  if (!meaning || !set) return undefined;
  const dst = parseIp(packet.dst);
  const member = ipsets
    .get(set.set)
    ?.members.map(savedEntryOf)
    .find((e) => {
      const ip = parseIp(e.element);
      return ip !== undefined && dst !== undefined && ip.family === dst.family && ip.value === dst.value;
    });
  const provenance = member?.comment !== undefined ? parseLearnedComment(member.comment) : undefined;
  return {
    pod: meaning.learned.pod,
    address: packet.dst,
    ...(provenance ? { name: provenance.name, learnedAt: provenance.learnedAt } : {}),
    ...(member?.timeout !== undefined ? { remainingSeconds: member.timeout } : {}),
  };
}

/** A `domainNames` rule the packet missed only because its destination is not (or no longer) learned. */
export function afterLookup(
  rule: Rule,
  comment: string | undefined,
  ctx: { readonly packet: Packet; readonly mark: number; readonly ipsets: IpSets },
): AfterLookup | undefined {
  const meaning = learnedRule(comment);
  const set = meaning && learnedSetMatch(rule);
  if (!meaning || !set) return undefined;
  const rest = rule.match.filter((m) => m !== set);
  if (evaluateMatches(rest, ctx).result !== 'match') return undefined;
  return { policy: meaning.policy, rule: `${meaning.rule} ${meaning.action}`, pod: meaning.learned.pod, names: meaning.learned.names };
}
