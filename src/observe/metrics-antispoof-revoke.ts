// The series of the two hardening features (anti-spoofing, strict mode), beside metrics.ts's:
//
// - Anti-spoofing drops. The kernel counts them (one nft counter per drop rule, carried across table
//   rewrites), so they are read at scrape time, not counted here. Two series: by kind only (every kind
//   present from the start at 0, for alerts and `rate()`), and by kind and pod (only pods that had a
//   drop). Pod, not bridge port: a host veth name means nothing to an operator and changes with every
//   pod restart, while the pod is what was compromised. Pods are bounded by what runs on the node
//   (max-pods, 110 by default) times 7 kinds, and only non-zero pairs appear; past MAX_DENIED_PODS
//   pods the rest share `pod="_other"`. A port whose pod is gone loses its counter with its rules.
// - Strict mode passes: flows marked and unmarked per family, flows carrying the bit after the last
//   pass, pass duration and failed passes.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { NftCount } from '../dataplane/nft.js';
import { MAX_DENIED_PODS } from './metrics-denied-sync.js';

/** The drop rules of the bridge table, by the kind in their comment (`nf:spoof <kind> [port]`). */
export const SPOOF_DROP_KINDS = ['ipv4', 'ipv6', 'arp', 'nd', 'router', 'other', 'unknown-port'] as const;
export type SpoofDropKind = (typeof SPOOF_DROP_KINDS)[number];

export interface SpoofDropSample {
  readonly kind: SpoofDropKind;
  /** Of the pod behind the port; both empty when no pod is known for it (e.g. `unknown-port`). */
  readonly namespace: string;
  readonly pod: string;
  readonly packets: number;
}

export interface PodRef {
  readonly namespace: string;
  readonly pod: string;
}

/** The bridge table's counters as samples: comments parsed, ports resolved to pods, equal labels summed. */
export function spoofDropSamples(
  counts: ReadonlyMap<string, NftCount>,
  podOfPort: (port: string) => PodRef | undefined,
): SpoofDropSample[] {
  const byKey = new Map<string, SpoofDropSample>();
  for (const [comment, count] of counts) {
    const m = /^nf:spoof (\S+)(?: (\S+))?$/.exec(comment);
    const kind = m?.[1] as SpoofDropKind | undefined;
    if (!m || !kind || !SPOOF_DROP_KINDS.includes(kind) || count.packets === 0) continue;
    const ref = (m[2] !== undefined ? podOfPort(m[2]) : undefined) ?? { namespace: '', pod: '' };
    const key = `${kind} ${ref.namespace}/${ref.pod}`;
    const was = byKey.get(key)?.packets ?? 0;
    byKey.set(key, { kind, namespace: ref.namespace, pod: ref.pod, packets: was + count.packets });
  }
  return [...byKey.values()];
}

/** One strict-mode pass, one entry per family it looked at. */
export interface RevokePassSample {
  readonly family: 4 | 6;
  /** Flows that got the revoke bit in this pass. */
  readonly revoked: number;
  /** Flows that lost it (allowed again, or no longer ours to judge). */
  readonly restored: number;
  /** Flows carrying the bit once the pass was carried out. */
  readonly carrying: number;
}

export interface HardeningMetrics {
  /** Where the anti-spoofing counts come from at scrape time (the daemon reads the bridge table). */
  setSpoofDropSource(read: () => Promise<readonly SpoofDropSample[]>): void;
  observeRevokePass(families: readonly RevokePassSample[], seconds: number): void;
  countRevokePassFailure(): void;
}

// A pass is one conntrack dump per family plus the marks: ms on a quiet node, ~1-2 s at 100k entries (BENCHMARKS.md).
const PASS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * How long one read of the bridge table's counters serves scrapes. Each read is one `nft -j list` (tens of
 * ms of CPU at a hundred ports, hundreds at 500: BENCHMARKS.md), so a burst of scrapes, or several
 * scrapers, must not each cost one; an alert on `rate()` over minutes does not notice a second's lag.
 */
export const SPOOF_READ_INTERVAL_MS = 1000;

/**
 * `startScrape` is called by render() before each scrape: it reuses the last read if that read started
 * less than SPOOF_READ_INTERVAL_MS ago (in flight or done), else starts a new one, so a scrape never
 * gets counters read longer ago than that. Both series of one scrape come from the same read.
 */
export function createHardeningMetrics(
  registers: Registry[],
  // Monotonic: a wall clock set back would otherwise serve one read until it caught up.
  now: () => number = () => performance.now(),
): HardeningMetrics & { startScrape(): void } {
  let source: (() => Promise<readonly SpoofDropSample[]>) | undefined;
  let last: readonly SpoofDropSample[] = [];
  let current: { readonly startedAt: number; readonly samples: Promise<readonly SpoofDropSample[]> } | undefined;
  const startScrape = (): void => {
    if (!source) return;
    const at = now();
    if (current && at - current.startedAt < SPOOF_READ_INTERVAL_MS) return;
    current = {
      startedAt: at,
      samples: source()
        .then((samples) => (last = samples))
        // An unreadable table keeps the last values: a counter must not fall to zero on a failed read.
        .catch(() => last),
    };
  };
  const read = async (): Promise<readonly SpoofDropSample[] | undefined> => {
    if (!source) return undefined;
    // The scrape's read was chosen by startScrape; the second series must not start another.
    if (!current) startScrape();
    return current?.samples;
  };
  new Counter({
    name: 'netfence_spoof_drops_total',
    help: "Frames the anti-spoofing bridge table dropped, by kind (ipv4/ipv6: forged source; arp: forged sender; nd: Neighbour Advertisement for an address not the pod's; router: RA or Redirect from a pod; other: non-IP/ARP frame; unknown-port: port whose pod is not known yet). Read from the kernel's rule counters at scrape time (one read serves the scrapes of the next second).",
    labelNames: ['kind'] as const,
    registers,
    async collect() {
      const samples = await read();
      this.reset();
      // Anti-spoofing off (or dry-run): no series rather than zeros that look like protection.
      if (samples === undefined) return;
      for (const kind of SPOOF_DROP_KINDS)
        this.inc(
          { kind },
          samples.filter((s) => s.kind === kind).reduce((n, s) => n + s.packets, 0),
        );
    },
  });
  new Counter({
    name: 'netfence_spoof_pod_drops_total',
    help: 'The same drops by the pod behind the bridge port (only pods with drops; empty namespace and pod when no pod is known for the port).',
    labelNames: ['namespace', 'pod', 'kind'] as const,
    registers,
    async collect() {
      const samples = (await read()) ?? [];
      this.reset();
      const pods = new Set<string>();
      for (const s of samples) {
        const key = `${s.namespace}/${s.pod}`;
        const keep = s.pod === '' || pods.has(key) || pods.size < MAX_DENIED_PODS;
        if (keep && s.pod !== '') pods.add(key);
        this.inc(
          keep ? { namespace: s.namespace, pod: s.pod, kind: s.kind } : { namespace: '_other', pod: '_other', kind: s.kind },
          s.packets,
        );
      }
    },
  });

  const revoked = new Counter({
    name: 'netfence_strict_flows_revoked_total',
    help: 'Established flows strict mode gave the revoke bit (the new rules refuse them), by family.',
    labelNames: ['family'] as const,
    registers,
  });
  const restored = new Counter({
    name: 'netfence_strict_flows_restored_total',
    help: 'Flows strict mode took the revoke bit off (allowed again, or no longer judged), by family.',
    labelNames: ['family'] as const,
    registers,
  });
  const carrying = new Gauge({
    name: 'netfence_strict_revoked_flows',
    help: 'Conntrack entries carrying the revoke bit after the last strict-mode pass, by family.',
    labelNames: ['family'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'netfence_strict_pass_duration_seconds',
    help: 'One strict-mode pass: conntrack dump, judgement and mark updates, all families.',
    buckets: PASS_BUCKETS,
    registers,
  });
  const failures = new Counter({
    name: 'netfence_strict_pass_failures_total',
    help: 'Strict-mode passes that failed (retried after the next sync).',
    registers,
  });
  for (const family of ['4', '6']) {
    revoked.labels({ family }).inc(0);
    restored.labels({ family }).inc(0);
  }
  failures.inc(0);

  return {
    startScrape,
    setSpoofDropSource: (r) => {
      source = r;
      current = undefined;
    },
    observeRevokePass: (families, seconds) => {
      duration.observe(seconds);
      for (const f of families) {
        const family = String(f.family);
        revoked.inc({ family }, f.revoked);
        restored.inc({ family }, f.restored);
        carrying.set({ family }, f.carrying);
      }
    },
    countRevokePassFailure: () => failures.inc(),
  };
}
