// Queries the daemon saw leave a pod, waiting for their answer: an answer grants only in reply to the pod's own
// query (docs/dns-egress-design.md, "How query and answer are matched"). Keyed by (pod address, pod port, server
// address, transaction id), so an answer from another server, to another port or with another id finds nothing.
// Bounded per pod and per node (a new query past a bound is refused, counted; nothing already pending is evicted,
// so one pod's flood cannot push out another pod's queries) and kept only a resolver's timeout.

import type { SentQuery } from './answer.js';

export interface QueryKey {
  readonly pod: string;
  readonly podPort: number;
  readonly server: string;
  readonly id: number;
}

export type PendingOutcome = 'recorded' | 'pod-bound' | 'node-bound';

interface Entry {
  readonly query: SentQuery;
  readonly pod: string;
  readonly expires: number;
}

const keyOf = (k: QueryKey): string => `${k.pod}|${k.podPort}|${k.server}|${k.id}`;

export class PendingQueries {
  /** Insertion order is expiry order (one lifetime for all), so expired entries are always at the front. */
  private readonly entries = new Map<string, Entry>();
  private readonly perPod = new Map<string, number>();

  constructor(private readonly bounds: { readonly perPod: number; readonly perNode: number; readonly ttlMs: number }) {}

  get size(): number {
    return this.entries.size;
  }

  add(key: QueryKey, query: SentQuery, now: number): PendingOutcome {
    this.expire(now);
    const k = keyOf(key);
    // The same query sent again (a resolver's retry from the same port with the same id) replaces the first.
    if (this.entries.has(k)) this.remove(k);
    if ((this.perPod.get(key.pod) ?? 0) >= this.bounds.perPod) return 'pod-bound';
    if (this.entries.size >= this.bounds.perNode) return 'node-bound';
    this.entries.set(k, { query, pod: key.pod, expires: now + this.bounds.ttlMs });
    this.perPod.set(key.pod, (this.perPod.get(key.pod) ?? 0) + 1);
    return 'recorded';
  }

  /** The pending query this answer replies to, if any (left pending until `answered`). */
  find(key: QueryKey, now: number): SentQuery | undefined {
    this.expire(now);
    return this.entries.get(keyOf(key))?.query;
  }

  /**
   * The query got its answer: no longer pending, so it frees its place under the bounds at once. Only an
   * answer that matched its question ends it: a forged one with the right id but another question does not
   * take the real answer's place.
   */
  answered(key: QueryKey): void {
    this.remove(keyOf(key));
  }

  private remove(k: string): void {
    const e = this.entries.get(k);
    if (!e) return;
    this.entries.delete(k);
    const n = (this.perPod.get(e.pod) ?? 1) - 1;
    if (n <= 0) this.perPod.delete(e.pod);
    else this.perPod.set(e.pod, n);
  }

  private expire(now: number): void {
    for (const [k, e] of this.entries) {
      if (e.expires > now) break;
      this.remove(k);
    }
  }
}
