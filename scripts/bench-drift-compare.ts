// What the drift check's rule comparison costs: a read of the kernel against what was programmed
// (syncer.ts sameObserved) and the plan against that read (planFamily), over a synthetic cluster, for a
// save printed exactly as netfence renders (the usual case: one string compare per rule) and for one
// printed another way (every rule's comment moved behind its other matches: every rule parsed back into
// its canonical form). Parsing the save is timed separately; it does not depend on the comparison.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-drift-compare.ts [--tier large] [--runs 10]

import { performance } from 'node:perf_hooks';
import { compile } from '../src/compile/index.js';
import { expectedObserved, observeFamily, planFamily, type Ownership } from '../src/plan/index.js';
import { sameObserved } from '../src/reconcile/kernel-reads.js';
import { renderFullRestore, renderIpsetRestore } from '../src/render/index.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const tier = (flag('--tier') ?? 'large') as Tier;
if (!TIERS.includes(tier)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
const runs = Number(flag('--runs') ?? 10);

const { snapshot, settings, stats } = generateCluster({ tier, seed: 1, node: 'node-1' });
const desired = compile(snapshot, settings).desired.v4;
const own: Ownership = { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix };
const asSave = (restore: string): string =>
  restore
    .replace(/^-I (\S+) 1 /gm, '-A $1 ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');
const ipsets = renderIpsetRestore(desired.ipsets);
const asRendered = asSave(renderFullRestore(desired));
const reprinted = asRendered.replace(
  /^(-A \S+ .*?)(-m comment --comment "[^"]*") (.*?)(-[jg] .*)$/gm,
  (_all, head: string, comment: string, rest: string, target: string) => `${head}${rest}${comment} ${target}`,
);
const rules = asRendered.split('\n').filter((l) => l.startsWith('-A ')).length;
const changed = asRendered.split('\n').filter((l, i) => l !== reprinted.split('\n')[i]).length;

function median(f: () => unknown): number {
  for (let i = 0; i < 3; i++) f();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    f();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const programmed = expectedObserved(desired);
console.log(`tier ${tier}: ${stats.pods} pods, ${rules} rules of ours, ${changed} printed differently in the reprint; median of ${runs}`);
for (const [name, save] of [
  ['as rendered', asRendered],
  ['reprinted', reprinted],
] as const) {
  const parse = median(() => observeFamily(4, save, ipsets, own));
  const observed = observeFamily(4, save, ipsets, own);
  if (!sameObserved(programmed, observed)) throw new Error(`${name}: taken for drift`);
  if (planFamily(desired, observed, own).changes.length > 0) throw new Error(`${name}: planned a rewrite`);
  const compare = median(() => sameObserved(programmed, observed));
  const plan = median(() => planFamily(desired, observed, own));
  console.log(`${name.padEnd(12)} parse ${parse.toFixed(1)} ms · sameObserved ${compare.toFixed(1)} ms · planFamily ${plan.toFixed(1)} ms`);
}
