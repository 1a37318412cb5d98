// Event → programmed latency, one observation per sync: from the earliest cluster event the sync included
// to its end. A sync includes the events seen before it began (it reads the snapshot then); one seen
// while it runs is the next sync's, and its wait starts when it arrived. (Keeping only the first pending
// event lost those: under churn most events arrive during a sync, and their wait went unmeasured.)

/** Beyond this many events waiting with no successful sync, the oldest are forgotten (the apply-failure metrics say why). */
const MAX_PENDING = 10_000;

export class EventLatency {
  /** Whether the first sync finished: the initial lists are start-up, not latency. */
  private started = false;
  /** When each event not yet programmed was seen, oldest first. */
  private pending: number[] = [];

  constructor(
    private readonly observe: (seconds: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  eventSeen(): void {
    if (!this.started) return;
    this.pending.push(this.now());
    if (this.pending.length > MAX_PENDING) this.pending.splice(0, this.pending.length - MAX_PENDING);
  }

  /** A sync that took `seconds` just finished. */
  programmed(seconds: number): void {
    const now = this.now();
    const began = now - seconds * 1000;
    let included = 0;
    while (included < this.pending.length && this.pending[included]! <= began) included++;
    if (included > 0) {
      this.observe((now - this.pending[0]!) / 1000);
      this.pending.splice(0, included);
    }
    this.started = true;
  }
}
