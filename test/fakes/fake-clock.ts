// A clock for tests of anything paced by src/reconcile/runner.ts: time moves only when the test says so.

import type { Clock } from '../../src/reconcile/runner.js';

/** A clock whose timers fire only when the test advances it. */
export class FakeClock implements Clock {
  private t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    this.timers.set(++this.seq, { at: this.t + ms, fn });
    return this.seq;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time on by `ms` and fires every timer now due, earliest first. */
  advance(ms: number): void {
    this.t += ms;
    for (;;) {
      const due = [...this.timers].filter(([, t]) => t.at <= this.t).sort(([, a], [, b]) => a.at - b.at)[0];
      if (!due) return;
      this.timers.delete(due[0]);
      due[1].fn();
    }
  }

  /** When the earliest pending timer fires, relative to now (undefined: none armed). */
  nextDelay(): number | undefined {
    const ats = [...this.timers.values()].map((t) => t.at);
    return ats.length ? Math.min(...ats) - this.t : undefined;
  }
}
