// Step 1 of a plan, sets: which desired sets are new (created with their members, before any rule uses them),
// which someone recreated with another type (retype.ts), which only gain and lose members (placed around the
// rules by set-order.ts), and which of ours nothing wants any more.

import { diffByIdentity, memberDeltaFrom, type FamilyState, type IpSet } from '../model/index.js';
import { createWithMembers, type IpsetOp, type SavedIpSet } from '../render/index.js';
import { lazyLines, type Change, type PlanCounts } from './change.js';
import type { ObservedFamily } from './observed.js';
import type { SetDelta, SetRange } from './set-order.js';

export interface SetsPlan {
  /** The new sets' ops, and which of them belong to which set. */
  readonly create: { readonly ops: IpsetOp[]; readonly ranges: SetRange[] };
  /** Member changes of existing sets, to be placed around the rules. */
  readonly deltas: readonly SetDelta[];
  /** Sets of ours that exist with another type or family. */
  readonly retype: readonly IpSet[];
  /** Sets of ours nothing wants, by name, sorted. */
  readonly stale: readonly string[];
  readonly changes: readonly Change[];
  readonly counts: Pick<PlanCounts, 'setsCreated' | 'setsRewritten' | 'setsDestroyed' | 'membersAdded' | 'membersRemoved'>;
}

/** `known`: objects of the previous apply, programmed for sure; `previous`: its sets by name. */
export function planSets(
  desired: FamilyState,
  observed: ObservedFamily,
  known: ReadonlySet<object>,
  previous: ReadonlyMap<string, IpSet>,
): SetsPlan {
  const ops: IpsetOp[] = [];
  const ranges: SetRange[] = [];
  const deltas: SetDelta[] = [];
  const retype: IpSet[] = [];
  const changes: Change[] = [];
  let setsCreated = 0;
  let setsRewritten = 0;
  let membersAdded = 0;
  let membersRemoved = 0;
  for (const set of desired.ipsets) {
    if (known.has(set)) continue;
    const seen = observed.ipsets.get(set.name);
    const owner = `set ${set.description}`;
    if (!seen) {
      const from = ops.length;
      ops.push(...createWithMembers(set));
      ranges.push({ set, from, to: ops.length, rebuildWith: undefined });
      changes.push({ object: 'set', name: set.name, action: 'create', before: [], after: set.members, owner });
      setsCreated++;
      membersAdded += set.members.length;
    } else if (seen.type !== set.type || seen.family !== set.family || !sameLearnedOptions(set, seen)) {
      // Someone recreated it with another type: rebuilt by the retype steps before this plan runs.
      retype.push(set);
      changes.push({
        object: 'set',
        name: set.name,
        action: 'update',
        before: [`type ${seen.type}`, ...seen.members],
        after: [`type ${set.type}`, ...sorted(set.members)],
        owner,
      });
      setsRewritten++;
    } else if (!set.learned) {
      // A learned set's members are the DNS agent's, each counting down its own timeout: never diffed, flushed
      // or repaired here (model/dns-egress.ts). Only the set itself and its options are ours.
      const delta = memberDelta(seen, set, previous.get(set.name));
      if (!delta) continue;
      // Observed members are sorted; the lines a diff shows are computed only if someone reads them.
      changes.push(
        lazyLines(
          { object: 'set', name: set.name, action: 'update', owner },
          () => seen.members,
          () => sorted(set.members),
        ),
      );
      membersAdded += delta.adds.length;
      membersRemoved += delta.dels.length;
      deltas.push(delta);
    }
  }
  const desiredSets = new Set(desired.ipsets.map((s) => s.name as string));
  const stale = [...observed.ipsets.keys()].filter((name) => !desiredSets.has(name)).sort();
  for (const name of stale) {
    changes.push({
      object: 'set',
      name,
      action: 'delete',
      before: observed.ipsets.get(name)!.members,
      after: [],
      owner: 'set no longer needed',
    });
  }
  return {
    create: { ops, ranges },
    deltas,
    retype,
    stale,
    changes,
    counts: { setsCreated, setsRewritten, setsDestroyed: stale.length, membersAdded, membersRemoved },
  };
}

/**
 * Whether the kernel's set has the options a learned set is created with (timeout, maxelem, comment); other
 * sets have none of them. Another maxelem or timeout recreates the set (retype.ts): `create -exist` would
 * refuse it, and the learned entries it loses are learned again at the pods' next lookups (fail closed).
 */
function sameLearnedOptions(set: IpSet, seen: SavedIpSet): boolean {
  const learned = set.learned;
  if (!learned) return seen.timeout === undefined && seen.comment === undefined;
  return seen.timeout === learned.timeout && seen.maxelem === learned.maxelem && seen.comment === true;
}

/**
 * Members to add and delete, undefined when none. When the observed set is the tracker's copy of the previous
 * desired set (same name, same size), the two member lists share their order and mostly their values: walking
 * them in step costs far less than hashing thousands of members for a one-pod change.
 */
function memberDelta(seen: SavedIpSet, set: IpSet, previous: IpSet | undefined): SetDelta | undefined {
  const observed = seen.members;
  let adds: readonly string[];
  let dels: readonly string[];
  if (previous && previous.members.length === observed.length) {
    // The compiler says what it changed when it patched the set: nothing to walk.
    const { added, removed } = memberDeltaFrom(set, previous) ?? diffByIdentity(previous.members, set.members);
    adds = added;
    dels = removed;
  } else {
    const have = new Set(observed);
    const want = new Set(set.members);
    adds = set.members.filter((m) => !have.has(m));
    dels = observed.filter((m) => !want.has(m));
  }
  return adds.length === 0 && dels.length === 0 ? undefined : { set, maxelem: seen.maxelem, adds, dels };
}

const sorted = (xs: readonly string[]): string[] => [...xs].sort();
