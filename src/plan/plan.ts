// The planner: desired − observed → the ordered, atomic steps that make the kernel hold exactly what we want.
// Pure: the same plan is the daemon's apply step, `netfence apply`, and `netfence diff`.

import {
  diffByIdentity,
  memberDeltaFrom,
  type Chain,
  type ChainRole,
  type FamilyState,
  type Hook,
  type IpFamily,
  type IpSet,
  type KernelChainName,
} from '../model/index.js';
import {
  createWithMembers,
  declareChainLine,
  deleteChainLine,
  filterTransaction,
  renderChain,
  renderHookArgs,
  renderIpsetOps,
  ruleLine,
  ruleOfLine,
  type IpsetOp,
  type SavedIpSet,
} from '../render/index.js';
import { byNameIn, knownFlags } from './known.js';
import type { ObservedFamily, Ownership } from './observed.js';
import { tempSetName } from './retype.js';
import { sameRule, sameRules } from './rule-identity.js';

export type ChangeObject = 'chain' | 'set' | 'hook';
export type ChangeAction = 'create' | 'update' | 'delete';

export interface Change {
  readonly object: ChangeObject;
  readonly name: string;
  readonly action: ChangeAction;
  readonly before: readonly string[];
  readonly after: readonly string[];
  /** Who the object belongs to, for grouping: `pod ns/name`, `policy ns/name`, `dispatch`, `static`, a set's meaning. */
  readonly owner: string;
}

export interface PlanCounts {
  chainsWritten: number;
  rulesWritten: number;
  chainsDeleted: number;
  hooksWritten: number;
  setsCreated: number;
  setsRewritten: number;
  setsDestroyed: number;
  membersAdded: number;
  membersRemoved: number;
}

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

/** Above this share of changed members, a set is rebuilt in a temp set and swapped in (atomic). */
const SWAP_MIN_CHANGES = 64;

/**
 * `previous`: the state `observed` was derived from (the tracker's last apply, not a kernel read). Chains and
 * sets that are the very same objects as in `previous` are known to be programmed and are skipped unseen,
 * which keeps an incremental plan proportional to the change, not to the ruleset.
 */
export function planFamily(desired: FamilyState, observed: ObservedFamily, own: Ownership, previous?: FamilyState): FamilyPlan {
  // Found without a set of every previous object (known.ts): an incremental plan's cost follows the change.
  const knownSets = knownFlags(desired.ipsets, previous?.ipsets);
  const knownChains = knownFlags(desired.chains, previous?.chains);
  const previousSet = byNameIn(previous?.ipsets);
  const changes: Change[] = [];
  const errors: string[] = [];
  const retype: IpSet[] = [];
  const counts: PlanCounts = {
    chainsWritten: 0,
    rulesWritten: 0,
    chainsDeleted: 0,
    hooksWritten: 0,
    setsCreated: 0,
    setsRewritten: 0,
    setsDestroyed: 0,
    membersAdded: 0,
    membersRemoved: 0,
  };

  // Step 1: sets. New sets are created with their members here (no rule uses them yet); member changes of
  // existing sets are placed once we know whether the rules change too (placeDeltas below).
  const ipsetOps: IpsetOp[] = [];
  const setOps: SetRange[] = [];
  const deltas: SetDelta[] = [];
  for (let i = 0; i < desired.ipsets.length; i++) {
    const set = desired.ipsets[i]!;
    if (knownSets[i] === 1) continue;
    const seen = observed.ipsets.get(set.name);
    const from = ipsetOps.length;
    planSet(set, seen);
    if (ipsetOps.length > from) setOps.push({ set, from, to: ipsetOps.length, rebuildWith: undefined });
  }
  function planSet(set: IpSet, seen: SavedIpSet | undefined): void {
    const owner = `set ${set.description}`;
    if (!seen) {
      ipsetOps.push(...createWithMembers(set));
      changes.push({ object: 'set', name: set.name, action: 'create', before: [], after: set.members, owner });
      counts.setsCreated++;
      counts.membersAdded += set.members.length;
      return;
    }
    if (seen.type !== set.type || seen.family !== set.family) {
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
      counts.setsRewritten++;
      return;
    }
    const { adds, dels } = memberDelta(seen.members, set, previousSet(set.name));
    if (adds.length === 0 && dels.length === 0) return;
    // Observed members are sorted; the lines a diff shows are computed only if someone reads them.
    changes.push(
      lazyLines(
        { object: 'set', name: set.name, action: 'update', owner },
        () => seen.members,
        () => sorted(set.members),
      ),
    );
    counts.membersAdded += adds.length;
    counts.membersRemoved += dels.length;
    deltas.push({ set, maxelem: seen.maxelem, adds, dels });
  }
  const staleSets = staleNames(observed.ipsets, desired.ipsets);
  for (const name of staleSets) {
    changes.push({
      object: 'set',
      name,
      action: 'delete',
      before: observed.ipsets.get(name)!.members,
      after: [],
      owner: 'set no longer needed',
    });
    counts.setsDestroyed++;
  }

  // Step 2: chains and hooks, one transaction.
  const declare: string[] = [];
  const body: string[] = [];
  const tail: string[] = [];
  for (let i = 0; i < desired.chains.length; i++) {
    const chain = desired.chains[i]!;
    if (knownChains[i] === 1) continue;
    const rendered = renderChain(chain);
    const after = rendered.lines.map((l) => ruleOfLine(chain.name, l));
    const before = observed.chains.get(chain.name);
    if (before && sameRules(before, after)) continue;
    declare.push(declareChainLine(chain.name));
    body.push(...rendered.lines);
    changes.push({
      object: 'chain',
      name: chain.name,
      action: before ? 'update' : 'create',
      before: before ?? [],
      after,
      owner: ownerOf(chain),
    });
    counts.chainsWritten++;
    counts.rulesWritten += after.length;
  }
  for (const hookChain of new Set([...desired.hooks.map((h) => h.chain), ...observed.hooks.keys()])) {
    const hookLines = planHooks(
      hookChain,
      desired.hooks.filter((h) => h.chain === hookChain),
      observed.hooks.get(hookChain) ?? [],
    );
    if (!hookLines) continue;
    body.push(...hookLines.lines);
    changes.push({
      object: 'hook',
      name: hookChain,
      action: hookLines.action,
      before: hookLines.before,
      after: hookLines.after,
      owner: 'static',
    });
    counts.hooksWritten++;
  }
  const staleChains = staleNames(observed.chains, desired.chains);
  for (const name of staleChains) {
    // Flush every stale chain first and delete them after: they may refer to each other.
    declare.push(declareChainLine(name));
    tail.push(deleteChainLine(name));
    changes.push({ object: 'chain', name, action: 'delete', before: observed.chains.get(name)!, after: [], owner: 'no longer needed' });
    counts.chainsDeleted++;
  }
  const iptablesRestore = filterTransaction([...declare, ...body, ...tail]);
  const ipsetAfterOps: IpsetOp[] = [];
  const afterSetOps: SetRange[] = [];
  counts.setsRewritten += placeDeltas(
    deltas,
    iptablesRestore !== '',
    own,
    { ops: ipsetOps, ranges: setOps },
    { ops: ipsetAfterOps, ranges: afterSetOps },
  );
  let setSteps: SetStep[] | undefined;
  let afterSetSteps: SetStep[] | undefined;
  const stepsOf = (ops: readonly IpsetOp[], ranges: readonly SetRange[]): SetStep[] =>
    ranges.map(({ set, from, to, rebuildWith }) => ({
      name: set.name,
      restore: renderIpsetOps(ops.slice(from, to)),
      rebuild: rebuildWith ? renderIpsetOps(rebuildOps(set, tempSetName(set, own), rebuildWith())) : undefined,
    }));

  return {
    family: desired.family,
    ipsetOps,
    ipsetRestore: renderIpsetOps(ipsetOps),
    get setSteps() {
      return (setSteps ??= stepsOf(ipsetOps, setOps));
    },
    iptablesRestore,
    ipsetAfterOps,
    ipsetAfterRules: renderIpsetOps(ipsetAfterOps),
    get afterSetSteps() {
      return (afterSetSteps ??= stepsOf(ipsetAfterOps, afterSetOps));
    },
    ipsetDestroy: renderIpsetOps(staleSets.map((name) => ({ op: 'destroy', name }))),
    staleSets,
    changes,
    counts,
    retype,
    errors,
  };
}

/**
 * Names `observed` holds that no desired object has, sorted. Names are unique on both sides, so when every
 * desired name is observed and the counts agree there are none, found without a set of names (the usual sync).
 */
function staleNames(observed: ReadonlyMap<string, unknown>, desired: readonly { readonly name: string }[]): string[] {
  let found = 0;
  for (const d of desired) if (observed.has(d.name)) found++;
  if (found === observed.size) return [];
  const wanted = new Set<string>();
  for (const d of desired) wanted.add(d.name);
  const stale: string[] = [];
  for (const name of observed.keys()) if (!wanted.has(name)) stale.push(name);
  return stale.sort();
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

/** One set's ops in a step (`from`…`to`), and the members a rebuild of it in that step must leave (undefined: none). */
interface SetRange {
  readonly set: IpSet;
  readonly from: number;
  readonly to: number;
  readonly rebuildWith: (() => readonly string[]) | undefined;
}

/** Members an existing set gains and loses in this plan. */
interface SetDelta {
  readonly set: IpSet;
  /** The maxelem the kernel's set was created with, kept when priming it (`create -exist` fails on another). */
  readonly maxelem: number | undefined;
  readonly adds: readonly string[];
  readonly dels: readonly string[];
}

interface Step {
  readonly ops: IpsetOp[];
  readonly ranges: SetRange[];
}

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
function placeDeltas(deltas: readonly SetDelta[], rulesChange: boolean, own: Ownership, before: Step, after: Step): number {
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

/** Our hooks must be exactly the desired ones, inserted ones at the very top, in order. */
function planHooks(
  chain: KernelChainName,
  desired: readonly Hook[],
  observed: readonly { position: number; text: string }[],
): { lines: string[]; action: ChangeAction; before: string[]; after: string[] } | undefined {
  const wantInserted = desired.filter((h) => h.position === 'insert').map(renderHookArgs);
  const wantAppended = desired.filter((h) => h.position === 'append').map(renderHookArgs);
  const before = observed.map((o) => `${o.position}: ${o.text}`);
  const insertedOk = wantInserted.every((text, i) => observed[i]?.position === i + 1 && sameRule(observed[i]!.text, text));
  const appendedOk = sameRules(
    observed.slice(wantInserted.length).map((o) => o.text),
    wantAppended,
  );
  if (insertedOk && appendedOk && observed.length === desired.length) return undefined;
  const lines = [
    ...observed.map((o) => ruleLine('delete', chain, o.text)),
    ...[...wantInserted].reverse().map((text) => ruleLine('insert-first', chain, text)),
    ...wantAppended.map((text) => ruleLine('append', chain, text)),
  ];
  const after = [...wantInserted.map((t, i) => `${i + 1}: ${t}`), ...wantAppended.map((t) => `end: ${t}`)];
  return { lines, action: observed.length === 0 ? 'create' : desired.length === 0 ? 'delete' : 'update', before, after };
}

/**
 * Members to add and delete. When the observed set is the tracker's copy of the previous desired set
 * (same name, same size), the two member lists share their order and mostly their values: walking them
 * in step costs far less than hashing thousands of members for a one-pod change.
 */
function memberDelta(
  observed: readonly string[],
  set: IpSet,
  previous: IpSet | undefined,
): { adds: readonly string[]; dels: readonly string[] } {
  if (previous && previous.members.length === observed.length) {
    // The compiler says what it changed when it patched the set: nothing to walk.
    const recorded = memberDeltaFrom(set, previous);
    if (recorded) return { adds: recorded.added, dels: recorded.removed };
    const { added, removed } = diffByIdentity(previous.members, set.members);
    return { adds: added, dels: removed };
  }
  const have = new Set(observed);
  const want = new Set(set.members);
  return { adds: set.members.filter((m) => !have.has(m)), dels: observed.filter((m) => !want.has(m)) };
}

function lazyLines(
  head: Pick<Change, 'object' | 'name' | 'action' | 'owner'>,
  before: () => readonly string[],
  after: () => readonly string[],
): Change {
  let b: readonly string[] | undefined;
  let a: readonly string[] | undefined;
  return {
    ...head,
    get before() {
      return (b ??= before());
    },
    get after() {
      return (a ??= after());
    },
  };
}

function ownerOf(chain: Chain): string {
  const role: ChainRole = chain.role;
  switch (role.kind) {
    case 'static':
      return 'static';
    case 'dispatch':
      return 'dispatch';
    case 'host-dispatch':
      return 'dispatch';
    case 'workload':
    case 'host-workload':
      return `pod ${role.pod}`;
    case 'policy':
      return `policy ${role.policy}`;
    case 'cluster-policy':
      return `ClusterNetworkPolicy ${role.policy}`;
  }
}

const sorted = (xs: readonly string[]): string[] => [...xs].sort();
