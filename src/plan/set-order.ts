// Where each existing set's member changes go relative to the rule transaction (docs/dataplane.md, "Order of a
// change"), and each set's ops rendered on their own for when a step as a whole fails.

import type { IpSet } from '../model/index.js';
import { renderIpsetOps, type IpsetOp } from '../render/index.js';
import type { Ownership } from './observed.js';
import { tempSetName } from './retype.js';

/** Above this share of changed members, a set is rebuilt in a temp set and swapped in (atomic). */
const SWAP_MIN_CHANGES = 64;

/** One set's part of step 1, for applying it alone when step 1 as a whole fails. */
export interface SetStep {
  readonly name: string;
  /** This set's lines of `ipsetRestore`. */
  readonly restore: string;
  /**
   * The set rebuilt whole: a temp set with the members this step leaves it holding swapped in (atomic), for when
   * its own lines fail (a member someone added with options the tools refuse to repeat, a set recreated with
   * other options, …). Undefined for a set that did not exist: its lines create it.
   */
  readonly rebuild: string | undefined;
}

/** One set's ops in a step (`from`…`to`), and the members a rebuild of it in that step must leave (undefined: none). */
export interface SetRange {
  readonly set: IpSet;
  readonly from: number;
  readonly to: number;
  readonly rebuildWith: (() => readonly string[]) | undefined;
}

/** Members an existing set gains and loses in this plan. */
export interface SetDelta {
  readonly set: IpSet;
  /** The maxelem the kernel's set was created with, kept when priming it (`create -exist` fails on another). */
  readonly maxelem: number | undefined;
  readonly adds: readonly string[];
  readonly dels: readonly string[];
}

/** One `ipset -exist restore` step: its ops, and which of them belong to which set. */
export interface Step {
  readonly ops: IpsetOp[];
  readonly ranges: SetRange[];
}

/** A member without its options: `10.0.0.5 nomatch` → `10.0.0.5`, the element `ipset` adds and deletes. */
const elementOf = (member: string): string => {
  const space = member.indexOf(' ');
  return space < 0 ? member : member.slice(0, space);
};

/** `set` filled afresh in `temp` with `members` and swapped in: one atomic step from the old members to those. */
const rebuildOps = (set: IpSet, temp: string, members: readonly string[] = set.members): IpsetOp[] => [
  { op: 'create', name: temp, set },
  { op: 'flush', name: temp },
  { op: 'add', name: temp, members },
  { op: 'swap', name: temp, with: set.name },
  { op: 'destroy', name: temp },
];

/** A step's ops set by set: each set's own lines, and its rebuild. */
export const stepsOf = (step: Step, own: Ownership): SetStep[] =>
  step.ranges.map(({ set, from, to, rebuildWith }) => ({
    name: set.name,
    restore: renderIpsetOps(step.ops.slice(from, to)),
    rebuild: rebuildWith ? renderIpsetOps(rebuildOps(set, tempSetName(set, own), rebuildWith())) : undefined,
  }));

/**
 * Where each existing set's member changes go (docs/dataplane.md, "Order of a change"): no intermediate state may
 * allow what neither the old nor the new state allows. A member of a set matched positively widens what rules
 * allow, one of a set matched with `! --match-set` (an ipBlock's excepts) narrows it. So when the rules change in
 * the same plan, the narrowing half goes before the rules and the widening half after them: the old rules then
 * meet at most the old members, the new rules at most the new ones (a rebuild after a refused line keeps to the
 * same: before the rules it leaves the old members minus the narrowing ones). When the rules do not change, both
 * halves go before, narrowing first, and a set with more than half (and at least 64) of its members changed is
 * rebuilt in a temp set and swapped in, atomically. Returns how many sets were rebuilt so.
 */
export function placeDeltas(deltas: readonly SetDelta[], rulesChange: boolean, own: Ownership, before: Step, after: Step): number {
  let swapped = 0;
  const put = (step: Step, set: IpSet, ops: readonly IpsetOp[], rebuildWith: () => readonly string[]): void => {
    const from = step.ops.length;
    step.ops.push(...ops);
    step.ranges.push({ set, from, to: step.ops.length, rebuildWith });
  };
  for (const { set, maxelem, adds, dels } of deltas) {
    const negated = set.negated === true;
    // A member re-added with other options (`10.0.0.5 nomatch` → `10.0.0.5`) is deleted first whatever the set's
    // sense: both name the same element, and a delete after the add would remove it again.
    const readded = new Set(adds.map(elementOf));
    const redels = dels.filter((d) => readded.has(elementOf(d)));
    const otherDels = redels.length > 0 ? dels.filter((d) => !readded.has(elementOf(d))) : dels;
    const del = (members: readonly string[]): IpsetOp[] => (members.length > 0 ? [{ op: 'del', name: set.name, members }] : []);
    const add = (members: readonly string[]): IpsetOp[] => (members.length > 0 ? [{ op: 'add', name: set.name, members }] : []);
    const narrow = negated ? [...del(redels), ...add(adds)] : del(dels);
    const widen = negated ? del(otherDels) : add(adds);
    // Priming with the set's own create line lets ipset batch the lines (limits.md §2); the observed
    // maxelem keeps `-exist` from failing on a set created with another one.
    const prime: IpsetOp = { op: 'create', name: set.name, set, prime: true, ...(maxelem !== undefined ? { maxelem } : {}) };
    const all = () => set.members;
    if (rulesChange) {
      // Between the two steps the set holds the new members without the widening ones (negated: with them).
      const between = (): readonly string[] => {
        if (negated) return [...set.members, ...otherDels];
        const skip = new Set(adds);
        return set.members.filter((m) => !skip.has(m));
      };
      if (narrow.length > 0) put(before, set, [prime, ...narrow], between);
      if (widen.length > 0) put(after, set, [prime, ...widen], all);
    } else if (adds.length + dels.length > Math.max(SWAP_MIN_CHANGES, set.members.length / 2)) {
      put(before, set, rebuildOps(set, tempSetName(set, own)), all);
      swapped++;
    } else {
      put(before, set, [prime, ...narrow, ...widen], all);
    }
  }
  return swapped;
}
