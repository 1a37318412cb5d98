// Walks one new packet through a parsed filter table, from the built-in FORWARD chain, the way the
// kernel would: rules in order, matches ANDed, jump/goto/RETURN with a call stack, MARK --set-xmark,
// and the built-in chain's policy at the end. Pure: the ruleset and ipset members come in as values.

import { AUDIT_PREFIX, type Rule } from '../model/index.js';
import { toRule, type SavedChain, type SavedRule } from '../render/index.js';
import type { IpSets } from './ipsets.js';
import { afterLookup, learnedGrant, mayBeLearned, type AfterLookup, type LearnedGrant } from './learned.js';
import { evaluateMatches } from './match.js';
import type { Packet } from './packet.js';
import { readComment, type Direction, type Ruleset } from './ruleset.js';

export type Verdict = 'ACCEPT' | 'DROP' | 'NO-VERDICT';

export interface StepRef {
  readonly chain: string;
  /** 1-based, as `iptables -L --line-numbers` counts; 0 means the chain's policy. */
  readonly ruleIndex: number;
  /** The saved rule text after `-A <chain>` (or `policy ACCEPT`). */
  readonly text: string;
}

export interface Step extends StepRef {
  /** Call depth: 0 in FORWARD, 1 in a chain it jumped to, … */
  readonly depth: number;
  readonly result: 'match' | 'no-match' | 'not-evaluated' | 'policy';
  /** The first match that failed, why a rule could not be evaluated, or what a match did to the mark. */
  readonly detail?: string;
  readonly owned: boolean;
  readonly comment?: string;
}

/** Who a verdict or an allow bit is attributed to, read from our rule comments. */
export interface Attribution {
  readonly policy?: string;
  /** `ingress:0`: the rule's index in the policy's ingress/egress list. */
  readonly rule?: string;
  readonly pod?: string;
  readonly direction?: Direction;
  readonly comment?: string;
}

export interface DecidedBy extends StepRef, Attribution {
  readonly action: 'ACCEPT' | 'DROP' | 'REJECT';
  /** For an isolation drop: the policies the workload chain consulted (none allowed), and which are invalid. */
  readonly policies?: readonly string[];
  readonly invalidPolicies?: readonly string[];
  /** A rule in a chain netfence owns. */
  readonly owned: boolean;
}

/** A rule that set mark bits on the way (a policy rule allowing, or a pod that is not isolated). */
export interface Allowance extends StepRef, Attribution {
  readonly value: number;
  /** A `domainNames` rule: the learned destination that let the packet through. */
  readonly learned?: LearnedGrant;
}

/** Audit mode: an NFLOG rule the packet met saying the audited objects would decide otherwise. */
export interface AuditNote {
  readonly wouldBe: 'DROPPED' | 'ALLOWED';
  /** The workload chain that judged it twice. */
  readonly chain: string;
  /** The audited policies that chain consults (`ns/name`, or `ClusterNetworkPolicy name`). */
  readonly policies: readonly string[];
  /** The pod and direction that chain judges, from its rule comments. */
  readonly pod?: string;
  readonly direction?: Direction;
}

export interface TraceResult {
  /** NO-VERDICT: the packet fell through netfence's chains (or never reached them); the rest of FORWARD decides. */
  readonly verdict: Verdict;
  readonly decidedBy?: DecidedBy;
  /** With NO-VERDICT: how FORWARD ended after our chains (`UNKNOWN` when a rule could not be evaluated). */
  readonly after?: { readonly verdict: 'ACCEPT' | 'DROP'; readonly decidedBy: DecidedBy };
  readonly allowedBy: readonly Allowance[];
  readonly steps: readonly Step[];
  readonly warnings: readonly string[];
  /** A rule in FORWARD jumps into our chains. */
  readonly hookFound: boolean;
  readonly finalMark: number;
  /** Audit mode: where the audited objects would change the verdict (empty: nowhere). */
  readonly audit: readonly AuditNote[];
  /** `domainNames` rules the packet missed only for want of a learned destination (absent: none). */
  readonly afterLookup?: readonly AfterLookup[];
}

export interface TraceOptions {
  /** Owned chain prefix (default `nf-`). */
  readonly chainPrefix?: string;
  readonly startChain?: string;
  /** Guards against jump loops in a hand-edited ruleset. */
  readonly maxSteps?: number;
  /**
   * False: no steps recorded and no words for the matches that failed (`steps` is empty): a caller that
   * reads only the verdict and who decided it (map, tracing thousands of packets) is spared building them.
   */
  readonly steps?: boolean;
}

interface Frame {
  readonly chain: SavedChain;
  /** The chain is netfence's (its name has the owned prefix). */
  readonly owned: boolean;
  next: number;
  /** Inside audit mode's second pass (the verdict with the audited objects): its allow bits are not the verdict. */
  readonly auditPass?: boolean;
}

type Phase = 'before-hook' | 'netfence' | 'after';

const noRecord = (): void => undefined;

export function tracePacket(ruleset: Ruleset, ipsets: IpSets, packet: Packet, opts: TraceOptions = {}): TraceResult {
  const prefix = opts.chainPrefix ?? 'nf-';
  const start = ruleset.chains.get(opts.startChain ?? 'FORWARD');
  if (!start) throw new Error(`the ruleset has no ${opts.startChain ?? 'FORWARD'} chain`);
  const owned = (name: string): boolean => name.startsWith(prefix);
  const steps: Step[] = [];
  const warnings: string[] = [];
  const allowedBy: Allowance[] = [];
  const audit: AuditNote[] = [];
  const lookups: AfterLookup[] = [];
  const hookFound = start.rules.some((r) => targetChain(r) !== undefined && owned(targetChain(r)!));
  const frames: Frame[] = [{ chain: start, owned: owned(start.name), next: 0 }];
  let mark = packet.mark ?? 0;
  let phase: Phase = 'before-hook';
  const maxSteps = opts.maxSteps ?? 10000;
  const quiet = opts.steps === false;
  let walked = 0;
  // One context for every rule of the walk (the mark follows the packet's).
  const ctx = { packet, mark, ipsets, quiet };

  const finish = (decided: DecidedBy): TraceResult => {
    const base = { allowedBy, steps, warnings, hookFound, finalMark: mark, audit, ...(lookups.length > 0 ? { afterLookup: lookups } : {}) };
    // A foreign rule above our hook takes the decision away from us; say so rather than hide it in NO-VERDICT.
    const aboveHook = !decided.owned && phase === 'before-hook' && hookFound && decided.ruleIndex > 0;
    if (aboveHook)
      warnings.push(
        `decided by a foreign rule above the netfence hook (${decided.chain} #${decided.ruleIndex}): netfence never saw this packet`,
      );
    if (decided.owned || aboveHook) return { ...base, verdict: decided.action === 'ACCEPT' ? 'ACCEPT' : 'DROP', decidedBy: decided };
    return { ...base, verdict: 'NO-VERDICT', after: { verdict: decided.action === 'ACCEPT' ? 'ACCEPT' : 'DROP', decidedBy: decided } };
  };

  while (frames.length > 0) {
    if ((quiet ? walked : steps.length) >= maxSteps) {
      warnings.push(`stopped after ${maxSteps} steps: the chains loop`);
      return { verdict: 'NO-VERDICT', allowedBy, steps, warnings, hookFound, finalMark: mark, audit };
    }
    const frame = frames[frames.length - 1]!;
    const chain = frame.chain;
    const depth = frames.length - 1;
    const isOwned = frame.owned;
    const saved = chain.rules[frame.next];
    if (!saved) {
      frames.pop();
      if (frames.length === 0) return finish(policyDecision(chain, depth, steps));
      if (isOwned && !frames[frames.length - 1]!.owned) phase = 'after';
      continue;
    }
    const ruleIndex = ++frame.next;
    walked++;
    const comment = saved.comment;
    const rule = saved.rule ?? toRule(saved.args);
    const record = quiet
      ? noRecord
      : (result: Step['result'], detail?: string) =>
          steps.push({
            ...refOf(chain, ruleIndex, saved),
            depth,
            result,
            owned: isOwned,
            ...(detail !== undefined ? { detail } : {}),
            ...(comment !== undefined ? { comment } : {}),
          });
    if (!rule) {
      record('not-evaluated', 'netfence cannot read this rule');
      warnings.push(notEvaluated(refOf(chain, ruleIndex, saved), 'a match or target the tracer does not model', phase));
      continue;
    }
    const matched = evaluateMatches(rule.match, ctx);
    if (matched.result === 'no-match') {
      record('no-match', matched.failed);
      // Audit mode's second pass judges with the audited objects: their rules open nothing, a lookup neither.
      // (Only a `domainNames` rule can be missed for want of a lookup: other rules are passed by at once.)
      const judged = isOwned && mayBeLearned(comment) && !frame.auditPass && !inAuditPass(chain, ruleIndex - 1);
      const missed = judged ? afterLookup(rule, comment, ctx) : undefined;
      // One rule is one alternative per protocol, and audit mode judges the enforced tiers again for the flow log: named once.
      if (missed && !lookups.some((l) => l.policy === missed.policy && l.rule === missed.rule && l.pod === missed.pod))
        lookups.push(missed);
      continue;
    }
    if (matched.result === 'unknown') {
      record('not-evaluated', matched.why);
      warnings.push(notEvaluated(refOf(chain, ruleIndex, saved), matched.why, phase));
      continue;
    }
    const action = rule.action;
    switch (action.kind) {
      case 'accept':
      case 'drop':
      case 'reject': {
        record('match');
        const verb = action.kind === 'accept' ? 'ACCEPT' : action.kind === 'drop' ? 'DROP' : 'REJECT';
        const who = (verb === 'DROP' && isOwned ? deniedInCopy(chain, allowedBy) : undefined) ?? attribute(saved, rule, allowedBy);
        // An isolation drop: name every policy the pod's chain consulted, as the flow log does.
        const selecting = verb !== 'ACCEPT' && who.pod !== undefined && isOwned ? selectingPolicies(chain, ruleset) : {};
        return finish({ ...refOf(chain, ruleIndex, saved), action: verb, owned: isOwned, ...who, ...selecting });
      }
      case 'set-mark': {
        mark = ((mark & ~action.mask) ^ action.value) >>> 0;
        ctx.mark = mark;
        record('match', `mark is now 0x${mark.toString(16)}`);
        if (action.value !== 0 && !frame.auditPass && !inAuditPass(chain, ruleIndex - 1)) {
          const learned = learnedGrant(rule, comment, packet, ipsets);
          allowedBy.push({
            ...refOf(chain, ruleIndex, saved),
            value: action.value,
            ...attributionOf(comment),
            ...(learned ? { learned } : {}),
          });
        }
        break;
      }
      case 'nflog': {
        // Not a verdict: the packet is copied to the flow log and goes on to the next rule.
        record('match', `logged to NFLOG group ${action.group}`);
        const wouldBe = action.prefix.startsWith(AUDIT_PREFIX.wouldDeny)
          ? 'DROPPED'
          : action.prefix.startsWith(AUDIT_PREFIX.wouldAllow)
            ? 'ALLOWED'
            : undefined;
        if (wouldBe) audit.push({ wouldBe, chain: chain.name, policies: auditedPolicies(chain, ruleset), ...judgedBy(chain) });
        break;
      }
      case 'nfqueue': {
        // Held for the DNS agent, which releases every answer unchanged (docs/dns-egress-design.md): accepted.
        record('match', `held on NFQUEUE ${action.queue}, then released`);
        return finish({ ...refOf(chain, ruleIndex, saved), action: 'ACCEPT', owned: isOwned, ...attributionOf(comment) });
      }
      case 'return':
        record('match');
        frames.pop();
        if (frames.length === 0) return finish(policyDecision(chain, depth, steps));
        if (isOwned && !frames[frames.length - 1]!.owned) phase = 'after';
        break;
      case 'jump':
      case 'goto': {
        const target = ruleset.chains.get(action.target);
        if (!target) {
          record('not-evaluated', `chain ${action.target} does not exist`);
          warnings.push(notEvaluated(refOf(chain, ruleIndex, saved), `target chain ${action.target} is missing`, phase));
          break;
        }
        record('match');
        const targetOwned = owned(target.name);
        if (targetOwned && !isOwned) phase = 'netfence';
        // goto: the target replaces this chain, so its RETURN goes back to whoever called this chain.
        if (action.kind === 'goto') frames.pop();
        frames.push({
          chain: target,
          owned: targetOwned,
          next: 0,
          ...(frame.auditPass || inAuditPass(chain, ruleIndex - 1) ? { auditPass: true } : {}),
        });
        break;
      }
    }
  }
  throw new Error('unreachable: the walk ends at a verdict or a chain policy');
}

/**
 * Audit mode at a pod some CNP selects, with flow logs off (compile/workload-chains.ts auditedTieredWorkloadChain):
 * the enforced pass ran through verdict-only copies, whose Deny only sets a bit, and the chain's one DROP comes
 * after both passes. The last bit the enforced pass set decided: when that was a CNP Deny, the drop is that rule's
 * (the audited pass's bits are not recorded). Undefined elsewhere: the DROP speaks for itself.
 */
function deniedInCopy(chain: SavedChain, allowedBy: readonly Allowance[]): Attribution | undefined {
  if (enforcedVerdictAt(chain) < 0) return undefined;
  const last = allowedBy.at(-1);
  const meaning = last?.comment !== undefined ? readComment(last.comment) : undefined;
  if (meaning?.kind !== 'cluster-policy-rule' || (meaning.action !== 'Deny' && meaning.failsClosed !== true)) return undefined;
  return attributionOf(last!.comment);
}

/**
 * selectingPolicies per chain, read once per ruleset (a map's traces end at the same isolation drops again and
 * again). Read again when the chain's rules are another array or another length, as auditSplit.
 */
const selecting = new WeakMap<
  SavedChain,
  {
    readonly ruleset: Ruleset;
    readonly rules: readonly SavedRule[];
    readonly length: number;
    readonly policies: readonly string[];
    readonly invalidPolicies: readonly string[];
  }
>();

/** The policies a workload chain jumps to, named by their chains' comments; invalid ones say so there. */
function selectingPolicies(chain: SavedChain, ruleset: Ruleset): { policies: string[]; invalidPolicies: string[] } {
  let known = selecting.get(chain);
  if (known?.ruleset !== ruleset || known.rules !== chain.rules || known.length !== chain.rules.length) {
    known = { ruleset, rules: chain.rules, length: chain.rules.length, ...readSelectingPolicies(chain, ruleset) };
    selecting.set(chain, known);
  }
  // Copies: each verdict owns its lists.
  return { policies: [...known.policies], invalidPolicies: [...known.invalidPolicies] };
}

function readSelectingPolicies(chain: SavedChain, ruleset: Ruleset): { policies: string[]; invalidPolicies: string[] } {
  const policies: string[] = [];
  const invalidPolicies: string[] = [];
  // In audit mode only the policies of the enforced pass isolate the pod.
  const split = enforcedVerdictAt(chain);
  for (const r of split < 0 ? chain.rules : chain.rules.slice(0, split)) {
    const target = targetChain(r);
    const rules = target !== undefined ? ruleset.chains.get(target)?.rules : undefined;
    if (!rules) continue;
    for (const pr of rules) {
      const meaning = pr.comment !== undefined ? readComment(pr.comment) : undefined;
      if (meaning?.kind !== 'policy-rule' && meaning?.kind !== 'policy-empty') continue;
      if (!policies.includes(meaning.policy)) policies.push(meaning.policy);
      if (meaning.kind === 'policy-empty' && meaning.why.startsWith('invalid') && !invalidPolicies.includes(meaning.policy))
        invalidPolicies.push(meaning.policy);
      break;
    }
  }
  return { policies, invalidPolicies };
}

/** Where audit mode splits a chain (enforcedVerdictAt, inAuditPass), read once per chain: every packet asks. */
const auditSplits = new WeakMap<
  SavedChain,
  { readonly rules: readonly SavedRule[]; readonly length: number; readonly start: number; readonly restore: number }
>();
function auditSplit(chain: SavedChain): { readonly start: number; readonly restore: number } {
  const known = auditSplits.get(chain);
  if (known && known.rules === chain.rules && known.length === chain.rules.length) return known;
  const start = chain.rules.findIndex(
    (r) => r.comment !== undefined && /(^| )(enforced verdict|not isolated when enforced)$/.test(r.comment),
  );
  const restore =
    start < 0
      ? -1
      : chain.rules.findIndex((r, i) => i > start && r.comment !== undefined && / ?audited allow not enforced$/.test(r.comment));
  const split = { rules: chain.rules, length: chain.rules.length, start, restore };
  auditSplits.set(chain, split);
  return split;
}

/** The rule that saves the enforced verdict in a workload chain in audit mode (compile/workload-chains.ts); -1 elsewhere. */
const enforcedVerdictAt = (chain: SavedChain): number => auditSplit(chain).start;

/**
 * Whether rule `index` of `chain` belongs to audit mode's second pass: after the enforced verdict is saved
 * and before it is restored (the rule commented `audited allow not enforced`, else the chain's last rule).
 */
function inAuditPass(chain: SavedChain, index: number): boolean {
  const { start, restore } = auditSplit(chain);
  if (start < 0 || index <= start) return false;
  return index < (restore >= 0 ? restore : chain.rules.length - 1);
}

/**
 * The audited policies of a workload chain in audit mode: the chains it consults after its enforced verdict
 * is saved (the rule commented `enforced verdict` or `not isolated when enforced`) and not before.
 */
function auditedPolicies(chain: SavedChain, ruleset: Ruleset): string[] {
  const split = enforcedVerdictAt(chain);
  const before = new Set(chain.rules.slice(0, Math.max(split, 0)).flatMap((r) => targetChain(r) ?? []));
  const out: string[] = [];
  for (const r of chain.rules.slice(split + 1)) {
    const target = targetChain(r);
    if (target === undefined || before.has(target)) continue;
    for (const pr of ruleset.chains.get(target)?.rules ?? []) {
      const meaning = pr.comment !== undefined ? readComment(pr.comment) : undefined;
      const policy =
        meaning?.kind === 'policy-rule' || meaning?.kind === 'policy-empty'
          ? meaning.policy
          : meaning?.kind === 'cluster-policy-rule' || meaning?.kind === 'cluster-policy-empty'
            ? meaning.policy
            : undefined;
      if (policy === undefined) continue;
      if (!out.includes(policy)) out.push(policy);
      break;
    }
  }
  return out;
}

/** The pod and direction a workload chain judges, read from its first workload comment. */
function judgedBy(chain: SavedChain): { pod?: string; direction?: Direction } {
  for (const r of chain.rules) {
    const meaning = r.comment !== undefined ? readComment(r.comment) : undefined;
    if (meaning?.kind === 'workload') return { pod: meaning.pod, direction: meaning.direction };
  }
  return {};
}

function targetChain(saved: SavedRule): string | undefined {
  const action = (saved.rule ?? toRule(saved.args))?.action;
  return action && (action.kind === 'jump' || action.kind === 'goto') ? action.target : undefined;
}

/** A rule as steps and verdicts name it: made when read (a step, a decision, an allowance), not for every rule walked past. */
const refOf = (chain: SavedChain, ruleIndex: number, saved: SavedRule): StepRef => ({ chain: chain.name, ruleIndex, text: saved.text });

/** The built-in chain's policy decides when its last rule did not. */
function policyDecision(chain: SavedChain, depth: number, steps: Step[]): DecidedBy {
  const text = `policy ${chain.policy}`;
  steps.push({ chain: chain.name, ruleIndex: 0, text, depth, result: 'policy', owned: false });
  const action = chain.policy === 'DROP' ? 'DROP' : 'ACCEPT';
  return { chain: chain.name, ruleIndex: 0, text, action, owned: false };
}

function notEvaluated(ref: StepRef, why: string, phase: Phase): string {
  const where = `${ref.chain} #${ref.ruleIndex} not evaluated (${why})`;
  if (phase === 'before-hook')
    return `${where}: it sits above the netfence hook; if it matches, it could decide this packet before netfence sees it`;
  return `${where}: assumed not to match`;
}

function attributionOf(comment: string | undefined): Attribution {
  if (comment === undefined) return {};
  const meaning = readComment(comment);
  switch (meaning.kind) {
    case 'policy-rule':
      return { policy: meaning.policy, rule: meaning.rule, direction: meaning.direction, comment };
    case 'policy-empty':
      return { policy: meaning.policy, comment };
    case 'workload':
      return { pod: meaning.pod, direction: meaning.direction, comment };
    case 'cluster-policy-rule':
      return { policy: meaning.policy, rule: `${meaning.rule} ${meaning.action}`, direction: meaning.direction, comment };
    case 'cluster-policy-empty':
      return { policy: meaning.policy, direction: meaning.direction, comment };
    case 'other':
      return { comment };
  }
}

/**
 * A final ACCEPT that tests mark bits is attributed to the last rule that set those bits: that is the
 * policy rule (or the "not isolated" rule) that allowed the packet. Anything else speaks for itself.
 */
function attribute(saved: SavedRule, rule: Rule, allowedBy: readonly Allowance[]): Attribution {
  const markMatch = rule.match.find((m) => m.kind === 'mark');
  if (rule.action.kind === 'accept' && markMatch?.kind === 'mark') {
    const bits = markMatch.value & markMatch.mask;
    const setter = [...allowedBy].reverse().find((a) => (a.value & bits) !== 0);
    if (setter) {
      const { chain: _c, ruleIndex: _r, text: _t, value: _v, ...who } = setter;
      return who;
    }
  }
  return attributionOf(saved.comment);
}
