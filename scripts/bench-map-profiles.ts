// The profile step of `netfence map --diff` alone: both clusters compiled once, then prepared again and again
// over those compiled rules with a fresh cache (so every profile and address class is made anew, none of the
// compile is), as the CLI runs it (V8's optimizing compiler off, cli/main.ts). Prints the CPU (user+sys) and
// the garbage collections of each round; whole-command figures are bench-map's.
//
// Usage: node --expose-gc --import ./scripts/register-ts.mjs scripts/bench-map-profiles.ts OLD.json NEW.json [--rounds 5]
//   (bench-map --keep DIR writes the large tier's OLD and NEW as DIR/old.json and DIR/new.json)

import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { loadManifests } from '../src/cluster/manifests.js';
import { loadConfig } from '../src/config/load.js';
import { settingsPerNode } from '../src/config/node-settings.js';
import { carryOver } from '../src/map/carry-over.js';
import { defaultFamily, prepareAll, PrepareCache } from '../src/map/prepare.js';

setFlagsFromString('--no-opt');
const [oldPath, newPath] = process.argv.slice(2).filter((a) => a.endsWith('.json'));
if (!oldPath || !newPath) throw new Error('usage: bench-map-profiles.ts OLD.json NEW.json [--rounds N]');
const at = process.argv.indexOf('--rounds');
const rounds = at >= 0 ? Number(process.argv[at + 1]) : 5;
const gc = (globalThis as { gc?: () => void }).gc;

const config = loadConfig({ argvFlags: {}, env: {}, requireNodeName: false }).config;
const before = loadManifests([oldPath]).snapshot;
const after = loadManifests([newPath]).snapshot;
const [old, neu] = carryOver(before, after);
const sides = [
  { snapshot: old, settingsFor: settingsPerNode(config, before), compiled: new Map() },
  { snapshot: neu, settingsFor: settingsPerNode(config, after), compiled: new Map() },
];
const family = defaultFamily(after);
// The compile, once: every later round finds each node's rules made.
prepareAll(sides, family, new PrepareCache());

let collections: PerformanceEntry[] = [];
new PerformanceObserver((list) => collections.push(...list.getEntries())).observe({ entryTypes: ['gc'] });
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
for (let round = 1; round <= rounds; round++) {
  gc?.();
  await settle();
  collections = [];
  const start = process.cpuUsage();
  const [p0] = prepareAll(sides, family, new PrepareCache());
  const used = process.cpuUsage(start);
  await settle();
  const gcMs = collections.reduce((sum, e) => sum + e.duration, 0);
  console.log(
    `round ${round}: profiles and address classes of both clusters: cpu ${((used.user + used.system) / 1000).toFixed(0)} ms, ` +
      `${collections.length} garbage collections (${gcMs.toFixed(0)} ms), ${p0!.pods.length} pods`,
  );
}
if (!gc) console.log('(run node with --expose-gc for rounds that start from a collected heap)');
