// What the daemon shows of itself: metrics, the health state behind /healthz and /readyz, the flow log,
// and the HTTP server that serves them. Started before anything else, so a probe is answered (not ready)
// while the kernel is opened and the cluster listed.

import type { KubeConfig } from '@kubernetes/client-node';
import { kubeReviews, requestAuthorizer } from '../cluster/request-auth.js';
import type { DaemonConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { AuditedFlow, DeniedFlow } from '../observe/flows.js';
import { HealthState } from '../observe/health.js';
import { ObserveServer } from '../observe/http-server.js';
import { createMetrics, type Metrics } from '../observe/metrics.js';
import type { DeniedLabels } from '../observe/metrics-denied-sync.js';
import { systemClock } from '../reconcile/runner.js';
import { createFlowLogging, type FlowLogging } from './flow-logging.js';

export interface Observability {
  readonly metrics: Metrics;
  readonly health: HealthState;
  /** Undefined when flow logs are off, or in dry-run. */
  readonly flowLogging: FlowLogging | undefined;
  readonly listen: { host: string; port: number };
  /** The loopback listener beside a node address (the kubelet's probes). */
  readonly loopback?: { host: string; port: number };
  readonly server: ObserveServer;
}

/** `kubeConfig`: the API to check who asks for /flows from off the node; without one only loopback may. */
export async function startObservability(config: DaemonConfig, logger: Logger, kubeConfig: KubeConfig | undefined): Promise<Observability> {
  const metrics = createMetrics({ processMetrics: true });
  const health = new HealthState({
    now: () => systemClock.now(),
    stallAfterMs: 3 * config.resyncIntervalSeconds * 1000 + 10_000,
    onReadyChange: (ready) => metrics.setReady(ready),
  });
  const flowLogging =
    config.flowLogs && !config.dryRun
      ? createFlowLogging({
          config,
          logger: logger.child({ component: 'flow-log' }),
          now: () => Date.now(),
          onDenied: (flow) => countDenied(metrics, flow),
          onAudited: (flow) => countAudited(metrics, flow),
          onReaderError: () => metrics.countFlowLogReaderError(),
          onExplainError: (step) => metrics.countFlowLogExplainError(step),
        })
      : undefined;
  const server = new ObserveServer({
    health,
    metrics,
    logger: logger.child({ component: 'http' }),
    onConnectionRefused: (why) => metrics.countConnectionRefused(why),
    onAuthRefused: (why) => metrics.countFlowsRequestRefused(why),
    ...(kubeConfig ? { authorize: requestAuthorizer({ reviews: kubeReviews(kubeConfig), now: () => Date.now() }) } : {}),
    ...(flowLogging ? { flows: flowLogging.query } : {}),
  });
  const listen = await server.start(config.listenAddress);
  return { metrics, health, flowLogging, listen, ...(server.loopback ? { loopback: server.loopback } : {}), server };
}

/** One count per policy selecting the dropping pod (all of them refused the peer), as the audit series counts. */
function countDenied(metrics: Metrics, flow: DeniedFlow): void {
  const [namespace = '', pod = ''] = flow.pod?.split('/') ?? [];
  const labels: Omit<DeniedLabels, 'policy'> = { namespace, pod, direction: flow.direction, reason: flow.reason };
  if (flow.policies.length === 0) return metrics.countDenied({ ...labels, policy: '' });
  for (const policy of flow.policies) metrics.countDenied({ ...labels, policy });
}

function countAudited(metrics: Metrics, flow: AuditedFlow): void {
  const [namespace = '', pod = ''] = flow.pod?.split('/') ?? [];
  for (const policy of flow.policies) metrics.countAudited({ namespace, pod, direction: flow.direction, policy });
}
