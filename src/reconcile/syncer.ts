// The desired-against-programmed tracker (Felix Table, kube-proxy needFullSync): it remembers what it
// last programmed, plans against that, and re-reads the kernel only when it has reason to doubt it
// (start, drift timer, any failure).

import type { DesiredState, FamilyState, IpFamily } from '../model/index.js';
import {
  expectedAfter,
  expectedObserved,
  planFamily,
  retypeSteps,
  type FamilyPlan,
  type ObservedFamily,
  type Ownership,
  type SetStep,
} from '../plan/index.js';
import { writesIpsetLines, type IpsetOp } from '../render/index.js';
import { KernelReads } from './kernel-reads.js';
import type { KernelPort, SyncLogger } from './kernel-port.js';
import { applySets, destroySet, destroyStaleSets, SetsNotProgrammedError, type FailedSet } from './set-writes.js';

export type { KernelPort, SyncLogger } from './kernel-port.js';

export interface SyncResult {
  readonly plans: readonly FamilyPlan[];
  /** True when the kernel was read back (full check) rather than trusted from the last apply. */
  readonly readKernel: boolean;
  /** Changes found against the kernel that our own last apply did not explain: someone else's edits. */
  readonly drift: boolean;
  /** Stale sets the kernel would not let go of yet (still referenced); `destroyLeftovers` retries them. */
  readonly undestroyed?: readonly string[];
}

/**
 * A read taken ahead of the sync that uses it, with how many writes preceded it and, for the drift check's
 * read, what we then believed the kernel held (undefined when we did not know).
 */
interface EarlierRead {
  readonly observed: ReadonlyMap<IpFamily, ObservedFamily>;
  readonly writes: number;
  readonly belief?: ReadonlyMap<IpFamily, FamilyState> | undefined;
}

export class Syncer {
  /**
   * What we last programmed, per family: the planner skips unchanged objects by identity against it, and what
   * the kernel should hold (`programmedOf`) is derived from it when a sync first needs it. Not after every
   * write: a one-shot `apply` never needs it, and it renders every chain and sorts every set once more. A sync
   * planned against that derivation patches it with its own changes instead (expectedAfter), which is what
   * keeps a one-pod change under churn from costing a walk of the whole ruleset.
   */
  private lastDesired = new Map<IpFamily, FamilyState>();
  private readonly expected = new WeakMap<FamilyState, ObservedFamily>();
  private inSync = false;
  /** Reads of the kernel, parsed unless unchanged, and whether one shows what we programmed. */
  private readonly reads: KernelReads;
  private given: Promise<EarlierRead> | undefined;
  /** Kernel writes so far: a read taken before the last of them no longer shows the kernel as it is. */
  private writes = 0;
  /**
   * Writes and the drift check's read-ahead take turns (each waits for the other to finish), so that read
   * shows the kernel exactly as it was between two writes, never half of one.
   */
  private kernelTurn: Promise<unknown> = Promise.resolve();
  private readonly kernel: KernelPort;
  /**
   * Stale sets the last sync could not destroy, and what it programmed otherwise. iptables-nft drops a rule's
   * set reference asynchronously, so a destroy right after the rule went can fail with "in use"; once the
   * retries destroy them, the kernel holds exactly `desired` again and no re-read is needed.
   */
  private leftovers: { readonly names: readonly string[]; readonly desired: DesiredState; readonly clean: boolean } | undefined;

  constructor(
    kernel: KernelPort,
    private readonly own: Ownership,
    private readonly logger: SyncLogger,
  ) {
    const written = (): void => void this.writes++;
    this.kernel = {
      saveFilter: (family) => kernel.saveFilter(family),
      ipsetSave: () => kernel.ipsetSave(),
      supports: (family) => kernel.supports(family),
      restoreFilter: (family, text) => kernel.restoreFilter(family, text).finally(written),
      ipsetRestore: (text) => kernel.ipsetRestore(text).finally(written),
      ...(kernel.ipsetApply ? { ipsetApply: (ops: readonly IpsetOp[]) => kernel.ipsetApply!(ops).finally(written) } : {}),
    };
    this.reads = new KernelReads(this.kernel, own);
  }

  /** Forget what we believe is programmed: the next sync reads the kernel first. */
  markOutOfSync(reason: string): void {
    if (this.inSync) this.logger.debug('kernel state will be re-read', { reason });
    this.inSync = false;
  }

  /**
   * The next read (planOnly, or a sync that reads) is this one, taken earlier: a one-shot command starts
   * reading the kernel before it compiles. Used once, unless this syncer writes first (then it is dropped);
   * its failure is thrown by that read.
   */
  useRead(observed: Promise<ReadonlyMap<IpFamily, ObservedFamily>>): void {
    const writes = this.writes;
    this.given = observed.then((o) => ({ observed: o, writes }));
    this.given.catch(() => undefined);
  }

  /**
   * Read the kernel now, for the next sync that reads; resolves once read. The daemon's drift check: at
   * 50,000 pods the tools take ~0.5 s, and changes keep being programmed meanwhile instead of waiting
   * (a write waits only while the tools print, not while their output is parsed). The read remembers what
   * we believed programmed when it was taken: under churn changes are written before the drift check
   * runs, and the read still proves the kernel held that belief, so the check needs no second read.
   */
  async readAhead(): Promise<void> {
    const families = this.families();
    const taken = this.inTurn(async () => {
      const writes = this.writes;
      const belief = this.inSync && families.every((f) => this.lastDesired.has(f)) ? new Map(this.lastDesired) : undefined;
      return { texts: await this.reads.texts(families), writes, belief };
    });
    this.given = taken.then(({ texts, writes, belief }) => ({ observed: this.reads.parse(families, texts), writes, belief }));
    this.given.catch(() => undefined);
    await this.given.catch(() => undefined);
  }

  /** Read the kernel and plan, without writing (dry run / diff). */
  async planOnly(desired: DesiredState): Promise<FamilyPlan[]> {
    const families = this.families();
    const observed = await this.read(families);
    return families.map((family) => planFamily(desired[family === 4 ? 'v4' : 'v6'], observed.get(family)!, this.own));
  }

  /**
   * Make the kernel hold `desired`. Order (DESIGN §5): sets, then one iptables transaction per family (with the
   * member changes that widen what is allowed after it), then stale sets. A failing step throws and leaves the state before it; the next sync re-reads.
   */
  async sync(desired: DesiredState, opts: { readKernel?: boolean; afterRetype?: boolean } = {}): Promise<SyncResult> {
    const families = this.families();
    const readKernel = opts.readKernel === true || !this.inSync || families.some((f) => !this.lastDesired.has(f));
    const read = readKernel ? await this.readForSync(families) : undefined;
    // 'as believed': an earlier read showed what we then believed programmed, and every write since succeeded.
    const reads = read === 'as believed' ? undefined : read;
    let drift = false;
    const plans: FamilyPlan[] = [];
    /** Per family, the expected state a plan was made against (not a kernel read): what it patches once applied. */
    const against = new Map<IpFamily, ObservedFamily>();
    for (const family of families) {
      const state = desired[family === 4 ? 'v4' : 'v6'];
      let previous = this.lastDesired.get(family);
      let observed = previous && this.programmedOf(previous);
      if (reads) {
        const fresh = reads.get(family)!;
        // When the kernel holds exactly what we last programmed, plan from the tracker: the planner then
        // skips every unchanged object by identity instead of comparing the whole ruleset.
        const matches = observed !== undefined && this.reads.matchesProgrammed(observed, fresh);
        if (!(matches && previous !== undefined && this.inSync)) {
          // Drift: the kernel differs from what we last programmed (only meaningful once we programmed).
          if (observed && !matches) drift = true;
          observed = fresh;
          previous = undefined;
        }
      }
      if (previous !== undefined) against.set(family, observed!);
      plans.push(planFamily(state, observed!, this.own, previous));
    }
    this.inSync = false;
    this.leftovers = undefined;
    if (reads && plans.some((p) => p.retype.length > 0)) return this.retype(desired, plans, reads, opts.afterRetype === true);
    const undestroyed: string[] = [];
    try {
      await this.inTurn(async () => {
        const failedSets: FailedSet[] = [];
        const writeSets = async (ops: readonly IpsetOp[], text: () => string, steps: () => readonly SetStep[]) => {
          if (writesIpsetLines(ops)) failedSets.push(...(await applySets(this.kernel, this.logger, ops, text, steps)));
        };
        for (const plan of plans) {
          // docs/dataplane.md, "Order of a change": what narrows before the rules, what widens after them.
          await writeSets(
            plan.ipsetOps,
            () => plan.ipsetRestore,
            () => plan.setSteps,
          );
          if (plan.iptablesRestore) await this.kernel.restoreFilter(plan.family, plan.iptablesRestore);
          await writeSets(
            plan.ipsetAfterOps,
            () => plan.ipsetAfterRules,
            () => plan.afterSetSteps,
          );
        }
        for (const plan of plans) {
          if (plan.ipsetDestroy) undestroyed.push(...(await destroyStaleSets(this.kernel, this.logger, plan.ipsetDestroy, plan.staleSets)));
        }
        // Everything else is programmed; the sync still fails, so the next one reads the kernel and retries.
        if (failedSets.length > 0) throw new SetsNotProgrammedError(failedSets);
      });
    } catch (err) {
      this.lastDesired.clear();
      throw err;
    }
    const clean = plans.every((p) => p.errors.length === 0);
    if (undestroyed.length > 0) {
      // Our own undestroyed sets are not drift: until they are gone, the kernel holds more than `desired`.
      this.lastDesired.clear();
      this.leftovers = { names: undestroyed, desired, clean };
    } else {
      // What the kernel now holds, patched from what the plans were made against (O(change), not O(ruleset)).
      for (const plan of plans) {
        const state = desired[plan.family === 4 ? 'v4' : 'v6'];
        const before = against.get(plan.family);
        if (before && !this.expected.has(state)) this.expected.set(state, expectedAfter(before, plan, state));
      }
      this.programmed(desired, clean);
    }
    for (const plan of plans) for (const e of plan.errors) this.logger.error(e);
    return { plans, readKernel, drift, undestroyed };
  }

  /**
   * Retry destroying the stale sets the last sync left behind (nothing else is written); returns those still
   * in use. Once none is left, the kernel holds exactly what that sync programmed.
   */
  async destroyLeftovers(): Promise<readonly string[]> {
    const left = this.leftovers;
    if (!left) return [];
    const still: string[] = [];
    await this.inTurn(async () => {
      for (const name of left.names) if (!(await destroySet(this.kernel, this.logger, name))) still.push(name);
    });
    if (this.leftovers !== left) return still;
    if (still.length > 0) this.leftovers = { ...left, names: still };
    else {
      this.leftovers = undefined;
      this.programmed(left.desired, left.clean);
    }
    return still;
  }

  private programmed(desired: DesiredState, clean: boolean): void {
    for (const family of this.families()) this.lastDesired.set(family, desired[family === 4 ? 'v4' : 'v6']);
    this.inSync = clean;
  }

  /**
   * Sets of ours someone recreated with another type (plan/retype.ts): rebuilt without a moment where a
   * rule matches on the wrong set, then one ordinary sync against a fresh read finishes the job.
   */
  private async retype(
    desired: DesiredState,
    plans: readonly FamilyPlan[],
    reads: Map<IpFamily, ObservedFamily>,
    again: boolean,
  ): Promise<SyncResult> {
    this.lastDesired.clear();
    const sets: string[] = plans.flatMap((p) => p.retype.map((s) => s.name as string));
    // A second pass that still finds them means the recreate did not take: stop rather than loop.
    if (again) throw new Error(`ipset(s) ${sets.join(', ')} still have the wrong type after being recreated`);
    for (const plan of plans) {
      for (const set of plan.retype) {
        const steps = retypeSteps(set, reads.get(plan.family)!, this.own);
        await this.kernel.ipsetRestore(steps.createTemp);
        if (steps.reroute) await this.kernel.restoreFilter(plan.family, steps.reroute);
        await this.kernel.ipsetRestore(steps.recreate);
      }
    }
    this.logger.warn('recreated ipsets someone had replaced with another type', { sets });
    const rest = await this.sync(desired, { readKernel: true, afterRetype: true });
    const retyped = new Map(plans.map((p) => [p.family, p.changes.filter((c) => c.object === 'set' && sets.includes(c.name))]));
    return { ...rest, drift: true, plans: rest.plans.map((p) => ({ ...p, changes: [...(retyped.get(p.family) ?? []), ...p.changes] })) };
  }

  /** `fn` once no write and no read-ahead is under way; the next waits for it. */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.kernelTurn.then(fn);
    this.kernelTurn = result.catch(() => undefined);
    return result;
  }

  /** One `ipset save` and one `iptables-save` per family, run side by side, parsed unless unchanged. */
  private async read(families: readonly IpFamily[]): Promise<Map<IpFamily, ObservedFamily>> {
    const earlier = await this.takeEarlierRead(families);
    return earlier && earlier.writes === this.writes
      ? new Map(families.map((f) => [f, earlier.observed.get(f)!]))
      : this.reads.now(families);
  }

  /**
   * The kernel for a sync that reads it. A read taken before writes since is still enough when it showed
   * exactly what we then believed programmed and we are in sync now (every write since succeeded): the
   * belief holds, and the sync plans from it. Otherwise (drift, or nothing believed) the kernel is read again.
   */
  private async readForSync(families: readonly IpFamily[]): Promise<Map<IpFamily, ObservedFamily> | 'as believed'> {
    const earlier = await this.takeEarlierRead(families);
    if (earlier?.writes === this.writes) return new Map(families.map((f) => [f, earlier.observed.get(f)!]));
    const belief = earlier?.belief;
    const showedBelief =
      belief !== undefined &&
      this.inSync &&
      families.every((f) => {
        const then = belief.get(f);
        return (
          then !== undefined && this.lastDesired.has(f) && this.reads.matchesProgrammed(this.programmedOf(then), earlier!.observed.get(f)!)
        );
      });
    return showedBelief ? 'as believed' : this.reads.now(families);
  }

  /** The read taken ahead (once), if it covers these families; its failure is thrown here. */
  private async takeEarlierRead(families: readonly IpFamily[]): Promise<EarlierRead | undefined> {
    const given = this.given;
    this.given = undefined;
    if (!given) return undefined;
    const earlier = await given;
    return families.every((f) => earlier.observed.has(f)) ? earlier : undefined;
  }

  /** What the kernel holds after programming `state` (expectedObserved), once per state object. */
  private programmedOf(state: FamilyState): ObservedFamily {
    let observed = this.expected.get(state);
    if (!observed) this.expected.set(state, (observed = expectedObserved(state)));
    return observed;
  }

  private families(): IpFamily[] {
    return ([4, 6] as const).filter((f) => this.kernel.supports(f));
  }
}
