// The daemon, wired: observability first, then the kernel, its preconditions and the cluster source, the
// sync loop and what subscribes to its results. Nothing is written until every watched kind has been
// listed once (DESIGN §5).

import type { AntiSpoofGuard } from '../antispoof/guard.js';
import type { ClusterSource } from '../cluster/source.js';
import type { DaemonConfig } from '../config/schema.js';
import { kernelOptions, ownershipOf } from '../config/views.js';
import { onToolRun } from '../dataplane/exec.js';
import { saveIpset } from '../dataplane/ipset.js';
import { openKernel } from '../dataplane/kernel.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../observe/metrics.js';
import { Reconciler } from '../reconcile/reconciler.js';
import { systemClock } from '../reconcile/runner.js';
import { Syncer } from '../reconcile/syncer.js';
import type { Revoker } from '../revoke/revoker.js';
import { BridgedPolicingSource, LocalPods, spoofDropSource, startAntiSpoof } from './anti-spoofing.js';
import { kubeConfigOf, openSource, policyEventsOf } from './cluster-source.js';
import { createDnsEgress } from './dns-egress.js';
import { learnedQuery } from './learned-query.js';
import { createRevoker, establishedFlows } from './established-flows.js';
import { eventKind, eventLatency } from './event-latency.js';
import { nodeSettingsSource } from '../config/node-settings.js';
import { startObservability } from './observability.js';
import { preconditionChecker } from './preconditions.js';
import { createServiceGuards } from './service-guards.js';
import { openSetWriter } from './set-writer.js';
import { shutdown } from './shutdown.js';
import { syncMetrics } from './sync-metrics.js';

export interface DaemonInputs {
  readonly resources: readonly string[];
  readonly kubeconfig: string | undefined;
  readonly netns: string | undefined;
  readonly logger: Logger;
}

export interface RunningDaemon {
  readonly reconciler: Reconciler;
  readonly source: ClusterSource;
  readonly metrics: Metrics;
  readonly listen: { host: string; port: number };
  /** The loopback listener beside a node address (the kubelet's probes); undefined when listen covers loopback. */
  readonly loopback: { host: string; port: number } | undefined;
  /** Strict mode's conntrack marker; undefined when revokeEstablished is off. */
  readonly revoker: Revoker | undefined;
  /** The bridge table (port address binding when antiSpoofing is on, bridged traffic judging always); undefined in dry-run. */
  readonly antiSpoof: AntiSpoofGuard | undefined;
  /** Stops watching and syncing; the programmed rules stay in place. */
  stop(): Promise<void>;
}

export async function startDaemon(config: DaemonConfig, inputs: DaemonInputs): Promise<RunningDaemon> {
  const { logger, netns } = inputs;
  const kubeConfig = kubeConfigOf(inputs);
  const { metrics, health, flowLogging, listen, loopback, server } = await startObservability(config, logger, kubeConfig);

  const kernel = await openKernel(kernelOptions(config, netns));
  logger.info('netfence starting', { node: config.nodeName, backend: kernel.backend.backend, why: kernel.backend.reason, netns });
  const node = await nodeSettingsSource(config, logger);
  const sets = await openSetWriter(config, kernel, netns, metrics, logger);
  const preconditions = preconditionChecker({ health, metrics, netns, logger, ipv6: config.ipv6, settings: node.last });
  await preconditions.check();

  const source = openSource(
    config,
    inputs,
    kubeConfig,
    metrics,
    (h) => {
      metrics.setSourceIncomplete(!h.complete);
      health.sourceIncomplete(h.complete ? undefined : h.reason);
    },
    (reason) => health.apiUnconfirmed(reason),
  );
  const revoker = createRevoker(config, netns, metrics, logger);
  await flowLogging?.start(source, netns);
  const unsubscribeTools = onToolRun((tool, ok) => metrics.countToolRun(tool, ok));
  const reconciler = new Reconciler({
    source,
    settings: (snapshot) => node.settings(snapshot),
    syncer: new Syncer({ ...kernel, ipsetApply: (ops) => sets.apply(ops) }, ownershipOf(config), logger.child({ component: 'syncer' })),
    logger: logger.child({ component: 'reconciler' }),
    clock: systemClock,
    batchWindowMs: config.batchWindowMs,
    resyncIntervalMs: config.resyncIntervalSeconds * 1000,
    dryRun: config.dryRun,
    checkPreconditions: () => preconditions.check(),
  });
  const guards = createServiceGuards({
    config,
    kernel,
    reconciler,
    metrics,
    health,
    logger: logger.child({ component: 'service-guards' }),
    netns,
  });
  const latency = eventLatency(metrics);

  // Each part learns every sync's result on its own, in this order.
  const reports = reconciler.reports;
  reports.subscribe(preconditions);
  reports.subscribe(guards);
  if (kubeConfig) reports.subscribe(policyEventsOf(config, kubeConfig, source, metrics, logger));
  if (flowLogging) reports.subscribe(flowLogging);
  reports.subscribe(latency);
  reports.subscribe(syncMetrics(metrics, health));
  reports.subscribe(establishedFlows({ config, revoker, settings: node.last, netns, logger }));
  // Egress by DNS name: idle (no socket) until a compiled plan has learned sets on this node.
  // It counts what the learned sets held before this start (the kernel's `ipset save`) against the node's bound.
  const dnsEgress = config.dryRun
    ? undefined
    : createDnsEgress({ netns, logger: logger.child({ component: 'dns-egress' }), metrics, readSets: () => kernel.ipsetSave() });
  if (dnsEgress) {
    reports.subscribe(dnsEgress);
    server.serveLearned(learnedQuery({ plan: () => dnsEgress.plan(), readSet: (name) => saveIpset(name, { netns }), now: Date.now }));
  }

  await guards.checkIpvs();
  // The bridge table also judges bridged pod traffic no pod address explains, so it runs with anti-spoofing off too.
  let antiSpoof: AntiSpoofGuard | undefined;
  if (!config.dryRun) {
    const policing = new BridgedPolicingSource((family) => kernel.supports(family));
    reports.subscribe(policing);
    antiSpoof = startAntiSpoof(config, netns, logger, policing);
  }
  if (antiSpoof && config.antiSpoofing) {
    const localPods = new LocalPods();
    reports.subscribe(localPods);
    metrics.setSpoofDropSource(spoofDropSource(antiSpoof, netns, () => localPods.get()));
  }
  const unsubscribeSource = source.onChange((change) => {
    latency.eventSeen();
    metrics.countEvent(eventKind(change.kind));
    reconciler.changed();
  });
  void source.synced.then(() => {
    logger.info('cluster state synced; programming');
    reconciler.start();
    guards.start();
  });

  return {
    reconciler,
    source,
    metrics,
    listen,
    loopback,
    revoker,
    antiSpoof,
    stop: () =>
      shutdown({
        unsubscribe: [unsubscribeSource, unsubscribeTools],
        guards,
        reconciler,
        sets,
        revoker,
        antiSpoof,
        flowLogging,
        dnsEgress,
        health,
        source,
        server,
      }),
  };
}
