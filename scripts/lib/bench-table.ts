// The one table `npm run bench` prints: every row with its figure, the floor measured in the same run,
// the ratio, the target, met/missed, and the exact command that reproduces it.

import { fmtMs } from './bench-stats.js';

export type Verdict = 'met' | 'missed' | 'info' | 'skipped' | 'failed';

export interface BenchRow {
  /** Short stable id, also what `--only` selects. */
  readonly id: string;
  readonly what: string;
  /** netfence's figure, formatted (e.g. "182 ms"). */
  readonly value: string;
  /** The floor measured in the same run, formatted; "–" when the row has none. */
  readonly floor?: string;
  readonly ratio?: string;
  readonly target?: string;
  readonly verdict: Verdict;
  /** What was written / counted / why skipped. */
  readonly detail?: string;
  readonly command: string;
}

const cell = (s: string | undefined): string => (s === undefined || s === '' ? '–' : s.replace(/\|/g, '\\|').replace(/\n/g, ' '));

const verdictText: Record<Verdict, string> = { met: 'met', missed: '**missed**', info: '–', skipped: 'skipped', failed: '**failed**' };

export function renderTable(rows: readonly BenchRow[]): string {
  const out = [
    '| row | what | netfence | floor (same run) | ratio | target | verdict | detail | command |',
    '|---|---|---:|---:|---:|---|---|---|---|',
  ];
  for (const r of rows) {
    out.push(
      `| ${cell(r.id)} | ${cell(r.what)} | ${cell(r.value)} | ${cell(r.floor)} | ${cell(r.ratio)} | ${cell(r.target)} | ${verdictText[r.verdict]} | ${cell(r.detail)} | \`${r.command}\` |`,
    );
  }
  return out.join('\n');
}

/** "1.23×" */
export const fmtRatio = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');

export const atMost = (value: number, limit: number): Verdict => (value <= limit ? 'met' : 'missed');

/** The cells of a row timed against its floor: both in ms, their ratio, and whether it is within `limit`×. */
export function againstFloor(
  oursMs: number,
  floorMs: number,
  limit: number,
): Pick<BenchRow, 'value' | 'floor' | 'ratio' | 'target' | 'verdict'> {
  return {
    value: `${fmtMs(oursMs)} ms`,
    floor: `${fmtMs(floorMs)} ms`,
    ratio: fmtRatio(oursMs / floorMs),
    target: `≤ ${limit}×`,
    verdict: atMost(oursMs / floorMs, limit),
  };
}
export const below = (value: number, limit: number): Verdict => (value < limit ? 'met' : 'missed');

/** A row for a part that could not run, saying why. */
export const skippedRow = (id: string, what: string, why: string, command: string): BenchRow => ({
  id,
  what,
  value: '–',
  verdict: 'skipped',
  detail: why,
  command,
});
export const failedRow = (id: string, what: string, err: unknown, command: string): BenchRow => ({
  id,
  what,
  value: '–',
  verdict: 'failed',
  detail: (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 200),
  command,
});

/** The command line prefix every TypeScript benchmark script is run with. */
export const tsNode = (script: string, args: readonly string[]): string =>
  ['node --import ./scripts/register-ts.mjs', script, ...args].join(' ');
