// `netfence map` and `netfence map --diff` as a user runs them: whole processes (dist/cli/main.js, node
// start-up, manifest reading and module loading included) on a generated cluster written as one JSON dump
// (`kubectl get -o json` shape). The diff compares that cluster with a copy holding one more policy (its
// busiest namespace isolated for egress). Wall time, CPU (user+sys) and peak RSS come from /usr/bin/time; the load
// average is printed beside them, since wall time on a shared machine says little without it.
//
// Usage: npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-map.ts [--tier large] [--seed 1]
//          [--only map|diff] [--formats json,html,md,dot,svg] [--keep DIR]
//   targets (large tier: 10,000 pods, 1,000 policies): map ≤ 10 s and ≤ 500 MiB in every format; a one-policy
//   diff ≤ 3 s. `--only map` measures the map alone (each format of --formats, default json and html), `--only
//   diff` the diff alone; `--keep DIR` writes the cluster dumps and outputs there and keeps them (to profile
//   one command again, or to compare two trees' outputs byte for byte).

import { spawnSync } from 'node:child_process';
import { loadavg, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClusterSnapshot, NetworkPolicy } from '../src/model/index.js';
import { snapshotObjects } from './bench-daemon.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

const tier = flag('tier', 'large') as Tier;
if (!TIERS.includes(tier)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
const seed = Number(flag('seed', '1'));
const only = flag('only', 'both');
if (!['map', 'diff', 'both'].includes(only)) throw new Error('--only must be map or diff');
const FORMATS = ['json', 'html', 'md', 'dot', 'svg'];
const formats = flag('formats', 'json,html').split(',');
for (const f of formats) if (!FORMATS.includes(f)) throw new Error(`--formats: each of ${FORMATS.join(', ')}, not "${f}"`);
const keep = flag('keep', '');

/**
 * The same cluster and one more policy: every pod of the busiest namespace no policy isolates for egress
 * becomes isolated for egress, with nothing allowed (a change with certain effect: its pods could reach everyone).
 */
function onePolicyAdded(snapshot: ClusterSnapshot): { snapshot: ClusterSnapshot; policy: string } {
  const policed = new Set(
    snapshot.policies.filter((p) => p.policyTypes?.includes('Egress') === true || (p.egress?.length ?? 0) > 0).map((p) => p.namespace),
  );
  const count = new Map<string, number>();
  for (const p of snapshot.pods) if (!policed.has(p.namespace)) count.set(p.namespace, (count.get(p.namespace) ?? 0) + 1);
  const namespace = [...count].sort((a, b) => b[1] - a[1])[0]![0];
  const added: NetworkPolicy = {
    namespace,
    name: 'bench-deny-egress',
    podSelector: { matchLabels: {}, matchExpressions: [] },
    policyTypes: ['Egress'],
  };
  return { snapshot: { ...snapshot, policies: [...snapshot.policies, added] }, policy: `${namespace}/${added.name}` };
}

function measure(what: string, args: readonly string[], okCodes: readonly number[]): void {
  const before = loadavg()[0]!;
  const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S %M', process.execPath, CLI, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 });
  const lines = r.stderr.trim().split('\n');
  const [elapsed, user, sys, maxKb] = lines[lines.length - 1]!.split(' ').map(Number);
  if (!okCodes.includes(r.status ?? -1)) throw new Error(`${what}: exit ${r.status}\n${r.stderr}`);
  const out = (n: number) => n.toFixed(2);
  console.log(
    `${what.padEnd(28)} wall ${out(elapsed!)} s   cpu ${out(user! + sys!)} s (user ${out(user!)}, sys ${out(sys!)})   peak RSS ${Math.round(maxKb! / 1024)} MiB   load ${before.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(`  netfence ${args.join(' ')}`);
}

const dir = keep !== '' ? keep : mkdtempSync(join(tmpdir(), 'nft-bench-map-'));
if (keep !== '') mkdirSync(dir, { recursive: true });
try {
  const { snapshot, stats } = generateCluster({ tier, seed, node: 'node-1' });
  const old = join(dir, 'old.json');
  const neu = join(dir, 'new.json');
  const changed = onePolicyAdded(snapshot);
  writeFileSync(old, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: snapshotObjects(snapshot) }));
  writeFileSync(neu, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: snapshotObjects(changed.snapshot) }));
  console.log(
    `tier ${tier} (seed ${seed}): ${stats.pods} pods, ${stats.policies} policies, ${stats.namespaces} namespaces, ${stats.nodes} nodes; node ${process.version}`,
  );
  if (only !== 'diff')
    for (const format of formats)
      measure(`map --format ${format}`, ['map', '--resources', old, '--format', format, '-o', join(dir, `map.${format}`)], [0]);
  if (only !== 'map') {
    console.log(`one policy added for the diff: ${changed.policy} (every pod of its namespace isolated for egress)`);
    measure('map --diff (one policy)', ['map', '--diff', old, neu, '--format', 'json', '-o', join(dir, 'diff.json')], [1]);
  }
} finally {
  if (keep === '') rmSync(dir, { recursive: true, force: true });
}
