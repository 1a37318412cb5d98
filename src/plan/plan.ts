// The planner: desired − observed → the ordered, atomic steps that make the kernel hold exactly what we want.
// Pure: the same plan is the daemon's apply step, `netfence apply`, and `netfence diff`. Each step is its own
// module: sets (plan-sets.ts), rules (plan-chains.ts), and where member changes go around the rules
// (set-order.ts).

import type { FamilyState, IpFamily, IpSet } from '../model/index.js';
import { renderIpsetOps, type IpsetOp } from '../render/index.js';
import type { Change, PlanCounts } from './change.js';
import type { ObservedFamily, Ownership } from './observed.js';
import { planChains } from './plan-chains.js';
import { planSets } from './plan-sets.js';
import { placeDeltas, stepsOf, type SetStep, type Step } from './set-order.js';

export type { Change, PlanCounts } from './change.js';
export type { SetStep } from './set-order.js';

export interface FamilyPlan {
  readonly family: IpFamily;
  /**
   * Step 1, before the rules: new sets with their members, the member changes that narrow what is allowed, and
   * (when no rule changes) every member change and temp-set swap. Ops, and the same as `ipset -exist restore`
   * text (empty: nothing to do).
   */
  readonly ipsetOps: readonly IpsetOp[];
  readonly ipsetRestore: string;
  /** Step 1 set by set, rendered when first read (only after step 1 failed). */
  readonly setSteps: readonly SetStep[];
  /** Step 2, one `iptables-restore --noflush` transaction: changed chains, hooks, stale chains. */
  readonly iptablesRestore: string;
  /** Step 2b, after the rules: the member changes that widen what is allowed, when the rules change too. */
  readonly ipsetAfterOps: readonly IpsetOp[];
  readonly ipsetAfterRules: string;
  /** Step 2b set by set, as `setSteps`. */
  readonly afterSetSteps: readonly SetStep[];
  /** Step 3, `ipset -exist restore`: destroy sets nothing references any more (after every family's rules). */
  readonly ipsetDestroy: string;
  /** The sets `ipsetDestroy` destroys, by name. */
  readonly staleSets: readonly string[];
  readonly changes: readonly Change[];
  readonly counts: PlanCounts;
  /** Sets of ours that exist with another type: recreated first (retype.ts), before the steps above. */
  readonly retype: readonly IpSet[];
  /** What the plan cannot fix by itself (none today; kept for the diff and JSON output). */
  readonly errors: readonly string[];
}

/**
 * `previous`: the state `observed` was derived from (the tracker's last apply, not a kernel read). Chains and
 * sets that are the very same objects as in `previous` are known to be programmed and are skipped unseen,
 * which keeps an incremental plan proportional to the change, not to the ruleset.
 */
export function planFamily(desired: FamilyState, observed: ObservedFamily, own: Ownership, previous?: FamilyState): FamilyPlan {
  const known = new Set<object>(previous ? [...previous.chains, ...previous.ipsets] : []);
  const sets = planSets(desired, observed, known, new Map(previous?.ipsets.map((s) => [s.name as string, s])));
  const chains = planChains(desired, observed, known);
  // Member changes of existing sets go before or after the rules, or both, once we know whether those change.
  const before: Step = sets.create;
  const after: Step = { ops: [], ranges: [] };
  const swapped = placeDeltas(sets.deltas, chains.restore !== '', own, before, after);
  let setSteps: SetStep[] | undefined;
  let afterSetSteps: SetStep[] | undefined;
  return {
    family: desired.family,
    ipsetOps: before.ops,
    ipsetRestore: renderIpsetOps(before.ops),
    get setSteps() {
      return (setSteps ??= stepsOf(before, own));
    },
    iptablesRestore: chains.restore,
    ipsetAfterOps: after.ops,
    ipsetAfterRules: renderIpsetOps(after.ops),
    get afterSetSteps() {
      return (afterSetSteps ??= stepsOf(after, own));
    },
    ipsetDestroy: renderIpsetOps(sets.stale.map((name) => ({ op: 'destroy', name }))),
    staleSets: sets.stale,
    changes: [...sets.changes, ...chains.changes],
    counts: { ...chains.counts, ...sets.counts, setsRewritten: sets.counts.setsRewritten + swapped },
    retype: sets.retype,
    errors: [],
  };
}
