// One-shot commands: compile, apply, diff, cleanup.

import { incompleteRead } from '../cluster/manifests.js';
import { ANTISPOOF_TABLE, renderAntiSpoofDelete } from '../antispoof/render.js';
import { applyNftScript, listNftTableJson } from '../dataplane/nft.js';
import { compile } from '../compile/index.js';
import { emptyFamilyState, formatProblem, type DesiredState, type Problem } from '../model/index.js';
import { formatPlanDiff, formatSummary, planJson, summarize } from '../plan/diff.js';
import { observeFamily, planFamily, type FamilyPlan } from '../plan/index.js';
import { Syncer } from '../reconcile/syncer.js';
import { renderFullRestore, renderIpsetRestore } from '../render/index.js';
import type { Kernel } from '../dataplane/kernel.js';
import {
  cliLogger,
  configFrom,
  kernelFor,
  loadCluster,
  loadResources,
  netnsOf,
  nodeSettings,
  ownershipOf,
  parse,
  resourcePaths,
  UsageError,
  type LoadedCluster,
} from './context.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const printProblems = (io: Io, problems: readonly Problem[]): void => {
  for (const p of problems) io.err(`${formatProblem(p)}\n`);
};

/** Exit code of a command whose manifests could not all be read. */
export const EXIT_INCOMPLETE_SOURCE = 2;

/**
 * Manifests that could not be read completely (a misspelt path, a syntax error, a rejected document, a
 * file caught mid-write…) would compile to a smaller cluster than the operator meant, and applying that
 * removes the rules of whatever was lost: an opening made by a typo. So the command stops before the
 * kernel is touched and names each file/document/line. Invalid *policies* are not in this list: they
 * are kept and enforced fail-closed, and reported with the compile problems.
 */
function refuseIncomplete(io: Io, command: string, cluster: LoadedCluster): boolean {
  const errors = incompleteRead(cluster.problems);
  if (errors.length === 0) return false;
  printProblems(io, cluster.problems);
  io.err(`netfence ${command}: ${errors.length} manifest error(s) above: the resources were not read completely; stopped before touching the kernel\n`);
  return true;
}

export async function compileCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parse(argv, { ipv6: { type: 'boolean' } });
  const config = configFrom(parsed);
  const cluster = loadResources(parsed);
  if (refuseIncomplete(io, 'compile', cluster)) return EXIT_INCOMPLETE_SOURCE;
  const settings = await nodeSettings(config, cluster.snapshot);
  const result = compile(cluster.snapshot, settings);
  printProblems(io, [...cluster.problems, ...result.problems]);
  const state = parsed.values['ipv6'] === true ? result.desired.v6 : result.desired.v4;
  io.out(renderIpsetRestore(state.ipsets));
  io.out(renderFullRestore(state));
  return 0;
}

/** Converge the kernel once from manifests. */
export async function applyCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parse(argv, {});
  const config = configFrom(parsed);
  const logger = cliLogger(config);
  const cluster = loadResources(parsed);
  if (refuseIncomplete(io, 'apply', cluster)) return EXIT_INCOMPLETE_SOURCE;
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
  const parsed = parse(argv, { saved: { type: 'string' }, json: { type: 'boolean' } });
  const config = configFrom(parsed);
  const cluster = await loadCluster(parsed, cliLogger(config));
  // A diff against manifests that did not all load would report removals nobody asked for: an error (2), not "differs" (1).
  if (resourcePaths(parsed).length > 0 && refuseIncomplete(io, 'diff', cluster)) return EXIT_INCOMPLETE_SOURCE;
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
  const parsed = parse(argv, {});
  const config = configFrom(parsed, false);
  const kernel: Kernel = await kernelFor(config, parsed);
  const nothing: DesiredState = { v4: emptyFamilyState(4), v6: emptyFamilyState(6) };
  const sync = await new Syncer(kernel, ownershipOf(config), cliLogger(config)).sync(nothing, { readKernel: true });
  const s = summarize(sync.plans);
  // The anti-spoofing bridge table (nft); its absence is not an error.
  const table = (await listNftTableJson('bridge', ANTISPOOF_TABLE, netnsOf(parsed))) !== undefined;
  if (table) await applyNftScript(renderAntiSpoofDelete(), netnsOf(parsed));
  io.err(`cleanup: removed ${s.chainsChanged} chain(s), ${s.hooksChanged} hook(s), ${s.setsChanged} set(s)${table ? ', the anti-spoofing table' : ''}\n`);
  return 0;
}

/** A saved dump is `iptables-save` output followed by `ipset save` output (either order). */
export function extractIptables(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^(create|add) /.test(l))
    .join('\n');
}

export function extractIpsets(text: string): string {
  return text
    .split('\n')
    .filter((l) => /^(create|add) /.test(l))
    .join('\n');
}

export { UsageError };
