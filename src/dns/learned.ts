// The learned entries on this node, counted by the agent so a pod resolving a million random names under a
// wildcard cannot exhaust the node: past `perNodeMax` unexpired entries a new address is refused (counted), an
// address already learned may always be refreshed. The kernel expires the set members itself; this count
// follows the same lifetimes, so an entry frees its place when its member is gone. The kernel's sets outlive the
// daemon: at start (and whenever the agent adopts a set that already holds members) the count is seeded from
// what the kernel holds, each member with its remaining timeout, so a restart does not reset the bound. Memory:
// one Map entry per learned (set, address) (a key string of ~40-70 bytes and a number: about 150 bytes in V8).

export type LearnOutcome = 'new' | 'refresh' | 'node-bound';

export class LearnedEntries {
  private readonly expiresAt = new Map<string, number>();
  private nextSweep = 0;

  /** The bound follows the plan's settings (a lower one refuses new addresses until enough expire). */
  constructor(public perNodeMax: number) {}

  get size(): number {
    return this.expiresAt.size;
  }

  /** Records (set, address) as living until `until` (ms), unless it is new and the node is at its bound. */
  learn(set: string, address: string, until: number, now: number): LearnOutcome {
    const key = `${set} ${address}`;
    const prior = this.expiresAt.get(key);
    if (prior !== undefined && prior > now) {
      // The kernel replaces the timeout on a re-add: the member lives until the later of the two only if the
      // new one is later, so keep what the kernel will hold (the new timeout).
      this.expiresAt.set(key, until);
      return 'refresh';
    }
    if (prior !== undefined) this.expiresAt.delete(key);
    if (this.expiresAt.size >= this.perNodeMax) {
      this.sweep(now);
      if (this.expiresAt.size >= this.perNodeMax) return 'node-bound';
    }
    this.expiresAt.set(key, until);
    return 'new';
  }

  /**
   * Counts a member the kernel already holds (read back at start or when a set is adopted), living until `until`
   * (ms). Counted whatever the bound: the kernel holds it, so it takes a place until it expires. Seen twice
   * (learned while the read was under way), the later lifetime is kept.
   */
  seed(set: string, address: string, until: number): void {
    const key = `${set} ${address}`;
    const prior = this.expiresAt.get(key);
    if (prior === undefined || prior < until) this.expiresAt.set(key, until);
  }

  /** Drops a set's entries (the set was destroyed with its rule, so its members are gone). */
  forgetSet(set: string): void {
    const prefix = `${set} `;
    for (const key of this.expiresAt.keys()) if (key.startsWith(prefix)) this.expiresAt.delete(key);
  }

  /** Removes expired entries; at the bound at most once a second, so an answer flood past it stays cheap. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 1000;
    for (const [key, until] of this.expiresAt) if (until <= now) this.expiresAt.delete(key);
  }
}
