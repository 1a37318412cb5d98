// Watches that netfence's jumps are still first in their kernel chains, on a short timer of its own.
// The full drift check re-reads the whole ruleset every resync interval (tens of seconds); a jump
// pushed down in the meantime is a hole, not cosmetic drift: kube-proxy prepends its FORWARD jump on
// restart, and its KUBE-FORWARD ACCEPTs every packet marked 0x4000 for masquerade (hairpin, NodePort
// with externalTrafficPolicy Cluster) before netfence sees it. Reading one rule of one chain costs
// ~10 ms, so it can run every second; when the first rule is not ours, a full resync repairs it.

import type { IpFamily } from '../model/index.js';
import { sameRule } from '../plan/index.js';
import { parseRuleLine, type RuleRecord } from '../render/index.js';
import type { Clock } from './runner.js';

export interface HookWatchOptions {
  /** The first rule of `chain` as iptables-save prints it, undefined when the chain is empty. */
  readonly firstRule: (family: IpFamily, chain: string) => Promise<string | undefined>;
  /** What must be first, per family and chain (the rendered hook); empty until the first sync programmed it. */
  readonly expected: () => readonly { readonly family: IpFamily; readonly chain: string; readonly rule: RuleRecord }[];
  /**
   * A jump is not first (`found` is what is first instead). Called on every tick while it is displaced,
   * so a failed repair is asked for again; `firstSeen` is true on the tick it went from first to not.
   */
  readonly onDisplaced: (info: {
    readonly family: IpFamily;
    readonly chain: string;
    readonly found: string | undefined;
    readonly firstSeen: boolean;
  }) => void;
  /** A read failed (tool missing, lock timeout): reported, and the next tick tries again. */
  readonly onError?: (error: Error) => void;
  readonly intervalMs: number;
  readonly clock: Clock;
}

export class HookWatch {
  private timer: unknown;
  private stopped = true;
  /** `family chain` of jumps seen displaced on the last check. */
  private displaced = new Set<string>();

  constructor(private readonly opts: HookWatchOptions) {}

  start(): void {
    if (this.opts.intervalMs <= 0 || !this.stopped) return;
    this.stopped = false;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One check of every expected jump; exported for tests, the timer calls it. */
  async check(): Promise<void> {
    const now = new Set<string>();
    for (const want of this.opts.expected()) {
      const key = `${want.family} ${want.chain}`;
      try {
        const found = await this.opts.firstRule(want.family, want.chain);
        const first = found === undefined ? undefined : parseRuleLine(found);
        if (first !== undefined && first.chain === want.chain && sameRule(first.rule, want.rule)) continue;
        now.add(key);
        this.opts.onDisplaced({ family: want.family, chain: want.chain, found, firstSeen: !this.displaced.has(key) });
      } catch (err) {
        if (this.displaced.has(key)) now.add(key);
        this.opts.onError?.(err as Error);
      }
    }
    this.displaced = now;
  }

  private arm(): void {
    if (this.stopped) return;
    // Re-armed after each check finishes, so a slow read (xtables lock) never stacks checks up.
    this.timer = this.opts.clock.setTimeout(() => {
      void this.check().finally(() => this.arm());
    }, this.opts.intervalMs);
  }
}
