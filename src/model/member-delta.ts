// What a set's members changed by between two compiles, said by the compiler that made the change, so
// the planner and the tracker follow a one-pod change without walking a set of tens of thousands.

import type { IpSet } from './dataplane.js';

export interface MemberDelta {
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

interface Recorded extends MemberDelta {
  // Weak: a set must not keep every earlier version of itself alive through its deltas.
  readonly from: WeakRef<IpSet>;
}

const deltas = new WeakMap<IpSet, Recorded>();

/** Records that `set` is `from` with `added` put in and `removed` taken out (each a member of one side only). */
export function recordMemberDelta(set: IpSet, from: IpSet, delta: MemberDelta): void {
  deltas.set(set, { from: new WeakRef(from), added: delta.added, removed: delta.removed });
}

/** The recorded change from `from` to `set`; undefined unless `set` was made from exactly that set. */
export function memberDeltaFrom(set: IpSet, from: IpSet): MemberDelta | undefined {
  const recorded = deltas.get(set);
  return recorded?.from.deref() === from ? recorded : undefined;
}

/** The set `set` was made from with its recorded change, while that set is still alive. */
export function recordedMemberDelta(set: IpSet): { readonly from: IpSet; readonly delta: MemberDelta } | undefined {
  const recorded = deltas.get(set);
  const from = recorded?.from.deref();
  return recorded && from ? { from, delta: recorded } : undefined;
}

/**
 * `sorted` (ordered by `compare`) with `gone` taken out and `come` put in, each found by binary search: the
 * same array when nothing moved, else one copy with the edits spliced in; never a re-sort. `gone` and `come`
 * must not share a member. Also what actually changed (a member already in, or already out, is no change).
 */
export function editSorted(
  sorted: readonly string[],
  gone: Iterable<string>,
  come: Iterable<string>,
  compare: (a: string, b: string) => number,
): { readonly members: readonly string[]; readonly delta: MemberDelta } {
  const removedAt: number[] = [];
  const added: { at: number; member: string }[] = [];
  for (const m of gone) {
    const at = lowerBound(sorted, m, compare);
    if (sorted[at] === m) removedAt.push(at);
  }
  for (const m of come) {
    const at = lowerBound(sorted, m, compare);
    if (sorted[at] !== m) added.push({ at, member: m });
  }
  if (removedAt.length === 0 && added.length === 0) return { members: sorted, delta: NO_CHANGE };
  removedAt.sort((a, b) => a - b);
  // Members put in before the same index go in their own order.
  added.sort((a, b) => a.at - b.at || compare(a.member, b.member));
  const delta = { added: added.map((a) => a.member), removed: removedAt.map((at) => sorted[at]!) };
  if (removedAt.length + added.length <= FEW_EDITS) return { members: spliced(sorted, removedAt, added), delta };
  const out = new Array<string>(sorted.length - removedAt.length + added.length);
  let o = 0;
  let i = 0;
  let r = 0;
  for (const { at, member } of added) {
    for (; i < at; i++)
      if (removedAt[r] === i) r++;
      else out[o++] = sorted[i]!;
    out[o++] = member;
  }
  for (; i < sorted.length; i++)
    if (removedAt[r] === i) r++;
    else out[o++] = sorted[i]!;
  return { members: out, delta };
}

/**
 * Up to this many edits are spliced into a copy: the copy and each splice are block moves inside V8, several
 * times faster than placing every member one by one, which pays off on sets of tens of thousands.
 */
const FEW_EDITS = 8;

/** A copy of `sorted` with the members at `removedAt` taken out and `added` put in (both in index order). */
function spliced(sorted: readonly string[], removedAt: readonly number[], added: readonly { at: number; member: string }[]): string[] {
  const out = sorted.slice();
  // From the highest index down, so every index still refers to `sorted`; at an index both removed and
  // added before, the removal goes first (it is of the member at that index, the insertion is before it).
  let r = removedAt.length - 1;
  let a = added.length - 1;
  while (r >= 0 || a >= 0) {
    if (r >= 0 && (a < 0 || removedAt[r]! >= added[a]!.at)) out.splice(removedAt[r--]!, 1);
    else {
      // Several members put in at one index: the last in order goes in first, the others before it.
      out.splice(added[a]!.at, 0, added[a--]!.member);
    }
  }
  return out;
}

const NO_CHANGE: MemberDelta = { added: [], removed: [] };

/** The first index whose member is not below `m`. */
function lowerBound(sorted: readonly string[], m: string, compare: (a: string, b: string) => number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(sorted[mid]!, m) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
