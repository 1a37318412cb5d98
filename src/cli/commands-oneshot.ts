// One-shot commands that touch the kernel: apply, diff, cleanup. (compile is compile.ts: it needs none of this.)

import { compile } from '../compile/index.js';
import { emptyFamilyState, type DesiredState, type FamilyState, type IpFamily } from '../model/index.js';
import { formatPlanDiff, formatSummary, planJson, summarize } from '../plan/diff.js';
import { observeFamily, planFamily, type FamilyPlan, type ObservedFamily } from '../plan/index.js';
import { asSaveText, IpsetParseError, SaveParseError } from '../render/index.js';
import { Syncer } from '../reconcile/syncer.js';
import { readKernel } from './kernel-read.js';
import type { Io } from './command-specs.js';
import {
  cliLogger,
  configFrom,
  kernelOptions,
  loadCluster,
  loadResources,
  manifestLimits,
  netnsOf,
  nodeSettings,
  ownershipOf,
  parseCommand,
  requireKnownNode,
  resourcePaths,
  UsageError,
} from './context.js';
import { readSavedDumps, SavedDumpError, savedPaths, type SavedDumpFiles } from './saved-dump.js';
import { EXIT_INCOMPLETE_SOURCE, printProblems, refuseIncomplete } from './source-errors.js';

export type { Io } from './command-specs.js';
export { extractIpsets, extractIptables } from '../render/index.js';

/** Converge the kernel once from manifests. */
export async function applyCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('apply', argv);
  const config = configFrom(parsed);
  const logger = cliLogger(config);
  const reading = readKernelMeanwhile(config, parsed, logger);
  reading.catch(() => undefined);
  const cluster = loadResources(parsed, manifestLimits(config));
  if (refuseIncomplete(io, 'apply', cluster)) return EXIT_INCOMPLETE_SOURCE;
  // Before the kernel is touched: an unknown node's ruleset would remove every local pod's chains.
  requireKnownNode(cluster.snapshot, config.nodeName, 'the manifests');
  const settings = await nodeSettings(config, cluster.snapshot, logger);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const syncer = await reading;
  const sync = await syncer.sync(result.desired, { readKernel: true });
  io.err(
    `${formatSummary(summarize(sync.plans))
      .replace(/^differs: /, 'applied: ')
      .replace(/ to change;/, ' changed;')}\n`,
  );
  return 0;
}

/** Plan against the live kernel (or a saved dump) and print it; never writes. Exit 0 in sync, 1 differs. */
export async function diffCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('diff', argv);
  const config = configFrom(parsed);
  const saved = savedPaths(parsed.values);
  const reading = saved.length > 0 ? undefined : readKernelMeanwhile(config, parsed, cliLogger(config));
  reading?.catch(() => undefined);
  const cluster = await loadCluster(parsed, cliLogger(config), manifestLimits(config));
  // A diff against manifests that did not all load would report removals nobody asked for: an error (2), not "differs" (1).
  if (resourcePaths(parsed).length > 0 && refuseIncomplete(io, 'diff', cluster)) return EXIT_INCOMPLETE_SOURCE;
  requireKnownNode(cluster.snapshot, config.nodeName, resourcePaths(parsed).length > 0 ? 'the manifests' : 'the cluster');
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const own = ownershipOf(config);
  let plans: FamilyPlan[];
  let notCompared: IpFamily[] = [];
  if (!reading) {
    let dump: SavedDumpFiles;
    try {
      dump = await readSavedDumps(saved, own.ipsetPrefix);
    } catch (err) {
      if (!(err instanceof SavedDumpError)) throw err;
      io.err(`netfence diff: ${err.message}\n`);
      return EXIT_INCOMPLETE_SOURCE;
    }
    plans = [];
    for (const table of [...dump.filters.values()].sort((a, b) => a.family - b.family)) {
      let observed: ObservedFamily;
      try {
        // `netfence compile` output is a restore payload (`-I FORWARD 1`): read it as the save it becomes.
        observed = observeFamily(table.family, asSaveText(table.text), dump.ipsets, own);
      } catch (err) {
        if (!(err instanceof SaveParseError || err instanceof IpsetParseError)) throw err;
        io.err(`netfence diff: the IPv${table.family} *filter table at ${table.where}: ${err.message}\n`);
        return EXIT_INCOMPLETE_SOURCE;
      }
      plans.push(planFamily(familyState(result.desired, table.family), observed, own));
    }
    // A family the cluster wants but the dump lacks is not "in sync": it was not compared, and we say so.
    notCompared = ([4, 6] as const).filter((f) => !dump.filters.has(f) && hasContent(familyState(result.desired, f)));
    for (const f of notCompared) {
      io.err(
        `note: ${dump.label} has no IPv${f} *filter table, so IPv${f} was not compared (add ${f === 6 ? 'ip6tables-save' : 'iptables-save'} output, e.g. as another --saved FILE)\n`,
      );
    }
  } else {
    plans = await (await reading).planOnly(result.desired);
  }
  const summary = summarize(plans);
  const partial = notCompared.length > 0 ? ` (IPv${notCompared.join(', IPv')} not compared: not in the saved dump)` : '';
  if (parsed.values['json'] === true)
    io.out(`${JSON.stringify({ ...(planJson(plans) as object), ...(partial ? { notCompared } : {}) }, null, 2)}\n`);
  else {
    const text = formatPlanDiff(plans);
    if (text) io.out(`${text}\n`);
    io.out(`${formatSummary(summary)}${partial}\n`);
  }
  return summary.inSync ? 0 : 1;
}

/**
 * Starts reading the kernel (kernel-read.ts: every tool at once) before the command loads and compiles
 * the cluster; the plan uses what it read. A failure surfaces where the result is awaited, as it did
 * when the kernel was read after compiling.
 */
async function readKernelMeanwhile(
  config: ReturnType<typeof configFrom>,
  parsed: ReturnType<typeof parseCommand>,
  logger: ReturnType<typeof cliLogger>,
): Promise<Syncer> {
  const reading = readKernel({ kernel: kernelOptions(config, parsed), own: ownershipOf(config) });
  const syncer = new Syncer(await reading.kernel, ownershipOf(config), logger);
  syncer.useRead(reading.observed);
  return syncer;
}

/** Remove every chain, hook and set netfence owns; nothing else. */
export async function cleanupCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('cleanup', argv);
  const config = configFrom(parsed, false);
  const nothing: DesiredState = { v4: emptyFamilyState(4), v6: emptyFamilyState(6) };
  const syncer = await readKernelMeanwhile(config, parsed, cliLogger(config));
  const sync = await syncer.sync(nothing, { readKernel: true });
  const s = summarize(sync.plans);
  // The anti-spoofing bridge table (nft); its absence is not an error. Loaded here: only cleanup needs it.
  const [{ removeAntiSpoofTable }, { applyNftScript, listNftTableJson }] = await Promise.all([
    import('../antispoof/remove.js'),
    import('../dataplane/nft.js'),
  ]);
  const netns = netnsOf(parsed);
  const table = await removeAntiSpoofTable({
    list: (family, name) => listNftTableJson(family, name, netns),
    apply: (script) => applyNftScript(script, netns),
  });
  io.err(
    `cleanup: removed ${s.chainsChanged} chain(s), ${s.hooksChanged} hook(s), ${s.setsChanged} set(s)${table ? ', the anti-spoofing table' : ''}\n`,
  );
  return 0;
}

const familyState = (desired: DesiredState, family: IpFamily): FamilyState => (family === 4 ? desired.v4 : desired.v6);
const hasContent = (s: FamilyState): boolean => s.chains.length > 0 || s.ipsets.length > 0 || s.hooks.length > 0;

export { UsageError };
