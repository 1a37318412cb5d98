// One loop paces every sync (kube-proxy's BoundedFrequencyRunner): bursts of requests fold into one run
// after a short window, failures retry with exponential backoff, and an idle loop still runs every
// `maxIntervalMs` (the drift check). Runs never overlap. Time is injected so tests control it.

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Why a run happens: a requested change, the periodic drift check, or a retry after a failure. */
export type RunReason = 'change' | 'periodic' | 'retry';

export interface RunnerOptions {
  /** Requests within this window fold into one run. */
  readonly batchWindowMs: number;
  /** The drift check period: a run happens at least this often. */
  readonly maxIntervalMs: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly clock: Clock;
}

export class BoundedFrequencyRunner {
  private timer: unknown;
  /** When each kind of run is due; the timer fires at the earliest. */
  private readonly due = new Map<RunReason, number>();
  private running = false;
  private pendingChange = false;
  private failures = 0;
  private stopped = true;

  constructor(
    private readonly fn: (reason: RunReason) => Promise<void>,
    private readonly opts: RunnerOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(this.opts.maxIntervalMs, 'periodic');
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  /** Something changed: run within the batch window (or right after the run in progress). */
  request(): void {
    if (this.stopped) return;
    if (this.running) this.pendingChange = true;
    else this.schedule(this.opts.batchWindowMs, 'change');
  }

  /**
   * Someone else changed the kernel (the hook watch saw our jump displaced): run a full, kernel-reading
   * sync now, or right after the run in progress. It counts as the periodic drift check.
   */
  requestFull(): void {
    if (this.stopped) return;
    this.schedule(0, 'periodic');
  }

  private schedule(delayMs: number, reason: RunReason): void {
    const at = this.opts.clock.now() + delayMs;
    if ((this.due.get(reason) ?? Infinity) > at) this.due.set(reason, at);
    this.arm();
  }

  private arm(): void {
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running || this.stopped || this.due.size === 0) return;
    const next = Math.min(...this.due.values());
    this.timer = this.opts.clock.setTimeout(() => void this.fire(), Math.max(0, next - this.opts.clock.now()));
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    const now = this.opts.clock.now();
    const ready = [...this.due].filter(([, at]) => at <= now).map(([r]) => r);
    if (ready.length === 0) return this.arm();
    for (const r of ready) this.due.delete(r);
    // A periodic run re-reads the kernel, so it also covers a change or a retry due at the same time.
    const reason: RunReason = ready.includes('periodic') ? 'periodic' : ready.includes('retry') ? 'retry' : 'change';
    if (reason !== 'change') this.due.delete('change');
    this.running = true;
    let ok = true;
    try {
      await this.fn(reason);
      this.failures = 0;
    } catch {
      ok = false;
      this.failures++;
    }
    this.running = false;
    if (this.stopped) return;
    if (ok) {
      this.due.delete('retry');
      this.schedule(this.opts.maxIntervalMs, 'periodic');
    } else {
      this.schedule(Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** (this.failures - 1)), 'retry');
    }
    if (this.pendingChange) {
      this.pendingChange = false;
      this.schedule(this.opts.batchWindowMs, 'change');
    }
    this.arm();
  }
}
