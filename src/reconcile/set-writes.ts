// How the syncer writes ipsets so one refused set costs only itself: a plan's set step applied whole, then
// set by set (rebuilt whole if its own lines fail) when a line is refused, and stale sets destroyed together,
// then one by one when one is still referenced. Each returns what is still not done; the syncer decides what
// that means for the sync (set-repair.test.ts, stale-sets.test.ts).

import type { SetStep } from '../plan/index.js';
import { renderIpsetOps, type IpsetOp } from '../render/index.js';
import type { KernelPort, SyncLogger } from './kernel-port.js';

export interface FailedSet {
  readonly name: string;
  readonly error: string;
}

/** Some sets could not be programmed, even rebuilt; everything else of the sync was. */
export class SetsNotProgrammedError extends Error {
  override readonly name = 'SetsNotProgrammedError';
  constructor(readonly sets: readonly FailedSet[]) {
    super(
      `ipset ${sets.map((s) => s.name).join(', ')} could not be programmed (${sets[0]!.error}); ` +
        'every other set and the chains were, and the next sync retries',
    );
  }
}

/**
 * Step 1 of a plan. `ipset restore` stops at the first line it refuses, and one set's failure must not hold
 * back every other set and the chains after them: when the whole fails on a line, each set is applied on its
 * own, and a set whose own lines fail is rebuilt whole (a temp set swapped in). Returns the sets that still
 * failed. A failure that names no line (the tool hung or could not run) is thrown as it is. The step goes to the
 * port's ipsetApply when it has one (netlink for member changes); a member the kernel refused there counts as a
 * refused line.
 */
export async function applySets(
  kernel: KernelPort,
  logger: SyncLogger,
  ops: readonly IpsetOp[],
  text: () => string,
  steps: () => readonly SetStep[],
): Promise<FailedSet[]> {
  try {
    if (kernel.ipsetApply) await kernel.ipsetApply(ops);
    else await kernel.ipsetRestore(text());
    return [];
  } catch (err) {
    const refusedLine = (err as { line?: unknown }).line !== undefined || (err as Error).name === 'IpsetNetlinkError';
    if (!refusedLine) throw err;
    logger.warn('ipset refused a line; applying each set on its own', { error: (err as Error).message });
  }
  const failed: FailedSet[] = [];
  for (const step of steps()) {
    let error: unknown;
    try {
      await kernel.ipsetRestore(step.restore);
      continue;
    } catch (err) {
      error = err;
    }
    if (step.rebuild !== undefined) {
      try {
        await kernel.ipsetRestore(step.rebuild);
        logger.warn('rebuilt an ipset whose update was refused', { set: step.name, error: (error as Error).message });
        continue;
      } catch (err) {
        error = err;
      }
    }
    failed.push({ name: step.name, error: (error as Error).message });
  }
  return failed;
}

/**
 * The sets that could not be destroyed (still referenced: by someone else's rule, or by one of ours the
 * kernel has not released yet); enforcement is unaffected. `ipset restore` stops at the first failing line,
 * so after a failure each set is tried on its own: one busy set must not keep the others.
 */
export async function destroyStaleSets(kernel: KernelPort, logger: SyncLogger, text: string, names: readonly string[]): Promise<string[]> {
  try {
    await kernel.ipsetRestore(text);
    return [];
  } catch (err) {
    logger.debug('could not destroy every stale ipset at once; trying one by one', { error: (err as Error).message });
  }
  const left: string[] = [];
  for (const name of names) if (!(await destroySet(kernel, logger, name))) left.push(name);
  return left;
}

/** Whether the set is gone; false while it is still in use (the caller retries later). */
export async function destroySet(kernel: KernelPort, logger: SyncLogger, name: string): Promise<boolean> {
  try {
    await kernel.ipsetRestore(renderIpsetOps([{ op: 'destroy', name }]));
    return true;
  } catch (err) {
    logger.debug('stale ipset still in use; will retry', { set: name, error: (err as Error).message });
    return false;
  }
}
