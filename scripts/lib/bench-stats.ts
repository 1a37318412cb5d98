// Small statistics and CPU accounting for the benchmarks: medians, percentiles, and the CPU time of
// this process plus the tools it ran (which is where most of a sync's CPU goes).

import { readFileSync } from 'node:fs';

export const median = (xs: readonly number[]): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Milliseconds with about three significant digits. */
export const fmtMs = (x: number): string => (Number.isNaN(x) ? '–' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
export const fmtInt = (n: number): string => n.toLocaleString('en-US');

/** USER_HZ: /proc reports child CPU in these ticks (100 on every Linux ABI node runs on). */
const CLOCK_TICKS_PER_S = 100;

/**
 * CPU ms of every child this process has waited for (cutime + cstime of /proc/self/stat, i.e.
 * getrusage(RUSAGE_CHILDREN)). execa waits for each tool, and `ip netns exec` execs the tool in
 * place, so each call adds exactly the tool's own CPU. The kernel keeps the sum in ns and rounds it
 * to 10 ms ticks when read, so deltas are only good to ±10 ms: sum them over many runs.
 */
export function childCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  // Fields after the parenthesised command name (which may contain spaces); cutime/cstime are fields 16/17.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cutime = Number(fields[16 - 3]);
  const cstime = Number(fields[17 - 3]);
  return ((cutime + cstime) * 1000) / CLOCK_TICKS_PER_S;
}

/** CPU ms of this process (all threads: JS, GC, libuv), from process.cpuUsage. */
export const selfCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export interface Sample {
  readonly wallMs: number;
  readonly selfCpuMs: number;
  readonly childCpuMs: number;
}

/** Runs `fn` once and returns its wall time and the CPU it and its children used. */
export async function sample(fn: () => Promise<unknown>): Promise<Sample> {
  const c0 = childCpuMs();
  const s0 = selfCpuMs();
  const t0 = performance.now();
  await fn();
  const wallMs = performance.now() - t0;
  return { wallMs, selfCpuMs: selfCpuMs() - s0, childCpuMs: childCpuMs() - c0 };
}

/** Median wall time; CPU as the mean over all samples (the 10 ms child tick makes per-run medians meaningless). */
export function summarize(samples: readonly Sample[]): { wallMs: number; selfCpuMs: number; childCpuMs: number; cpuMs: number } {
  const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const selfCpu = mean(samples.map((s) => s.selfCpuMs));
  const childCpu = mean(samples.map((s) => s.childCpuMs));
  return { wallMs: median(samples.map((s) => s.wallMs)), selfCpuMs: selfCpu, childCpuMs: childCpu, cpuMs: selfCpu + childCpu };
}
