// A KernelPort that times every call it forwards, so a Syncer.sync can be split into time spent in
// the kernel tools and time spent in netfence's own code (planning, parsing, bookkeeping).

import type { Kernel } from '../../src/dataplane/kernel.js';
import type { IpFamily } from '../../src/model/index.js';
import type { KernelPort } from '../../src/reconcile/syncer.js';
import { fmtMs, median, type Sample } from './bench-stats.js';

export interface KernelCall {
  readonly op: 'ipset save' | 'ipset restore' | `iptables-save v${IpFamily}` | `iptables-restore v${IpFamily}`;
  readonly ms: number;
  /** performance.now() at the start: reads run side by side, so durations alone overcount. */
  readonly start: number;
}

export class TimedKernel implements KernelPort {
  calls: KernelCall[] = [];

  constructor(private readonly kernel: Kernel) {}

  /** Returns the calls recorded since the last take and starts a new record. */
  take(): KernelCall[] {
    const out = this.calls;
    this.calls = [];
    return out;
  }

  supports(family: IpFamily): boolean {
    return this.kernel.supports(family);
  }
  saveFilter(family: IpFamily): Promise<string> {
    return this.time(`iptables-save v${family}`, () => this.kernel.saveFilter(family));
  }
  restoreFilter(family: IpFamily, text: string): Promise<void> {
    return this.time(`iptables-restore v${family}`, () => this.kernel.restoreFilter(family, text));
  }
  ipsetSave(): Promise<string> {
    return this.time('ipset save', () => this.kernel.ipsetSave());
  }
  ipsetRestore(text: string): Promise<void> {
    return this.time('ipset restore', () => this.kernel.ipsetRestore(text));
  }

  private async time<T>(op: KernelCall['op'], fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.calls.push({ op, ms: performance.now() - t0, start: t0 });
    }
  }
}

/** Wall time during which at least one tool ran (the union of the calls' intervals). */
export function kernelMs(calls: readonly KernelCall[]): number {
  let total = 0;
  let end = -Infinity;
  for (const c of [...calls].sort((a, b) => a.start - b.start)) {
    const stop = c.start + c.ms;
    if (stop <= end) continue;
    total += stop - Math.max(c.start, end);
    end = stop;
  }
  return total;
}

/** "ipset restore 12 ms + iptables-restore v4 30 ms" (calls of the same op summed; reads may overlap). */
export function describeCalls(calls: readonly Pick<KernelCall, 'op' | 'ms'>[], fmt: (ms: number) => string): string {
  const byOp = new Map<string, { ms: number; n: number }>();
  for (const c of calls) {
    const e = byOp.get(c.op) ?? { ms: 0, n: 0 };
    byOp.set(c.op, { ms: e.ms + c.ms, n: e.n + 1 });
  }
  return [...byOp].map(([op, e]) => `${op}${e.n > 1 ? ` ×${e.n}` : ''} ${fmt(e.ms)} ms`).join(' + ') || 'no kernel calls';
}

export const silentLogger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

/** One row's runs: netfence's samples, the floor's, and the kernel calls netfence made in each run. */
export interface TimedRuns {
  readonly ours: Sample[];
  readonly floor: Sample[];
  readonly calls: KernelCall[][];
}

/** Where netfence's time went: the tools it ran (median per operation) and its own in-process work. */
export function kernelBreakdown(t: TimedRuns): string {
  const kernel = median(t.calls.map(kernelMs));
  const own = median(t.ours.map((s, i) => s.wallMs - kernelMs(t.calls[i] ?? [])));
  const ops = new Map<string, number[]>();
  for (const calls of t.calls) {
    const sums = new Map<string, number>();
    for (const c of calls) sums.set(c.op, (sums.get(c.op) ?? 0) + c.ms);
    for (const [op, ms] of sums) ops.set(op, [...(ops.get(op) ?? []), ms]);
  }
  const opText = describeCalls(
    [...ops].map(([op, xs]) => ({ op: op as KernelCall['op'], ms: median(xs) })),
    fmtMs,
  );
  return `netfence = tools running ${fmtMs(kernel)} ms of the wall time (${opText}; the reads run side by side) + in-process ${fmtMs(own)} ms`;
}
