// Keeps the bridge table current as pods come and go: re-reads the bridge's ports (kernel) and the CNI
// result cache on every change the cache watch reports and on a short poll, and rewrites the table when
// the bindings or the policing of bridged traffic changed (`refresh()` after each sync), and every
// `reassertMs`, which repairs a table someone deleted.
// Each write carries the drop counts of the table it replaces. Refreshes never overlap; requests
// during one fold into one more.

import type { CniBinding } from '../dataplane/cni-cache.js';
import type { Logger } from '../log.js';
import type { BridgedPolicing } from './bridged.js';
import { antiSpoofState, type AntiSpoofState, type PortLink } from './model.js';
import { renderAntiSpoof, type CarriedCounts, type TableOptions } from './render.js';

export interface AntiSpoofDeps {
  readonly bridge: string;
  readonly readLinks: () => Promise<readonly PortLink[]>;
  /** undefined: this node has no CNI result cache, so nothing can be bound (and nothing is programmed). */
  readonly readCache: () => Promise<readonly CniBinding[] | undefined>;
  readonly apply: (script: string) => Promise<void>;
  /** Whether ports are bound to their addresses (the prerouting chain); bridged traffic is judged either way. */
  readonly antiSpoofing: boolean;
  /** Which local pods are isolated, as the last sync programmed them (bridged.ts). */
  readonly policing: () => BridgedPolicing;
  /** Drop counts of the table now programmed, by rule comment (written into its replacement). */
  readonly readCounts?: () => Promise<CarriedCounts>;
  readonly watch?: (onChange: () => void) => () => void;
  readonly logger: Logger;
  readonly pollMs?: number;
  readonly reassertMs?: number;
  readonly now?: () => number;
}

export class AntiSpoofGuard {
  /** The bindings last programmed; undefined until the first successful write. */
  state: AntiSpoofState | undefined;
  writes = 0;
  private lastScript = '';
  private lastWriteAt = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private unwatch: (() => void) | undefined;
  private warnedNoCache = false;
  /** Conflicts present at the last read, so each is logged once when it appears, not on every poll. */
  private knownConflicts = new Set<string>();

  constructor(private readonly deps: AntiSpoofDeps) {}

  start(): void {
    this.unwatch = this.deps.watch?.(() => void this.refresh());
    this.timer = setInterval(() => void this.refresh(), this.deps.pollMs ?? 1000);
    this.timer.unref();
    // loop() catches and logs each pass's failure, so nobody needs to await the first one.
    void this.refresh();
  }

  /** Re-read and rewrite if needed; returns when this request (or a later one) has been served. */
  refresh(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop().finally(() => (this.running = undefined));
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.unwatch?.();
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      await this.once().catch((err: Error) =>
        this.deps.logger.warn('anti-spoofing: refresh failed; retried on the next poll', { error: err.message }),
      );
    } while (this.again);
  }

  private async once(): Promise<void> {
    // The cache first: a node without one is not polled for links every second for nothing.
    const cache = await this.deps.readCache();
    if (cache === undefined) {
      if (!this.warnedNoCache) {
        this.deps.logger.error(
          this.deps.antiSpoofing
            ? 'anti-spoofing: no CNI result cache on this node (results/ missing under cniCacheDir): pod ports are NOT bound to their addresses, and bridged pod traffic no pod address explains is NOT judged'
            : 'no CNI result cache on this node (results/ missing under cniCacheDir): bridged pod traffic no pod address explains is NOT judged',
        );
        this.warnedNoCache = true;
      }
      return;
    }
    this.warnedNoCache = false;
    const state = antiSpoofState(this.deps.bridge, await this.deps.readLinks(), cache);
    this.logNewConflicts(state);
    const options: TableOptions = { antiSpoofing: this.deps.antiSpoofing, policing: this.deps.policing() };
    const script = renderAntiSpoof(state, new Map(), options);
    const now = (this.deps.now ?? Date.now)();
    if (script === this.lastScript && now - this.lastWriteAt < (this.deps.reassertMs ?? 30_000)) return;
    // Packets dropped between this read and the write are not carried (a window of milliseconds).
    const counts = (await this.deps.readCounts?.()) ?? new Map();
    await this.deps.apply(counts.size > 0 ? renderAntiSpoof(state, counts, options) : script);
    if (script !== this.lastScript) {
      this.deps.logger.info('bridge table written: pod ports bound', {
        bound: state.bindings.map((b) => `${b.port}=${[...b.ipv4, ...b.ipv6].join('+')}`),
        unknownPorts: state.unknownPorts,
      });
    }
    this.state = state;
    this.lastScript = script;
    this.lastWriteAt = now;
    this.writes++;
  }

  private logNewConflicts(state: AntiSpoofState): void {
    const now = new Set<string>();
    for (const c of state.conflicts) {
      const claims = c.claims.map((x) => `${x.entry} (port ${x.port})`);
      const key = `${c.address} ${claims.join(' ')}`;
      now.add(key);
      if (!this.knownConflicts.has(key))
        this.deps.logger.warn('anti-spoofing: CNI cache entries of different ports claim one address; neither port may send as it', {
          address: c.address,
          claims,
        });
    }
    this.knownConflicts = now;
  }
}
