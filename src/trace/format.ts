// A trace as text for an operator's terminal: the rules the packet met, chain by chain, then the
// verdict with the policy (or isolation) that decided it. Every line fits 80 columns.

import type { Packet } from './packet.js';
import { ruleTextWithoutComment } from '../render/index.js';
import { chainLabel, type Ruleset } from './ruleset.js';
import { lookupNamesText, type AfterLookup, type LearnedGrant } from './learned.js';
import type { Allowance, DecidedBy, Step, TraceResult } from './trace.js';
import { isolatedReason } from './reasons.js';
import { wrap } from './wrap.js';

export interface FormatContext {
  readonly ruleset: Ruleset;
  readonly chainPrefix: string;
  /** How each end of the packet was resolved (`default/db`, `local pod`, …), for the header. */
  readonly srcLabel?: string;
  readonly dstLabel?: string;
  /** When the ruleset was read (ms since the epoch): a learned entry's remaining timeout becomes a time of day. */
  readonly now?: number;
}

const RESULT_WORD: Record<Step['result'], string> = { match: 'yes', 'no-match': 'no', 'not-evaluated': '??', policy: 'end' };

export function formatTrace(result: TraceResult, packet: Packet, ctx: FormatContext): string {
  const out: string[] = [];
  const end = (ip: string, label: string | undefined) => (label ? `${ip} (${label})` : ip);
  const state = { NEW: 'new flow', UNTRACKED: 'untracked', INVALID: 'INVALID to conntrack (opens no flow and belongs to none)' }[
    packet.ctstate
  ];
  const what = packet.icmp
    ? packet.proto === 'icmp'
      ? `icmp type ${packet.icmp.type}, ${state}`
      : `icmpv6 type ${packet.icmp.type} hop limit ${packet.icmp.hopLimit}, ${state}`
    : `dport ${packet.dport}, new connection`;
  out.push(...wrap(`${packet.proto} ${end(packet.src, ctx.srcLabel)} -> ${end(packet.dst, ctx.dstLabel)} ${what}`, 'packet  ', '        '));
  const start = startOf(result);
  out.push(
    ...wrap(
      start === 'INPUT'
        ? `enters INPUT in ${packet.inIface}, delivered to this node`
        : `enters ${start} in ${packet.inIface}, leaves out ${packet.outIface}`,
      '        ',
    ),
  );
  out.push('');
  let current: string | undefined;
  for (const step of result.steps) {
    const pad = '  '.repeat(step.depth);
    if (step.chain !== current) {
      current = step.chain;
      const chain = ctx.ruleset.chains.get(step.chain);
      out.push(...wrap(`${step.chain}${chain ? `  (${chainLabel(chain, ctx.chainPrefix)})` : ''}`, pad));
    }
    out.push(...formatStep(step, `${pad}  `));
  }
  out.push('', ...formatVerdict(result), ...learnedLines(result, ctx.now));
  if (result.warnings.length > 0) {
    out.push('', 'warnings:');
    for (const w of result.warnings) out.push(...wrap(w, '  - ', '    '));
  }
  return `${out.join('\n')}\n`;
}

function formatStep(step: Step, pad: string): string[] {
  const head = `${pad}${step.result === 'policy' ? '  ' : `#${step.ruleIndex}`.padEnd(3)} ${RESULT_WORD[step.result].padEnd(3)} `;
  const hang = ' '.repeat(head.length);
  const lines = wrap(step.result === 'policy' ? step.text : ruleTextWithoutComment(step.text), head, hang);
  if (step.comment) lines.push(...wrap(step.comment, `${hang}# `, `${hang}  `));
  if (step.detail) lines.push(...wrap(step.result === 'no-match' ? `(no: ${step.detail})` : `(${step.detail})`, hang));
  return lines;
}

/** The built-in chain the walk started in (FORWARD, or INPUT for a pod's packet to its own node). */
const startOf = (result: TraceResult): string => result.steps.find((s) => s.depth === 0)?.chain ?? 'FORWARD';

export function verdictSentence(result: TraceResult): string {
  const d = result.decidedBy;
  if (result.verdict === 'NO-VERDICT') {
    const after = result.after;
    const how = after ? `${after.verdict} by ${where(after.decidedBy)}` : 'undecided';
    const start = startOf(result);
    const reached = result.hookFound ? 'netfence did not decide' : `netfence is not hooked into ${start}`;
    return `NO-VERDICT: ${reached}; the rest of ${start} does: ${how}`;
  }
  if (!d) return result.verdict;
  if (!d.owned) return `${result.verdict}: by a rule netfence does not own, ${where(d)}`;
  return `${result.verdict}: ${because(d, result.verdict)} (${where(d)})${auditClause(result)}`;
}

/** Audit mode: `; would be DROPPED by shop/default-deny (audit)`, once per audited workload chain met. */
export function auditClause(result: Pick<TraceResult, 'audit'>): string {
  return result.audit
    .map(
      (a) =>
        `; would be ${a.wouldBe} by ${a.policies.length > 0 ? a.policies.map((p) => `${policyWords(p)} (audit)`).join(', ') : `${a.chain} (audit)`}`,
    )
    .join('');
}

const where = (d: DecidedBy): string => (d.ruleIndex === 0 ? `${d.chain} ${d.text}` : `${d.chain} #${d.ruleIndex}`);

/** `policy ns/name`, or `ClusterNetworkPolicy name` as it stands. */
const policyWords = (policy: string): string => (policy.startsWith('ClusterNetworkPolicy ') ? policy : `policy ${policy}`);

function because(d: DecidedBy, verdict: 'ACCEPT' | 'DROP'): string {
  if (d.policy && d.rule) return `${verdict === 'DROP' ? 'denied' : 'allowed'} by ${policyWords(d.policy)} rule ${d.rule}`;
  if (d.pod && d.direction) {
    return verdict === 'ACCEPT'
      ? `${d.pod} is not isolated for ${d.direction}`
      : isolatedReason(d.pod, d.direction, d.policies ?? [], d.invalidPolicies ?? []);
  }
  return d.comment ?? ruleTextWithoutComment(d.text);
}

function formatVerdict(result: TraceResult): string[] {
  const out = wrap(verdictSentence(result), 'verdict ', '        ');
  const shown = result.allowedBy.filter((a) => a.comment !== undefined);
  if (shown.length > 0) {
    // Accepts, and ClusterNetworkPolicy Passes (which hand the packet to the next tier), set bits on the way.
    out.push('allowed on the way:');
    for (const a of shown)
      out.push(...wrap(`${allowanceText(a)} (${a.chain} #${a.ruleIndex})`, `  ${(a.direction ?? '').padEnd(8)} `, '           '));
  }
  return out;
}

function allowanceText(a: Allowance): string {
  if (a.policy && a.rule) return `${policyWords(a.policy)} rule ${a.rule}`;
  if (a.pod && a.direction) return `${a.pod} is not isolated for ${a.direction}`;
  return a.comment ?? '';
}

/** UTC time of day, `12:00:01`. */
const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 19);

/** `198.51.100.10 learned for good.example from x/a's lookup at 12:00:01, until 12:01:01`. */
export function learnedText(g: LearnedGrant, now?: number): string {
  const what = g.name !== undefined ? ` for ${g.name}` : '';
  const when = g.learnedAt !== undefined ? ` at ${clock(g.learnedAt * 1000)}` : '';
  const until =
    g.remainingSeconds === undefined
      ? ''
      : now !== undefined
        ? `, until ${clock(now + g.remainingSeconds * 1000)}`
        : `, ${g.remainingSeconds} s left`;
  return `${g.address} learned${what} from ${g.pod}'s lookup${when}${until}`;
}

/** `ClusterNetworkPolicy p rule egress:0 api Accept, after x/a looks up good.example or *.cdn.example`. */
export function afterLookupText(a: AfterLookup): string {
  return `${policyWords(a.policy)} rule ${a.rule}, after ${a.pod} looks up ${lookupNamesText(a.names)}`;
}

/** Under the verdict: the learned destination that allowed the packet, or the rules a lookup would open. */
function learnedLines(result: TraceResult, now: number | undefined): string[] {
  if (result.verdict === 'ACCEPT') {
    const grants = result.allowedBy.flatMap((a) => (a.learned ? [a.learned] : []));
    return grants.flatMap((g) => wrap(`allowed: ${learnedText(g, now)}`, '        '));
  }
  return (result.afterLookup ?? []).flatMap((a) => wrap(`would be allowed by ${afterLookupText(a)}`, '        '));
}
