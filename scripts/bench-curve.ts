// The cost curve: the same measurements at 1,000, 10,000, 50,000 and 100,000 pods (policies 1:10), with
// the growth exponent between tiers (cost ∝ pods^k; k = 1 is linear). `npm run bench -- --curve`.
//
// Usage (root): npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-curve.ts [--seed 1] [--runs 2]
//
// Per tier: full compile (warm, in process) and one-change recompute (a remote pod's label changed),
// both from scripts/bench-compile.ts; first apply and the drift check, each beside its floor, from
// scripts/bench-kernel.ts; the daemon's start → ready time, RSS, and the bytes the fake API server sent it
// at start and per event, from scripts/bench-daemon.ts. Slow: about 15–30 minutes on 2 cores.

import type { Tier } from './bench-lib/generator.js';
import { TIER_SHAPES } from './bench-lib/generator.js';
import { kernelBench } from './bench-kernel.js';
import { compileRows, daemonFigures } from './lib/bench-children.js';
import type { BenchRow } from './lib/bench-table.js';

export const CURVE_TIERS: readonly Tier[] = ['medium', 'large', 'xl', 'xxl'];

interface Metric {
  readonly what: string;
  readonly unit: string;
  /** Per tier; NaN when the tier's run failed. */
  readonly values: number[];
  /** Whether it should not grow with the cluster at all (a one-pod change). */
  readonly flat?: boolean;
}

const msOf = (cell: string | undefined): number => Number((cell ?? '').replace(/[^\d.]/g, '') || NaN);
const rowMs = (rows: readonly BenchRow[], id: string, cell: 'value' | 'floor' = 'value'): number =>
  msOf(rows.find((r) => r.id === id)?.[cell]);

/** k in cost ∝ n^k between two tiers. */
export const growthExponent = (a: number, b: number, na: number, nb: number): number => Math.log(b / a) / Math.log(nb / na);

export async function curve(o: { seed: number; runs: number; progress: (m: string) => void }): Promise<string> {
  const m = {
    compile: { what: 'full compile (warm, in process)', unit: 'ms', values: [] as number[] },
    recompute: { what: "one-change recompute (a remote pod's label)", unit: 'ms', values: [] as number[], flat: true },
    apply: { what: 'first apply', unit: 'ms', values: [] as number[] },
    applyFloor: { what: 'first apply: floor (same texts, tools)', unit: 'ms', values: [] as number[] },
    drift: { what: 'drift check', unit: 'ms', values: [] as number[] },
    driftFloor: { what: 'drift check: floor (the two saves)', unit: 'ms', values: [] as number[] },
    ready: { what: 'daemon start → ready', unit: 'ms', values: [] as number[] },
    rssReady: { what: 'daemon RSS after first sync', unit: 'MiB', values: [] as number[] },
    rss: { what: 'daemon RSS after events', unit: 'MiB', values: [] as number[] },
    apiStart: { what: 'API bytes to one node at start', unit: 'MB', values: [] as number[] },
    apiEvent: { what: 'API bytes to one node per event', unit: 'B', values: [] as number[], flat: true },
  } satisfies Record<string, Metric>;
  for (const tier of CURVE_TIERS) {
    o.progress(`curve: ${tier} (${TIER_SHAPES[tier].pods} pods): compile`);
    const c = await compileRows({ tier, runs: o.runs, seed: o.seed });
    m.compile.values.push(rowMs(c, 'full-compile'));
    m.recompute.values.push(rowMs(c, 'recompute-podLabelChange-remote'));
    o.progress(`curve: ${tier}: kernel`);
    const k = [
      ...(await kernelBench({ tier, seed: o.seed, runs: o.runs, node: 'node-1', only: 'first-apply' })),
      ...(await kernelBench({ tier, seed: o.seed, runs: o.runs, node: 'node-1', only: 'drift-wall' })),
    ];
    m.apply.values.push(rowMs(k, 'first-apply'));
    m.applyFloor.values.push(rowMs(k, 'first-apply', 'floor'));
    m.drift.values.push(rowMs(k, 'drift-wall'));
    m.driftFloor.values.push(rowMs(k, 'drift-wall', 'floor'));
    o.progress(`curve: ${tier}: daemon`);
    const d = await daemonFigures({ tier, seed: o.seed, events: 10 }).catch((err: unknown) => {
      o.progress(`curve: ${tier}: daemon failed: ${(err as Error).message.split('\n')[0]}`);
      return undefined;
    });
    m.ready.values.push(d?.readyMs ?? NaN);
    m.rssReady.values.push(d?.rssReadyMiB ?? NaN);
    m.rss.values.push(d?.rssAfterMiB ?? NaN);
    m.apiStart.values.push((d?.apiBytesAtStart ?? NaN) / 1e6);
    m.apiEvent.values.push(d?.apiBytesPerEvent ?? NaN);
    // Each tier's figures as soon as they exist: a run cut short still leaves what it measured.
    o.progress(
      `curve: ${tier} done: ${Object.values(m)
        .map((x: Metric) => `${x.what} ${x.values.at(-1)} ${x.unit}`)
        .join('; ')}`,
    );
  }
  const pods = CURVE_TIERS.map((t) => TIER_SHAPES[t].pods);
  const fmt = (x: number) => (Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x.toFixed(1));
  const head = `| metric | ${CURVE_TIERS.map((t, i) => `${t} (${pods[i]!.toLocaleString('en-US')} pods)`).join(' | ')} | ${pods
    .slice(1)
    .map((p, i) => `k ${pods[i]! / 1000}k→${p / 1000}k`)
    .join(' | ')} |`;
  const lines = [
    head,
    `|---|${CURVE_TIERS.map(() => '---:').join('|')}|${pods
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
  ];
  for (const metric of Object.values(m) as Metric[]) {
    const ks = metric.values.slice(1).map((v, i) => growthExponent(metric.values[i]!, v, pods[i]!, pods[i + 1]!));
    const flag = (k: number) => (Number.isNaN(k) ? '–' : (metric.flat ? k > 0.3 : k > 1.15) ? `**${k.toFixed(2)}**` : k.toFixed(2));
    lines.push(`| ${metric.what} (${metric.unit}) | ${metric.values.map(fmt).join(' | ')} | ${ks.map(flag).join(' | ')} |`);
  }
  return [
    `k is the growth exponent between neighbouring tiers (cost ∝ pods^k); bold: faster than linear, or growing at all for a one-change figure. Seed ${o.seed}, ${o.runs} runs per kernel/compile figure.`,
    '',
    ...lines,
  ].join('\n');
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) {
  const argv = process.argv.slice(2);
  const value = (flag: string, fallback: number) => (argv.includes(flag) ? Number(argv[argv.indexOf(flag) + 1]) : fallback);
  if (process.getuid?.() !== 0) {
    console.error('bench-curve needs root (kernel and daemon rows create network namespaces); run it with sudo.');
    process.exit(2);
  }
  console.log(await curve({ seed: value('--seed', 1), runs: value('--runs', 2), progress: (msg) => console.error(`… ${msg}`) }));
}
