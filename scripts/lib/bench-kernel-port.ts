// A KernelPort that times every call it forwards, so a Syncer.sync can be split into time spent in
// the kernel tools and time spent in netfence's own code (planning, parsing, bookkeeping).

import type { Kernel } from '../../src/dataplane/kernel.js';
import type { IpFamily } from '../../src/model/index.js';
import type { KernelPort } from '../../src/reconcile/syncer.js';

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
