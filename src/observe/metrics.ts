// The daemon's Prometheus metrics. prom-client renders the text exposition format; this module owns
// the metric names, help texts, label values and buckets, and hands the daemon a narrow typed facade
// so no other module depends on prom-client. Each instance has its own registry: no global state.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { BudgetUse } from '../compile/index.js';
import { createAuditMetrics, type AuditMetrics } from './metrics-audit.js';
import { createHardeningMetrics, type HardeningMetrics } from './metrics-antispoof-revoke.js';
import { createHostileInputMetrics, type HostileInputMetrics } from './metrics-hostile.js';
import { createDnsMetrics, type DnsMetrics } from './metrics-dns.js';
import { createIpsetWriterMetrics, type IpsetWriterMetrics } from './metrics-ipset-writer.js';
import { createVisibilityMetrics, type VisibilityMetrics } from './metrics-denied-sync.js';

export type SyncKind = 'full' | 'incremental';
/** What woke the loop: an informer event per resource kind, a manifest change, or the drift timer. */
export type EventKind = 'pod' | 'namespace' | 'networkpolicy' | 'node' | 'manifest' | 'resync';
/** Kernel objects a drift check found deleted, edited or displaced and put back. */
export type DriftObject = 'chain' | 'set' | 'hook';

/** Where a sync failed: reading the cluster state or compiling it, or writing it to the kernel. */
export type SyncFailureStage = 'compile' | 'apply';
/** Kernel settings enforcement depends on, re-checked on every resync. */
export type PreconditionName = 'bridge-nf-call-iptables' | 'bridge-nf-call-ip6tables';

export interface ProgrammedCounts {
  readonly rules: number;
  readonly ipsets: number;
  readonly ipsetMembers: number;
}

export interface Metrics extends VisibilityMetrics, AuditMetrics, HardeningMetrics, HostileInputMetrics, IpsetWriterMetrics, DnsMetrics {
  observeSync(kind: SyncKind, seconds: number): void;
  observeApply(seconds: number): void;
  countEvent(kind: EventKind, n?: number): void;
  /** The counts, or how to count them: then counted when /metrics is next read, not on every sync. */
  setProgrammed(counts: ProgrammedCounts | (() => ProgrammedCounts)): void;
  countApplyFailure(): void;
  countDriftRepair(object: DriftObject, n?: number): void;
  /** Replaces every policy's count, so a policy that was fixed or deleted disappears from /metrics. */
  setPolicyProblems(problemsByPolicy: ReadonlyMap<string, number>): void;
  /** The node budget: what the admitted NetworkPolicies use, and how many it refused (they fail closed). */
  setBudget(use: BudgetUse | undefined): void;
  setReady(ready: boolean): void;
  /** 1 while the cluster source could not be read completely and part of it is served from its last clean read. */
  setSourceIncomplete(incomplete: boolean): void;
  /** The hook watch found netfence's jump no longer first in a kernel chain (and asked for a repair). */
  countHookDisplaced(chain: string): void;
  /** kube-proxy's IPVS mode found on this node (kube-ipvs0): netfence cannot enforce there and stays unready. */
  setIpvsDetected(detected: boolean): void;
  /** A sync that failed, by the stage that failed (its previous rules stay in place; it is retried). */
  countSyncFailure(stage: SyncFailureStage): void;
  /** Whether a kernel precondition held at the last check (1) or not (0); undefined: it does not apply to this node (no series). */
  setPrecondition(check: PreconditionName, ok: boolean | undefined): void;
  /** The exposition text for GET /metrics. */
  render(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsOptions {
  /** Also export process_* and nodejs_* metrics (the daemon wants them; tests do not). */
  readonly processMetrics?: boolean;
  /** Monotonic milliseconds, for how long one anti-spoofing counter read serves scrapes (tests control it). */
  readonly now?: () => number;
}

// A sync is compile + plan + apply. Tens of ms on small clusters, seconds at 10k pods (limits.md).
const SYNC_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
// One iptables-restore / ipset restore round; a tail past 1 s means xtables lock contention.
const APPLY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const hardening = createHardeningMetrics(registers, options.now);
  if (options.processMetrics) collectDefaultMetrics({ register: registry });

  const syncDuration = new Histogram({
    name: 'netfence_sync_duration_seconds',
    help: 'Time to compile, plan and apply one sync, by kind (full rewrite or incremental).',
    labelNames: ['kind'] as const,
    buckets: SYNC_BUCKETS,
    registers,
  });
  const applyDuration = new Histogram({
    name: 'netfence_apply_duration_seconds',
    help: 'Time spent in ipset restore and iptables-restore for one apply.',
    buckets: APPLY_BUCKETS,
    registers,
  });
  const events = new Counter({
    name: 'netfence_events_total',
    help: 'Events that triggered a sync, by kind.',
    labelNames: ['kind'] as const,
    registers,
  });
  // Counted at scrape time from the last state given: a sync under churn would otherwise walk every chain and set.
  let programmed: ProgrammedCounts | (() => ProgrammedCounts) = { rules: 0, ipsets: 0, ipsetMembers: 0 };
  const programmedNow = (): ProgrammedCounts => (typeof programmed === 'function' ? (programmed = programmed()) : programmed);
  new Gauge({
    name: 'netfence_rules_programmed',
    help: 'iptables rules netfence owns, as last programmed.',
    registers,
    collect() {
      this.set(programmedNow().rules);
    },
  });
  new Gauge({
    name: 'netfence_ipsets_programmed',
    help: 'ipsets netfence owns, as last programmed.',
    registers,
    collect() {
      this.set(programmedNow().ipsets);
    },
  });
  new Gauge({
    name: 'netfence_ipset_members_programmed',
    help: 'Members across all ipsets netfence owns, as last programmed.',
    registers,
    collect() {
      this.set(programmedNow().ipsetMembers);
    },
  });
  const applyFailures = new Counter({
    name: 'netfence_apply_failures_total',
    help: 'Applies that failed and left the previous ruleset in place (retried with backoff).',
    registers,
  });
  const driftRepairs = new Counter({
    name: 'netfence_drift_repairs_total',
    help: 'Kernel objects found changed by someone else and restored, by object type.',
    labelNames: ['object'] as const,
    registers,
  });
  const policyProblems = new Gauge({
    name: 'netfence_policy_problems',
    help: 'Problems found in a NetworkPolicy (namespace/name); its selected pods stay isolated.',
    labelNames: ['policy'] as const,
    registers,
  });
  const budgetUsed = new Gauge({
    name: 'netfence_budget_used',
    help: 'What the NetworkPolicies admitted by the node budget use, by resource (set-members, rules).',
    labelNames: ['resource'] as const,
    registers,
  });
  const overBudget = new Gauge({
    name: 'netfence_policies_over_budget',
    help: 'Valid NetworkPolicies refused by the node budget (newest first); their pods stay isolated.',
    registers,
  });
  const ready = new Gauge({
    name: 'netfence_ready',
    help: '1 once the first full sync is programmed and bridge-nf-call-iptables is on, else 0.',
    registers,
  });
  ready.set(0);
  const sourceIncomplete = new Gauge({
    name: 'netfence_source_incomplete',
    help: '1 while the manifests could not all be read; what could not be read is enforced as last read cleanly.',
    registers,
  });
  sourceIncomplete.set(0);
  const hookDisplaced = new Counter({
    name: 'netfence_hook_displaced_total',
    help: "Times netfence's jump was found pushed down from first place in a kernel chain (e.g. kube-proxy re-prepending KUBE-FORWARD), by chain.",
    labelNames: ['chain'] as const,
    registers,
  });
  const ipvs = new Gauge({
    name: 'netfence_kube_proxy_ipvs',
    help: "1 when kube-proxy's IPVS mode is found on this node (kube-ipvs0): same-node Service traffic would bypass FORWARD, so netfence is not ready.",
    registers,
  });
  ipvs.set(0);
  hookDisplaced.labels({ chain: 'FORWARD' }).inc(0);
  // Pre-create the label values a dashboard expects, so `rate()` sees a 0 before the first increment.
  for (const kind of ['full', 'incremental'] as const) syncDuration.zero({ kind });
  for (const object of ['chain', 'set', 'hook'] as const) driftRepairs.labels({ object }).inc(0);

  return {
    ...createVisibilityMetrics(registers),
    ...createAuditMetrics(registers),
    ...hardening,
    ...createHostileInputMetrics(registers),
    ...createIpsetWriterMetrics(registers),
    ...createDnsMetrics(registers),
    observeSync: (kind, seconds) => syncDuration.observe({ kind }, seconds),
    observeApply: (seconds) => applyDuration.observe(seconds),
    countEvent: (kind, n = 1) => events.inc({ kind }, n),
    setProgrammed: (counts) => {
      programmed = counts;
    },
    countApplyFailure: () => applyFailures.inc(),
    countDriftRepair: (object, n = 1) => driftRepairs.inc({ object }, n),
    setPolicyProblems: (problemsByPolicy) => {
      policyProblems.reset();
      for (const [policy, count] of problemsByPolicy) policyProblems.set({ policy }, count);
    },
    setBudget: (use) => {
      budgetUsed.set({ resource: 'set-members' }, use?.setMembers ?? 0);
      budgetUsed.set({ resource: 'rules' }, use?.rules ?? 0);
      overBudget.set(use?.refused ?? 0);
    },
    setReady: (isReady) => ready.set(isReady ? 1 : 0),
    setSourceIncomplete: (incomplete) => sourceIncomplete.set(incomplete ? 1 : 0),
    countHookDisplaced: (chain) => hookDisplaced.inc({ chain }),
    setIpvsDetected: (detected) => ipvs.set(detected ? 1 : 0),
    ...failureMetrics(registers),
    render: () => {
      hardening.startScrape();
      return registry.metrics();
    },
    contentType: registry.contentType,
  };
}

/** Sync failures and kernel preconditions: what tells an operator enforcement has stopped following the cluster. */
function failureMetrics(registers: Registry[]): Pick<Metrics, 'countSyncFailure' | 'setPrecondition'> {
  const syncFailures = new Counter({
    name: 'netfence_sync_failures_total',
    help: 'Syncs that failed, by stage (compile: reading or compiling the cluster state; apply: writing the kernel). Each is logged and retried.',
    labelNames: ['stage'] as const,
    registers,
  });
  const preconditions = new Gauge({
    name: 'netfence_kernel_precondition',
    help: '1 if a kernel precondition held at the last check (every resync), else 0; the node is not ready while one is 0.',
    labelNames: ['check'] as const,
    registers,
  });
  for (const stage of ['compile', 'apply'] as const) syncFailures.labels({ stage }).inc(0);
  return {
    countSyncFailure: (stage) => syncFailures.inc({ stage }),
    setPrecondition: (check, ok) => (ok === undefined ? preconditions.remove({ check }) : preconditions.set({ check }, ok ? 1 : 0)),
  };
}
