// `netfence map`: the whole picture of what the policies allow, from manifests or the API, computed by
// src/map (each node compiled, representative packets traced), printed or written in one format.
// `--diff OLD NEW`: what a change opens and closes; exit 0 no change, 1 changes, 2 error.

import { incompleteRead, loadManifests } from '../cluster/manifests.js';
import type { DaemonConfig } from '../config/schema.js';
// Every node compiled with its own settings, as `why` compiles them.
import { settingsPerNode } from '../config/node-settings.js';
import { createLogger } from '../log.js';
import { formatProblem, type IpFamily } from '../model/index.js';
import {
  buildMap,
  diffClusters,
  formatDiff,
  defaultFamily,
  liveOverlay,
  nameLookups,
  withLookups,
  writeDot,
  writeHtml,
  writeJson,
  writeMarkdown,
  writeSvg,
  type ConnectivityMap,
  type LiveOverlay,
  type Out,
} from '../map/index.js';
import { commandOptions, type Io } from './command-specs.js';
import { CommandFailure } from './options.js';
import { writeOutput } from './output-file.js';
import { configFrom, loadCluster, manifestLimits, parseCommand, UsageError, type LoadedCluster, type Parsed } from './context.js';

const MAP_FORMATS = ['html', 'svg', 'dot', 'md', 'json'] as const;
const DIFF_FORMATS = ['md', 'json', 'text'] as const;
/** Edges whose `why` text the HTML page carries (each is one more trace per port range). */
const EXPLAIN_EDGES = 2000;
const API_TIMEOUT_MS = 30_000;

export async function mapCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('map', expandDiff(argv));
  const config = configFrom(parsed, false);
  const family = familyOf(parsed);
  const groupBy = text(parsed, 'group-by');
  const options = { ...(family !== undefined ? { family } : {}), ...(groupBy !== undefined ? { groupBy } : {}) };
  if (parsed.values['diff'] === true || parsed.values['old'] !== undefined || parsed.values['new'] !== undefined) {
    if (parsed.values['live'] === true) throw new UsageError('--live overlays the flow logs on one map, not on --diff');
    const format = formatOf(parsed, DIFF_FORMATS, 'md');
    const [before, after] = await Promise.all([readSide(parsed, config, 'old'), readSide(parsed, config, 'new')]);
    const { diff } = diffClusters(
      { snapshot: before.snapshot, settingsFor: settingsPerNode(config, before.snapshot) },
      { snapshot: after.snapshot, settingsFor: settingsPerNode(config, after.snapshot) },
      options,
    );
    output(parsed, io, (out) => out(formatDiff(diff, format)));
    return diff.changes.length > 0 ? 1 : 0;
  }
  const format = formatOf(parsed, MAP_FORMATS, 'md');
  const cluster = complete(
    await loadCluster(parsed, createLogger({ level: 'error', format: 'text' }), manifestLimits(config), API_TIMEOUT_MS),
    'the cluster',
  );
  const map = drawnMap(cluster, config, format, options);
  if (parsed.values['live'] !== true) {
    output(parsed, io, (out) => render(map, format, out));
    return 0;
  }
  const { snapshot } = cluster;
  const nodes = [...new Set([...snapshot.nodes.map((n) => n.name), ...snapshot.pods.map((p) => p.nodeName)])]
    .filter((n) => n !== '')
    .sort();
  const live = liveOverlay(map, snapshot, await (await import('./map-live.js')).readFlows(parsed, config, nodes));
  output(parsed, io, (out) => render(map, format, out, live));
  const unread = live.nodes.filter((n) => n.error !== undefined);
  for (const n of unread) io.err(`netfence map --live: cannot read the flow log of ${n.node}: ${n.error}\n`);
  return unread.length > 0 ? 2 : 0;
}

/**
 * The map alone: what it was computed from (every node's compiled rules, the judge's tables) is left behind
 * here, free to be collected before the output is written.
 */
function drawnMap(
  cluster: LoadedCluster,
  config: DaemonConfig,
  format: (typeof MAP_FORMATS)[number],
  options: { family?: IpFamily; groupBy?: string },
): ConnectivityMap {
  const settingsFor = settingsPerNode(config, cluster.snapshot);
  // ClusterNetworkPolicy domainNames peers: traced as after a lookup (src/map/domains.ts).
  const lookups = withLookups(cluster.snapshot, settingsFor, options.family ?? defaultFamily(cluster.snapshot));
  const built = buildMap(
    cluster.snapshot,
    settingsFor,
    {
      ...options,
      ...(format === 'html' ? { explain: EXPLAIN_EDGES } : {}),
      ...(lookups.cidrs.length > 0 ? { extraCidrs: lookups.cidrs } : {}),
    },
    lookups.compiled,
  );
  return nameLookups(built.map, lookups);
}

function render(map: ConnectivityMap, format: (typeof MAP_FORMATS)[number], out: Out, live?: LiveOverlay): void {
  switch (format) {
    case 'html':
      return writeHtml(map, out, live);
    case 'svg':
      return writeSvg(map, out, true, live);
    case 'dot':
      return writeDot(map, out, live);
    case 'md':
      return writeMarkdown(map, out, live);
    case 'json':
      writeJson(live ? { ...map, live } : map, out, 2);
      return out('\n');
  }
}

/** `--diff OLD NEW` is `--diff --old OLD --new NEW` (unless what follows --diff is another option). */
function expandDiff(argv: readonly string[]): string[] {
  const at = argv.indexOf('--diff');
  if (at < 0) return [...argv];
  const options = new Set(commandOptions('map').flatMap((o) => [`--${o.name}`, ...(o.short !== undefined ? [`-${o.short}`] : [])]));
  const [a, b] = [argv[at + 1], argv[at + 2]];
  if (a === undefined || b === undefined || options.has(a) || options.has(b)) return [...argv];
  return [...argv.slice(0, at), '--diff', '--old', a, '--new', b, ...argv.slice(at + 3)];
}

async function readSide(parsed: Parsed, config: DaemonConfig, side: 'old' | 'new'): Promise<LoadedCluster> {
  const paths = (parsed.values[side] as string[] | undefined) ?? [];
  if (paths.length === 0) throw new UsageError(`--diff needs the ${side} cluster: --diff OLD NEW, or --${side} PATH (or "cluster")`);
  const what = side === 'old' ? 'the old cluster' : 'the new cluster';
  if (paths.length === 1 && paths[0] === 'cluster') {
    const fromApi = { ...parsed, values: { ...parsed.values, resources: undefined } };
    return complete(
      await loadCluster(fromApi, createLogger({ level: 'error', format: 'text' }), manifestLimits(config), API_TIMEOUT_MS),
      what,
    );
  }
  if (paths.includes('cluster')) throw new UsageError(`--${side}: "cluster" (the API server) cannot be mixed with manifest paths`);
  const loaded = loadManifests(paths, manifestLimits(config));
  return complete({ snapshot: loaded.snapshot, problems: loaded.problems }, what);
}

/** A cluster read with errors would map as a smaller cluster than meant: refuse (exit 2), naming each problem. */
function complete(cluster: LoadedCluster, what: string): LoadedCluster {
  const errors = incompleteRead(cluster.problems);
  if (errors.length > 0)
    throw new CommandFailure(
      `${errors.length} manifest error(s) in ${what}: it was not read completely, so no map is drawn\n${errors.map((p) => `  ${formatProblem(p)}`).join('\n')}`,
    );
  return cluster;
}

/** The output as it is made, to `--output`'s file (replaced only once whole: output-file.ts) or else stdout. */
function output(parsed: Parsed, io: Io, writer: (out: Out) => void): void {
  writeOutput(text(parsed, 'output'), io, writer, 'map');
}

function text(parsed: Parsed, flag: string): string | undefined {
  const v = parsed.values[flag];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function formatOf<F extends string>(parsed: Parsed, formats: readonly F[], fallback: F): F {
  const given = text(parsed, 'format') ?? fallback;
  const format = formats.find((f) => f === given);
  if (!format) throw new UsageError(`--format must be ${formats.join(', ')}, not "${given}"`);
  return format;
}

function familyOf(parsed: Parsed): IpFamily | undefined {
  const f = text(parsed, 'family');
  if (f === undefined) return undefined;
  if (f !== '4' && f !== '6') throw new UsageError(`--family must be 4 or 6, not "${f}"`);
  return Number(f) as IpFamily;
}
