// One loop paces every sync (kube-proxy's BoundedFrequencyRunner): a change runs at once when the last
// run started at least `batchWindowMs` ago, else when that much time has passed (so a burst folds into
// one run instead of one run per event); failures retry with exponential backoff, and an idle loop still
// runs every `maxIntervalMs` (the drift check; its kernel read may be done beforehand, outside the run, so
// changes are not held up by it). Runs never overlap. Time is injected so tests control it.

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

/**
 * Why a run happens: a requested change, the periodic drift check, a retry after a failure, or a cleanup of
 * what a successful run left to finish (stale sets still in use); any sync due with a cleanup does it too.
 */
export type RunReason = 'change' | 'periodic' | 'retry' | 'cleanup';

export interface RunnerOptions {
  /** Change runs start at least this far apart: requests within it fold into one run. An isolated request runs at once. */
  readonly batchWindowMs: number;
  /** The drift check period: a run happens at least this often. */
  readonly maxIntervalMs: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly clock: Clock;
  /**
   * Work a periodic run starts with that may overlap change runs (reading the kernel): started when the
   * periodic run is due, the run itself follows once it resolves. Changes meanwhile run as usual instead of
   * waiting behind a read that takes half a second at 50,000 pods.
   */
  readonly preparePeriodic?: () => Promise<void>;
}

export class BoundedFrequencyRunner {
  private timer: unknown;
  /** When each kind of run is due; the timer fires at the earliest. */
  private readonly due = new Map<RunReason, number>();
  private running = false;
  /** 'preparing' while preparePeriodic runs; 'prepared' once it resolved, until the periodic run. */
  private periodicPrep: 'none' | 'preparing' | 'prepared' = 'none';
  /** requestFull came while the periodic run was being prepared. */
  private fullAgain = false;
  /** When the last run started (its start paces the next change run, as kube-proxy's minInterval). */
  private lastStart = -Infinity;
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
    this.periodicPrep = 'none';
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  /** Something changed: run now if the last run started a batch window ago, else when it has (or right after the run in progress). */
  request(): void {
    if (this.stopped) return;
    if (this.running) this.pendingChange = true;
    else this.scheduleChange();
  }

  /**
   * Someone else changed the kernel (the hook watch saw our jump displaced): run a full, kernel-reading
   * sync now, or right after the run in progress. It counts as the periodic drift check.
   */
  requestFull(): void {
    if (this.stopped) return;
    // A read already under way may have been taken before what prompted this: one more after it.
    if (this.periodicPrep === 'preparing') this.fullAgain = true;
    this.schedule(0, 'periodic');
  }

  /** Finish what the last run left (its own backoff is the caller's): a cleanup run in `delayMs`. */
  requestCleanup(delayMs: number): void {
    if (this.stopped) return;
    this.schedule(delayMs, 'cleanup');
  }

  /**
   * Waiting a fixed window after every event cost each isolated event the whole window; bursts are what the
   * window is for, and a burst is a request soon after a run started. (A zero delay still lets the requests
   * of one tick of the event loop fold into one run.)
   */
  private scheduleChange(): void {
    this.schedule(Math.max(0, this.lastStart + this.opts.batchWindowMs - this.opts.clock.now()), 'change');
  }

  private schedule(delayMs: number, reason: RunReason): void {
    // While the periodic run is being prepared, it is already coming.
    if (reason === 'periodic' && this.periodicPrep === 'preparing') return;
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
    const reason: RunReason = (['periodic', 'retry', 'change', 'cleanup'] as const).find((r) => ready.includes(r))!;
    if (reason === 'periodic' && this.opts.preparePeriodic && this.periodicPrep === 'none') {
      // Put back whatever else was due; the periodic run comes back when its preparation is done.
      for (const r of ready) if (r !== 'periodic') this.due.set(r, now);
      this.periodicPrep = 'preparing';
      void this.opts
        .preparePeriodic()
        .catch(() => undefined)
        .then(() => {
          if (this.stopped) return;
          this.periodicPrep = 'prepared';
          this.due.set('periodic', this.opts.clock.now());
          // At once (not through the clock), unless a run is in progress: it arms the timer when it ends.
          if (this.running) return;
          if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
          void this.fire();
        });
      return this.arm();
    }
    if (reason === 'periodic') this.periodicPrep = 'none';
    if (reason !== 'change' && reason !== 'cleanup') this.due.delete('change');
    if (reason !== 'cleanup') this.due.delete('cleanup');
    this.running = true;
    // A cleanup is not a sync: it does not hold the next change back by a batch window.
    if (reason !== 'cleanup') this.lastStart = now;
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
      if (reason !== 'cleanup') this.due.delete('retry');
      this.schedule(this.opts.maxIntervalMs, 'periodic');
    } else {
      this.schedule(Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** (this.failures - 1)), 'retry');
    }
    if (reason === 'periodic' && this.fullAgain) {
      this.fullAgain = false;
      this.schedule(0, 'periodic');
    }
    if (this.pendingChange) {
      this.pendingChange = false;
      this.scheduleChange();
    }
    this.arm();
  }
}
