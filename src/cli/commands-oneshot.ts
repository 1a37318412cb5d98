// One-shot commands that touch the kernel: apply, diff, cleanup. (compile is compile.ts: it needs none of this.)

import { compile } from '../compile/index.js';
import { emptyFamilyState, formatProblem, type DesiredState, type Problem } from '../model/index.js';
import { formatPlanDiff, formatSummary, planJson, summarize } from '../plan/diff.js';
import { observeFamily, planFamily, type FamilyPlan } from '../plan/index.js';
import { Syncer } from '../reconcile/syncer.js';
import type { Kernel } from '../dataplane/kernel.js';
import type { Io } from './commands.js';
import { cliLogger, configFrom, kernelFor, loadCluster, loadResources, nodeSettings, ownershipOf, parseCommand, UsageError } from './context.js';
import { extractIpsets, extractIptables } from './saved-dump.js';

export type { Io } from './commands.js';
export { extractIpsets, extractIptables } from './saved-dump.js';

const printProblems = (io: Io, problems: readonly Problem[]): void => {
  for (const p of problems) io.err(`${formatProblem(p)}\n`);
};

/** Converge the kernel once from manifests. */
export async function applyCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('apply', argv);
  const config = configFrom(parsed);
  const logger = cliLogger(config);
  const cluster = loadResources(parsed);
  const settings = await nodeSettings(config, cluster.snapshot, logger);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const kernel = await kernelFor(config, parsed);
  const syncer = new Syncer(kernel, ownershipOf(config), logger);
  const sync = await syncer.sync(result.desired, { readKernel: true });
  io.err(`${formatSummary(summarize(sync.plans)).replace(/^differs: /, 'applied: ').replace(/ to change;/, ' changed;')}\n`);
  return 0;
}

/** Plan against the live kernel (or a saved dump) and print it; never writes. Exit 0 in sync, 1 differs. */
export async function diffCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('diff', argv);
  const config = configFrom(parsed);
  const cluster = await loadCluster(parsed, cliLogger(config));
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const own = ownershipOf(config);
  let plans: FamilyPlan[];
  const savedPath = parsed.values['saved'] as string | undefined;
  if (savedPath) {
    const { readFileSync } = await import('node:fs');
    const text = readFileSync(savedPath, 'utf8');
    plans = [planFamily(result.desired.v4, observeFamily(4, extractIptables(text), extractIpsets(text), own), own)];
  } else {
    const kernel = await kernelFor(config, parsed);
    plans = await new Syncer(kernel, own, cliLogger(config)).planOnly(result.desired);
  }
  const summary = summarize(plans);
  if (parsed.values['json'] === true) io.out(`${JSON.stringify(planJson(plans), null, 2)}\n`);
  else {
    const text = formatPlanDiff(plans);
    if (text) io.out(`${text}\n`);
    io.out(`${formatSummary(summary)}\n`);
  }
  return summary.inSync ? 0 : 1;
}

/** Remove every chain, hook and set netfence owns; nothing else. */
export async function cleanupCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('cleanup', argv);
  const config = configFrom(parsed, false);
  const kernel: Kernel = await kernelFor(config, parsed);
  const nothing: DesiredState = { v4: emptyFamilyState(4), v6: emptyFamilyState(6) };
  const sync = await new Syncer(kernel, ownershipOf(config), cliLogger(config)).sync(nothing, { readKernel: true });
  const s = summarize(sync.plans);
  io.err(`cleanup: removed ${s.chainsChanged} chain(s), ${s.hooksChanged} hook(s), ${s.setsChanged} set(s)\n`);
  return 0;
}

export { UsageError };
