// `netfence daemon`: watch the cluster, program this network namespace, repair drift, serve health and
// metrics. SIGTERM stops the loop and leaves the rules in place (the kernel keeps enforcing).

import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../cluster/kube-source.js';
import { ManifestSource } from '../cluster/manifest-source.js';
import type { ClusterSource } from '../cluster/source.js';
import { readFlannelSubnetEnv } from '../config/flannel.js';
import { toNodeSettings } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import { flushFlows } from '../dataplane/conntrack.js';
import { readSysctl } from '../dataplane/sysctl.js';
import { createLogger, type Logger } from '../log.js';
import type { ClusterSnapshot, DesiredState, NodeSettings } from '../model/index.js';
import { HealthState } from '../observe/health.js';
import { ObserveServer } from '../observe/http-server.js';
import { createMetrics, type EventKind, type Metrics } from '../observe/metrics.js';
import type { FamilyPlan } from '../plan/index.js';
import { Reconciler, type ReconcileObserver } from '../reconcile/reconciler.js';
import { systemClock } from '../reconcile/runner.js';
import { Syncer } from '../reconcile/syncer.js';
import type { Io } from './commands-oneshot.js';
import { configFrom, kernelFor, netnsOf, ownershipOf, parse, resourcePaths } from './context.js';

export async function daemonCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parse(argv, {});
  const config = configFrom(parsed);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  const running = await startDaemon(config, {
    resources: resourcePaths(parsed),
    kubeconfig: parsed.values['kubeconfig'] as string | undefined,
    netns: netnsOf(parsed),
    logger,
    parsed,
  });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info('stopping; the programmed rules stay in place', { signal });
      void running.stop().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  io.err('');
  return 0;
}

export interface DaemonInputs {
  readonly resources: readonly string[];
  readonly kubeconfig: string | undefined;
  readonly netns: string | undefined;
  readonly logger: Logger;
  readonly parsed: Parameters<typeof kernelFor>[1];
}

export interface RunningDaemon {
  readonly reconciler: Reconciler;
  readonly source: ClusterSource;
  readonly metrics: Metrics;
  readonly listen: { host: string; port: number };
  stop(): Promise<void>;
}

export async function startDaemon(config: DaemonConfig, inputs: DaemonInputs): Promise<RunningDaemon> {
  const { logger } = inputs;
  const metrics = createMetrics({ processMetrics: true });
  const health = new HealthState({
    now: () => systemClock.now(),
    stallAfterMs: 3 * config.resyncIntervalSeconds * 1000 + 10_000,
    onReadyChange: (ready) => metrics.setReady(ready),
  });
  const server = new ObserveServer({ health, metrics, logger: logger.child({ component: 'http' }) });
  const listen = await server.start(config.listenAddress);

  const kernel = await kernelFor(config, inputs.parsed);
  logger.info('netfence starting', { node: config.nodeName, backend: kernel.backend.backend, why: kernel.backend.reason, netns: inputs.netns });
  const bridgeNf = await readSysctl('net.bridge.bridge-nf-call-iptables', { netns: inputs.netns }).catch(() => '0');
  health.bridgeNfCallIptables(bridgeNf.trim() === '1');
  if (bridgeNf.trim() !== '1') {
    logger.error('net.bridge.bridge-nf-call-iptables is not 1: bridged pod-to-pod traffic bypasses iptables; not ready until it is');
  }

  const source = openSource(config, inputs);
  // flannel's lease is read once; the Node object (when watched) wins over it, configuration over both.
  const flannelCidrs = (await readFlannelSubnetEnv(config.flannelSubnetEnv).catch(() => undefined))?.podCidrs ?? [];
  let lastCidrs = '';
  const settings = (snapshot: ClusterSnapshot): NodeSettings => {
    const fromNode = snapshot.nodes.find((n) => n.name === config.nodeName)?.podCidrs ?? [];
    const s = toNodeSettings(config, fromNode.length > 0 ? fromNode : flannelCidrs);
    if (s.podCidrs.join(',') !== lastCidrs) {
      lastCidrs = s.podCidrs.join(',');
      if (s.podCidrs.length === 0) logger.warn('no pod CIDR known for this node: unknown local pods cannot be handled');
      else logger.info('pod CIDRs of this node', { podCidrs: s.podCidrs });
    }
    return s;
  };

  const syncer = new Syncer(kernel, ownershipOf(config), logger.child({ component: 'syncer' }));
  const observer = observerFor(metrics, health, config, inputs, logger);
  const reconciler = new Reconciler({
    source,
    settings,
    syncer,
    logger: logger.child({ component: 'reconciler' }),
    clock: systemClock,
    batchWindowMs: config.batchWindowMs,
    resyncIntervalMs: config.resyncIntervalSeconds * 1000,
    dryRun: config.dryRun,
    observer,
  });
  const unsubscribe = source.onChange((change) => {
    metrics.countEvent(eventKind(change.kind));
    reconciler.changed();
  });
  // Nothing is written until every watched kind has been listed once (DESIGN §5).
  void source.synced.then(() => {
    logger.info('cluster state synced; programming');
    reconciler.start();
  });

  return {
    reconciler,
    source,
    metrics,
    listen,
    async stop() {
      unsubscribe();
      reconciler.stop();
      health.loopStopped('stopped');
      await source.stop();
      await server.stop();
    },
  };
}

function openSource(config: DaemonConfig, inputs: DaemonInputs): ClusterSource {
  const logger = inputs.logger.child({ component: 'source' });
  if (inputs.resources.length > 0) return new ManifestSource({ paths: inputs.resources, logger });
  const kubeConfig = new KubeConfig();
  if (inputs.kubeconfig) kubeConfig.loadFromFile(inputs.kubeconfig);
  else kubeConfig.loadFromCluster();
  void config;
  return new KubeSource({ kubeConfig, logger });
}

const eventKind = (kind: string): EventKind =>
  kind === 'Pod' ? 'pod' : kind === 'Namespace' ? 'namespace' : kind === 'Node' ? 'node' : 'networkpolicy';

function observerFor(metrics: Metrics, health: HealthState, config: DaemonConfig, inputs: DaemonInputs, logger: Logger): ReconcileObserver {
  return {
    heartbeat: () => health.heartbeat(),
    synced: (info) => {
      // A sync that re-read the kernel is a full one (start-up, drift timer, retry); others trust the tracker.
      metrics.observeSync(info.readKernel ? 'full' : 'incremental', info.seconds);
      metrics.observeApply(info.applySeconds);
      if (info.reason !== 'change') metrics.countEvent('resync');
      metrics.setProgrammed(programmedCounts(info.desired));
      if (info.drift) {
        for (const plan of info.plans) for (const c of plan.changes) metrics.countDriftRepair(c.object);
      }
      health.fullSyncProgrammed();
      if (config.conntrackFlush) void flushDeniedFlows(info.plans, info.desired, inputs.netns, logger);
    },
    failed: () => metrics.countApplyFailure(),
    problems: (problems) => {
      const byPolicy = new Map<string, number>();
      for (const p of problems) {
        // NetworkPolicies by ns/name; ClusterNetworkPolicies (cluster-scoped) as ClusterNetworkPolicy/<name>.
        const cnp = p.object.startsWith('ClusterNetworkPolicy ');
        if (!p.object.startsWith('NetworkPolicy ') && !cnp) continue;
        const key = cnp ? `ClusterNetworkPolicy/${p.object.slice('ClusterNetworkPolicy '.length)}` : p.object.slice('NetworkPolicy '.length);
        byPolicy.set(key, (byPolicy.get(key) ?? 0) + 1);
      }
      metrics.setPolicyProblems(byPolicy);
    },
  };
}

function programmedCounts(desired: DesiredState): { rules: number; ipsets: number; ipsetMembers: number } {
  const families = [desired.v4, desired.v6];
  return {
    rules: families.reduce((n, f) => n + f.chains.reduce((m, c) => m + c.rules.length, 0) + f.hooks.length, 0),
    ipsets: families.reduce((n, f) => n + f.ipsets.length, 0),
    ipsetMembers: families.reduce((n, f) => n + f.ipsets.reduce((m, s) => m + s.members.length, 0), 0),
  };
}

/**
 * Conntrack flush (opt-in): flows already established are otherwise never re-judged. Deleting the entries
 * of the local pods whose rules changed makes their next packet count as new (nf_conntrack_tcp_loose), so
 * flows still allowed carry on and flows a new deny forbids are cut.
 */
async function flushDeniedFlows(plans: readonly FamilyPlan[], desired: DesiredState, netns: string | undefined, logger: Logger): Promise<void> {
  for (const plan of plans) {
    const state = plan.family === 4 ? desired.v4 : desired.v6;
    const changed = new Set(plan.changes.map((c) => c.name));
    if (changed.size === 0) continue;
    const chainsUsingChanged = new Set(
      state.chains
        .filter((c) => c.rules.some((r) => r.match.some((m) => m.kind === 'set' && changed.has(m.set))))
        .map((c) => c.name as string),
    );
    for (const chain of state.chains) {
      if (chain.role.kind !== 'workload') continue;
      const targets = chain.rules.flatMap((r) => (r.action.kind === 'jump' ? [r.action.target as string] : []));
      const affected = changed.has(chain.name) || targets.some((t) => changed.has(t) || chainsUsingChanged.has(t));
      if (!affected) continue;
      const filter = chain.role.direction === 'ingress' ? { dst: chain.role.ip } : { src: chain.role.ip };
      await flushFlows({ family: plan.family, netns, ...filter }).catch((err: Error) =>
        logger.warn('conntrack flush failed', { pod: chain.role.kind === 'workload' ? chain.role.pod : '', error: err.message }),
      );
    }
  }
}
