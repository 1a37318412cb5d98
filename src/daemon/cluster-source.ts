// Where the daemon learns the cluster: the API server (`--kubeconfig`, else in-cluster), or manifest
// files it watches; and, from the API only, Warning Events on the NetworkPolicies it cannot enforce.

import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../cluster/kube-source.js';
import { ManifestSource, type SourceHealth } from '../cluster/manifest-source.js';
import { kubeEventsClient, PolicyEvents, problemsToReport } from '../cluster/policy-events.js';
import type { ClusterSource } from '../cluster/source.js';
import type { DaemonConfig } from '../config/schema.js';
import { manifestLimits } from '../config/views.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observe/metrics.js';
import type { SyncSubscriber } from '../reconcile/sync-reports.js';

export interface SourceInputs {
  readonly resources: readonly string[];
  readonly kubeconfig: string | undefined;
  readonly logger: Logger;
}

/** The API's configuration (`--kubeconfig`, else in-cluster); none when watching manifest files. */
export function kubeConfigOf(inputs: SourceInputs): KubeConfig | undefined {
  if (inputs.resources.length > 0) return undefined;
  const kubeConfig = new KubeConfig();
  if (inputs.kubeconfig) kubeConfig.loadFromFile(inputs.kubeconfig);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}

export function openSource(
  config: DaemonConfig,
  inputs: SourceInputs,
  kubeConfig: KubeConfig | undefined,
  metrics: Metrics,
  onHealth: (h: SourceHealth) => void,
  onUnconfirmed: (reason: string | undefined) => void,
): ClusterSource {
  const logger = inputs.logger.child({ component: 'source' });
  if (!kubeConfig) {
    return new ManifestSource({
      paths: inputs.resources,
      logger,
      onHealth,
      checkIntervalMs: config.manifestCheckIntervalMs,
      limits: manifestLimits(config),
    });
  }
  // Pods that cannot count in policy (completed, host-network) are left on the API server (kube-source.ts).
  return new KubeSource({
    kubeConfig,
    logger,
    peerPodsOnly: true,
    watchList: config.watchList,
    limits: {
      maxObjects: config.initialListMaxObjects,
      maxBytes: config.initialListMaxMiB * 1024 * 1024,
      streamTimeoutMs: config.initialListTimeoutSeconds * 1000,
      pageTimeoutMs: config.listPageTimeoutSeconds * 1000,
    },
    onRefused: (r) => metrics.countApiRefusal(r.request, r.reason),
    goneConfirmIntervalMs: config.apiGoneConfirmIntervalMs,
    onUnconfirmed,
  });
}

/**
 * Problems of NetworkPolicies become Warning Events on them (API sources only: manifests have no API), from
 * the nodes they concern (problemsToReport).
 */
export function policyEventsOf(
  config: DaemonConfig,
  kubeConfig: KubeConfig,
  source: ClusterSource,
  metrics: Metrics,
  logger: Logger,
): SyncSubscriber {
  const events = new PolicyEvents({
    client: kubeEventsClient(kubeConfig),
    node: config.nodeName,
    now: () => new Date(),
    logger: logger.child({ component: 'events' }),
    onReports: (outcome, n) => metrics.countEventReports(outcome, n),
  });
  return { problems: (problems) => void events.report(problemsToReport(problems, source.snapshot(), config.nodeName)) };
}
