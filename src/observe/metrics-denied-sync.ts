// The operator-facing daemon series beside metrics.ts's: denied packets the flow log saw (labels bounded to
// this node's pods and a cap on policies), build info, the last successful sync, event → programmed latency, and
// tool invocations and failures per tool. Kept in their own module so the core metrics file stays small.

import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DeniedReason = 'isolated' | 'invalid-policy' | 'unknown-pod' | 'cluster-deny';

export interface DeniedLabels {
  /** Of the local pod whose rules dropped the connection; empty for an unknown local address. */
  readonly namespace: string;
  readonly pod: string;
  readonly direction: 'ingress' | 'egress';
  readonly reason: DeniedReason;
  /** A policy (`ns/name`) selecting that pod in that direction; empty when none does (an unknown address). */
  readonly policy: string;
}

export interface VisibilityMetrics {
  countDenied(labels: DeniedLabels): void;
  /** Drops the series of pods no longer on this node, so pod churn does not grow /metrics forever. */
  keepDeniedPods(live: ReadonlySet<string> | (() => ReadonlySet<string>)): void;
  setLastSuccessfulSync(epochSeconds: number): void;
  observeEventToProgrammed(seconds: number): void;
  countToolRun(tool: string, ok: boolean): void;
  countFlowLogReaderError(): void;
  /** Explaining one logged packet threw (a bug); `step`: which part, `after-lookup` still writes the record. */
  countFlowLogExplainError(step: FlowExplainStep): void;
}

/** `after-lookup`: naming the `domainNames` rule a lookup would have opened (the record is written without it); `explain`: the rest (no record). */
export type FlowExplainStep = 'after-lookup' | 'explain';

/** More distinct pods than this and the rest share `pod="_other"`: a bound whatever the node runs. */
export const MAX_DENIED_PODS = 1000;
/** More distinct policies than this and the rest share `policy="_other"`. */
export const MAX_DENIED_POLICIES = 1000;

// An informer event reaches the kernel in one batch window plus one sync: ms on small clusters, s at 10k pods.
// A set-only change written over netlink takes about a millisecond: the lowest buckets tell those apart.
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createVisibilityMetrics(registers: Registry[]): VisibilityMetrics {
  // Named for what it counts: the drop rules' log rules pass at most flowLogRate packets a second each (burst
  // 5), so under a flood this is far below the packets dropped, and a retried connection counts each try.
  const denied = new Counter({
    name: 'netfence_denied_packets_logged_total',
    help: 'First packets of new connections netfence dropped that the flow log saw (rate-limited: flowLogRate per drop rule), by the dropping pod, direction, reason and each policy selecting that pod (policy="" when none; reason cluster-deny: the ClusterNetworkPolicy whose Deny dropped it).',
    labelNames: ['namespace', 'pod', 'direction', 'reason', 'policy'] as const,
    registers,
  });
  const build = new Gauge({
    name: 'netfence_build_info',
    help: 'Always 1; the labels say which netfence and Node.js this is.',
    labelNames: ['version', 'nodejs'] as const,
    registers,
  });
  build.set({ version: packageVersion(), nodejs: process.versions.node }, 1);
  const lastSync = new Gauge({
    name: 'netfence_last_successful_sync_timestamp_seconds',
    help: 'Unix time of the last sync that programmed the kernel successfully.',
    registers,
  });
  const latency = new Histogram({
    name: 'netfence_event_to_programmed_seconds',
    help: 'From the first cluster event of a batch to the end of the sync that programmed it.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const toolRuns = new Counter({
    name: 'netfence_tool_invocations_total',
    help: 'Kernel tools run (iptables-restore, ipset, …), by tool.',
    labelNames: ['tool'] as const,
    registers,
  });
  const toolFailures = new Counter({
    name: 'netfence_tool_failures_total',
    help: 'Kernel tool runs that failed, by tool.',
    labelNames: ['tool'] as const,
    registers,
  });
  const readerErrors = new Counter({
    name: 'netfence_flow_log_reader_errors_total',
    help: 'Flow-log reader failures: could not start, or lost messages (socket buffer overrun).',
    registers,
  });
  const explainErrors = new Counter({
    name: 'netfence_flow_log_explain_errors_total',
    help: 'Logged packets whose explanation threw (a bug; enforcement is unaffected), by step: after-lookup (record written without the domainNames part) or explain (no record).',
    labelNames: ['step'] as const,
    registers,
  });
  const pods = new Set<string>();
  const policies = new Set<string>();
  const seen: DeniedLabels[] = [];
  return {
    countDenied: (labels) => {
      const key = `${labels.namespace}/${labels.pod}`;
      let bounded = pods.has(key) || pods.size < MAX_DENIED_PODS ? labels : { ...labels, namespace: '_other', pod: '_other' };
      if (bounded === labels) pods.add(key);
      if (labels.policy !== '' && !policies.has(labels.policy)) {
        if (policies.size < MAX_DENIED_POLICIES) policies.add(labels.policy);
        else bounded = { ...bounded, policy: '_other' };
      }
      if (!seen.some((s) => sameLabels(s, bounded))) seen.push(bounded);
      denied.inc({ ...bounded });
    },
    keepDeniedPods: (given) => {
      // Asked for only when some series names a pod (under churn with no drops, never).
      let live: ReadonlySet<string> | undefined = typeof given === 'function' ? undefined : given;
      for (let i = seen.length - 1; i >= 0; i--) {
        const s = seen[i]!;
        const key = `${s.namespace}/${s.pod}`;
        if (s.pod === '' || s.pod === '_other' || (live ??= (given as () => ReadonlySet<string>)()).has(key)) continue;
        denied.remove({ ...s });
        seen.splice(i, 1);
        pods.delete(key);
      }
    },
    setLastSuccessfulSync: (t) => lastSync.set(t),
    observeEventToProgrammed: (s) => latency.observe(s),
    countToolRun: (tool, ok) => {
      toolRuns.inc({ tool });
      if (!ok) toolFailures.inc({ tool });
    },
    countFlowLogReaderError: () => readerErrors.inc(),
    countFlowLogExplainError: (step) => explainErrors.inc({ step }),
  };
}

const sameLabels = (a: DeniedLabels, b: DeniedLabels): boolean =>
  a.namespace === b.namespace && a.pod === b.pod && a.direction === b.direction && a.reason === b.reason && a.policy === b.policy;

function packageVersion(): string {
  try {
    // src/observe and dist/observe both sit two levels below package.json.
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
