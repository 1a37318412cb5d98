// `netfence daemon`: watch the cluster, program this network namespace, repair drift, serve health and
// metrics. SIGTERM stops the loop and leaves the rules in place (the kernel keeps enforcing).

import { KubeConfig } from '@kubernetes/client-node';
import { KubeSource } from '../cluster/kube-source.js';
import { ManifestSource, type SourceHealth } from '../cluster/manifest-source.js';
import { kubeEventsClient, PolicyEvents } from '../cluster/policy-events.js';
import type { ClusterSource } from '../cluster/source.js';
import { readFlannelSubnetEnv } from '../config/flannel.js';
import { discoveredPodCidrs, toNodeSettings } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import { flushFlows } from '../dataplane/conntrack.js';
import { readCniCache, watchCniCache } from '../dataplane/cni-cache.js';
import { openConntrackTable } from '../dataplane/ctnetlink.js';
import { listLinks } from '../dataplane/links.js';
import { applyNftScript, readNftCounts } from '../dataplane/nft.js';
import { onToolRun } from '../dataplane/exec.js';
import { createLogger, type Logger } from '../log.js';
import type { ClusterSnapshot, DesiredState, NodeSettings } from '../model/index.js';
import { HealthState } from '../observe/health.js';
import { ObserveServer } from '../observe/http-server.js';
import type { DeniedFlow } from '../observe/flows.js';
import { createMetrics, type EventKind, type Metrics } from '../observe/metrics.js';
import type { PodRef } from '../observe/metrics-hardening.js';
import type { DeniedLabels } from '../observe/metrics-visibility.js';
import { affectedWorkloads, type FamilyPlan } from '../plan/index.js';
import { Reconciler, type ReconcileObserver } from '../reconcile/reconciler.js';
import { systemClock } from '../reconcile/runner.js';
import { Syncer } from '../reconcile/syncer.js';
import { Revoker } from '../revoke/revoker.js';
import { AntiSpoofGuard } from '../antispoof/guard.js';
import { ANTISPOOF_TABLE } from '../antispoof/render.js';
import type { Io } from './commands.js';
import { createFlowLogging, type FlowLogging } from './daemon-flows.js';
import { localPodsByIp, spoofDropSource } from './daemon-hardening.js';
import { hasIpv6Pods, preconditionChecker } from './daemon-preconditions.js';
import { configFrom, kernelFor, manifestLimits, netnsOf, ownershipOf, parseCommand, resourcePaths } from './context.js';
import { createServiceGuards } from './service-guards.js';
import { EventLatency } from '../observe/event-latency.js';

export async function daemonCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('daemon', argv);
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
  /** Strict mode's conntrack marker; undefined when revokeEstablished is off. */
  readonly revoker: Revoker | undefined;
  /** The bridge-port address binding; undefined when antiSpoofing is off or in dry-run. */
  readonly antiSpoof: AntiSpoofGuard | undefined;
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
  const flowLogging =
    config.flowLogs && !config.dryRun
      ? createFlowLogging({
          config,
          logger: logger.child({ component: 'flow-log' }),
          now: () => Date.now(),
          onDenied: (flow) => metrics.countDenied(deniedLabels(flow)),
          onAudited: (flow) => {
            const [namespace = '', pod = ''] = flow.pod?.split('/') ?? [];
            for (const policy of flow.policies) metrics.countAudited({ namespace, pod, direction: flow.direction, policy });
          },
          onReaderError: () => metrics.countFlowLogReaderError(),
        })
      : undefined;
  const server = new ObserveServer({
    health,
    metrics,
    logger: logger.child({ component: 'http' }),
    onConnectionRefused: (why) => metrics.countConnectionRefused(why),
    ...(flowLogging ? { flows: flowLogging.query } : {}),
  });
  const listen = await server.start(config.listenAddress);

  const kernel = await kernelFor(config, inputs.parsed);
  logger.info('netfence starting', {
    node: config.nodeName,
    backend: kernel.backend.backend,
    why: kernel.backend.reason,
    netns: inputs.netns,
  });
  // What the IPv6 bridge sysctl depends on: the pod CIDRs and local pods of the last sync.
  let lastSettings: NodeSettings | undefined;
  let lastDesired: DesiredState | undefined;
  const ipv6Pods = (): boolean => hasIpv6Pods(config.ipv6, lastSettings, lastDesired);
  const preconditions = preconditionChecker({ health, metrics, netns: inputs.netns, logger, ipv6Pods });
  await preconditions.check();

  const kubeConfig = kubeConfigOf(inputs);
  const source = openSource(config, inputs, kubeConfig, metrics, (h) => {
    metrics.setSourceIncomplete(!h.complete);
    health.sourceIncomplete(h.complete ? undefined : h.reason);
  });
  const policyEvents = kubeConfig
    ? new PolicyEvents({
        client: kubeEventsClient(kubeConfig),
        node: config.nodeName,
        now: () => new Date(),
        logger: logger.child({ component: 'events' }),
        onReports: (outcome, n) => metrics.countEventReports(outcome, n),
      })
    : undefined;
  // flannel's lease is read once; which source wins is discoveredPodCidrs' and toNodeSettings' decision.
  const flannelCidrs = (await readFlannelSubnetEnv(config.flannelSubnetEnv).catch(() => undefined))?.podCidrs ?? [];
  let lastCidrs = '';
  const settings = (snapshot: ClusterSnapshot): NodeSettings => {
    const s = toNodeSettings(config, discoveredPodCidrs(snapshot, config.nodeName, flannelCidrs));
    if (s.podCidrs.join(',') !== lastCidrs) {
      lastCidrs = s.podCidrs.join(',');
      if (s.podCidrs.length === 0) logger.warn('no pod CIDR known for this node: unknown local pods cannot be handled');
      else logger.info('pod CIDRs of this node', { podCidrs: s.podCidrs });
    }
    lastSettings = s;
    return s;
  };

  const syncer = new Syncer(kernel, ownershipOf(config), logger.child({ component: 'syncer' }));
  const revoker = config.revokeEstablished
    ? new Revoker({
        open: () => openConntrackTable({ netns: inputs.netns }),
        logger: logger.child({ component: 'strict-mode' }),
        onPass: (reports, seconds) => metrics.observeRevokePass(reports, seconds),
        onFailure: () => metrics.countRevokePassFailure(),
      })
    : undefined;
  await flowLogging?.start(source, inputs.netns);
  const latency = new EventLatency((seconds) => metrics.observeEventToProgrammed(seconds));
  const unsubscribeTools = onToolRun((tool, ok) => metrics.countToolRun(tool, ok));
  const base = observerFor(metrics, health, config, inputs, logger, (desired) => {
    if (revoker && lastSettings && !config.dryRun) revoker.request(desired, lastSettings);
  });
  const observer = withPolicyEvents(withFlowLogging(withVisibilityMetrics(base, metrics, latency), flowLogging), policyEvents);
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
    checkPreconditions: () => preconditions.check(),
  });
  const guards = createServiceGuards({
    config,
    kernel,
    reconciler,
    metrics,
    health,
    logger: logger.child({ component: 'service-guards' }),
    netns: inputs.netns,
  });
  // The guards learn each programmed state (the hooks the watch expects first) through the loop's observer.
  const synced = observer.synced?.bind(observer);
  // Local pods by address, as last programmed: the anti-spoofing drop series name the pod behind a port.
  let podsByIp = new Map<string, PodRef>();
  observer.synced = (info) => {
    lastDesired = info.desired;
    // The first IPv6 pod (or pod CIDR) makes the IPv6 sysctl matter now, not at the next resync.
    if (preconditions.stale()) void preconditions.check();
    podsByIp = localPodsByIp(info.desired);
    guards.programmed(info.desired);
    if (info.reason === 'periodic') void guards.checkIpvs();
    synced?.(info);
  };
  await guards.checkIpvs();
  const antiSpoof = config.antiSpoofing && !config.dryRun ? startAntiSpoof(config, inputs.netns, logger) : undefined;
  if (antiSpoof) metrics.setSpoofDropSource(spoofDropSource(antiSpoof, inputs.netns, () => podsByIp));
  const unsubscribe = source.onChange((change) => {
    latency.eventSeen();
    metrics.countEvent(eventKind(change.kind));
    reconciler.changed();
  });
  // Nothing is written until every watched kind has been listed once (DESIGN §5).
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
    revoker,
    antiSpoof,
    async stop() {
      unsubscribe();
      unsubscribeTools();
      guards.stop();
      reconciler.stop();
      await revoker?.stop();
      await antiSpoof?.stop();
      await flowLogging?.stop();
      health.loopStopped('stopped');
      await source.stop();
      await server.stop();
    },
  };
}

/** The anti-spoofing table is independent of the cluster state: it starts at once, before the first sync. */
function startAntiSpoof(config: DaemonConfig, netns: string | undefined, logger: Logger): AntiSpoofGuard {
  const guard = new AntiSpoofGuard({
    bridge: config.bridge,
    readLinks: () => listLinks({ netns }),
    readCache: () => readCniCache(config.cniCacheDir, config.bridge),
    apply: (script) => applyNftScript(script, netns),
    readCounts: () => readNftCounts('bridge', ANTISPOOF_TABLE, netns),
    watch: (onChange) => watchCniCache(config.cniCacheDir, onChange),
    logger: logger.child({ component: 'anti-spoofing' }),
  });
  guard.start();
  return guard;
}

function openSource(
  config: DaemonConfig,
  inputs: DaemonInputs,
  kubeConfig: KubeConfig | undefined,
  metrics: Metrics,
  onHealth: (h: SourceHealth) => void,
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
  });
}

/** The API's configuration (`--kubeconfig`, else in-cluster); none when watching manifest files. */
function kubeConfigOf(inputs: DaemonInputs): KubeConfig | undefined {
  if (inputs.resources.length > 0) return undefined;
  const kubeConfig = new KubeConfig();
  if (inputs.kubeconfig) kubeConfig.loadFromFile(inputs.kubeconfig);
  else kubeConfig.loadFromCluster();
  return kubeConfig;
}

/** Problems of NetworkPolicies become Warning Events on them (API sources only: manifests have no API). */
function withPolicyEvents(observer: ReconcileObserver, events: PolicyEvents | undefined): ReconcileObserver {
  if (!events) return observer;
  return {
    ...observer,
    problems: (problems) => {
      void events.report(problems);
      observer.problems?.(problems);
    },
  };
}

/** The daemon's operator series: last successful sync, event → programmed latency, denied-connection label pruning. */
function withVisibilityMetrics(observer: ReconcileObserver, metrics: Metrics, latency: EventLatency): ReconcileObserver {
  return {
    ...observer,
    synced: (info) => {
      metrics.setLastSuccessfulSync(Date.now() / 1000);
      latency.programmed(info.seconds);
      const local = new Set<string>();
      for (const f of [info.desired.v4, info.desired.v6]) for (const c of f.chains) if (c.role.kind === 'workload') local.add(c.role.pod);
      metrics.keepDeniedPods(local);
      observer.synced?.(info);
    },
  };
}

function deniedLabels(flow: DeniedFlow): DeniedLabels {
  const [namespace = '', pod = ''] = flow.pod?.split('/') ?? [];
  return { namespace, pod, direction: flow.direction, reason: flow.reason };
}

/** The flow log explains drops against what was last programmed and which policies are invalid. */
function withFlowLogging(observer: ReconcileObserver, flows: FlowLogging | undefined): ReconcileObserver {
  if (!flows) return observer;
  return {
    ...observer,
    synced: (info) => {
      flows.synced(info.desired);
      observer.synced?.(info);
    },
    problems: (problems) => {
      flows.problems(problems);
      observer.problems?.(problems);
    },
  };
}

const eventKind = (kind: string): EventKind =>
  kind === 'Pod' ? 'pod' : kind === 'Namespace' ? 'namespace' : kind === 'Node' ? 'node' : 'networkpolicy';

function observerFor(
  metrics: Metrics,
  health: HealthState,
  config: DaemonConfig,
  inputs: DaemonInputs,
  logger: Logger,
  rulesChanged: (desired: DesiredState) => void,
): ReconcileObserver {
  let programmedOnce = false;
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
      health.lastSyncFailed(undefined);
      if (config.conntrackFlush) void flushDeniedFlows(info.plans, info.desired, inputs.netns, logger);
      // Strict mode re-judges established flows whenever the rules changed, and once at start-up for
      // flows that predate this daemon.
      if (!programmedOnce || info.plans.some((p) => p.changes.length > 0)) rulesChanged(info.desired);
      programmedOnce = true;
    },
    failed: ({ stage, error }) => {
      if (stage === 'apply') metrics.countApplyFailure();
      metrics.countSyncFailure(stage);
      health.lastSyncFailed(`${stage}: ${error.message}`);
    },
    problems: (problems) => {
      const byPolicy = new Map<string, number>();
      for (const p of problems) {
        // NetworkPolicies by ns/name; ClusterNetworkPolicies (cluster-scoped) as ClusterNetworkPolicy/<name>.
        const cnp = p.object.startsWith('ClusterNetworkPolicy ');
        if (!p.object.startsWith('NetworkPolicy ') && !cnp) continue;
        const key = cnp
          ? `ClusterNetworkPolicy/${p.object.slice('ClusterNetworkPolicy '.length)}`
          : p.object.slice('NetworkPolicy '.length);
        byPolicy.set(key, (byPolicy.get(key) ?? 0) + 1);
      }
      metrics.setPolicyProblems(byPolicy);
    },
    budget: (use) => metrics.setBudget(use),
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
async function flushDeniedFlows(
  plans: readonly FamilyPlan[],
  desired: DesiredState,
  netns: string | undefined,
  logger: Logger,
): Promise<void> {
  for (const w of affectedWorkloads(plans, desired)) {
    const filter = w.direction === 'ingress' ? { dst: w.ip } : { src: w.ip };
    await flushFlows({ family: w.family, netns, ...filter }).catch((err: Error) =>
      logger.warn('conntrack flush failed', { pod: w.pod, error: err.message }),
    );
  }
}
