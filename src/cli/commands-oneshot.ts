// One-shot commands that touch the kernel: apply, diff, cleanup. (compile is compile.ts: it needs none of this.)
// Each parses its flags, calls commands/ for the work, and prints what comes back.

import { cleanupNode } from '../commands/cleanup.js';
import { compileForNode } from '../commands/compile.js';
import { planAgainstSavedDumps, reportPlans, type SavedDumpPlans } from '../commands/diff.js';
import { kernelSyncer, type KernelReadRequest } from '../commands/kernel-read.js';
import { SavedDumpError } from '../commands/saved-dump.js';
import type { Io } from './command-specs.js';
import {
  cliLogger,
  configFrom,
  kernelOptions,
  loadCluster,
  loadResources,
  manifestLimits,
  netnsOf,
  ownershipOf,
  parseCommand,
  requireKnownNode,
  resourcePaths,
  savedPaths,
  UsageError,
} from './context.js';
import { EXIT_INCOMPLETE_SOURCE, printProblems, refuseIncomplete } from './source-errors.js';

export type { Io } from './command-specs.js';

/** Converge the kernel once from manifests. */
export async function applyCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('apply', argv);
  const config = configFrom(parsed);
  const logger = cliLogger(config);
  // The kernel is read while the cluster loads and compiles (kernel-read.ts).
  const reading = kernelSyncer(kernelRead(config, parsed), logger);
  reading.catch(() => undefined);
  const cluster = loadResources(parsed, manifestLimits(config));
  if (refuseIncomplete(io, 'apply', cluster)) return EXIT_INCOMPLETE_SOURCE;
  // Before the kernel is touched: an unknown node's ruleset would remove every local pod's chains.
  requireKnownNode(cluster.snapshot, config.nodeName, 'the manifests');
  const result = await compileForNode(config, cluster.snapshot, logger);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const sync = await (await reading).sync(result.desired, { readKernel: true });
  io.err(
    `${reportPlans(sync.plans)
      .summary.replace(/^differs: /, 'applied: ')
      .replace(/ to change;/, ' changed;')}\n`,
  );
  return 0;
}

/** Plan against the live kernel (or a saved dump) and print it; never writes. Exit 0 in sync, 1 differs. */
export async function diffCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('diff', argv);
  const config = configFrom(parsed);
  const saved = savedPaths(parsed.values);
  const reading = saved.length > 0 ? undefined : kernelSyncer(kernelRead(config, parsed), cliLogger(config));
  reading?.catch(() => undefined);
  const cluster = await loadCluster(parsed, cliLogger(config), manifestLimits(config));
  // A diff against manifests that did not all load would report removals nobody asked for: an error (2), not "differs" (1).
  if (resourcePaths(parsed).length > 0 && refuseIncomplete(io, 'diff', cluster)) return EXIT_INCOMPLETE_SOURCE;
  requireKnownNode(cluster.snapshot, config.nodeName, resourcePaths(parsed).length > 0 ? 'the manifests' : 'the cluster');
  const result = await compileForNode(config, cluster.snapshot);
  printProblems(io, [...cluster.problems, ...result.problems]);
  let fromDump: SavedDumpPlans | undefined;
  if (!reading) {
    try {
      fromDump = await planAgainstSavedDumps(result.desired, saved, ownershipOf(config));
    } catch (err) {
      if (!(err instanceof SavedDumpError)) throw err;
      io.err(`netfence diff: ${err.message}\n`);
      return EXIT_INCOMPLETE_SOURCE;
    }
    // A family the cluster wants but the dump lacks is not "in sync": it was not compared, and we say so.
    for (const f of fromDump.notCompared) {
      io.err(
        `note: ${fromDump.label} has no IPv${f} *filter table, so IPv${f} was not compared (add ${f === 6 ? 'ip6tables-save' : 'iptables-save'} output, e.g. as another --saved FILE)\n`,
      );
    }
  }
  const plans = fromDump?.plans ?? (await (await reading!).planOnly(result.desired));
  const notCompared = fromDump?.notCompared ?? [];
  const report = reportPlans(plans);
  const partial = notCompared.length > 0 ? ` (IPv${notCompared.join(', IPv')} not compared: not in the saved dump)` : '';
  if (parsed.values['json'] === true) io.out(`${JSON.stringify({ ...report.json(), ...(partial ? { notCompared } : {}) }, null, 2)}\n`);
  else {
    const changes = report.changes();
    if (changes) io.out(`${changes}\n`);
    io.out(`${report.summary}${partial}\n`);
  }
  return report.inSync ? 0 : 1;
}

/** Remove every chain, hook and set netfence owns; nothing else. */
export async function cleanupCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('cleanup', argv);
  const config = configFrom(parsed, false);
  const { summary: s, antiSpoofTable } = await cleanupNode(kernelRead(config, parsed), netnsOf(parsed), cliLogger(config));
  io.err(
    `cleanup: removed ${s.chainsChanged} chain(s), ${s.hooksChanged} hook(s), ${s.setsChanged} set(s)${antiSpoofTable ? ', the anti-spoofing table' : ''}\n`,
  );
  return 0;
}

/** Which kernel, and which of its chains and sets are netfence's. */
const kernelRead = (config: ReturnType<typeof configFrom>, parsed: ReturnType<typeof parseCommand>): KernelReadRequest => ({
  kernel: kernelOptions(config, parsed),
  own: ownershipOf(config),
});

export { UsageError };
