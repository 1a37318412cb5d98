// The daemon's guards against kube-proxy undoing enforcement (docs/services.md):
// - the hook watch: netfence's FORWARD jump must stay above KUBE-FORWARD, whose mark rule ACCEPTs
//   masquerade-marked traffic; a displaced jump is repaired by an immediate full resync, not at the
//   next drift tick (src/reconcile/hook-watch.ts);
// - IPVS detection: with kube-proxy in IPVS mode same-node Service traffic never crosses FORWARD, so
//   netfence refuses readiness, says why in the log, and sets netfence_kube_proxy_ipvs.

import type { DaemonConfig } from '../config/schema.js';
import { detectIpvs, KUBE_IPVS_DEVICE } from '../dataplane/ipvs.js';
import type { Kernel } from '../dataplane/kernel.js';
import type { Logger } from '../log.js';
import type { DesiredState, IpFamily } from '../model/index.js';
import type { HealthState } from '../observe/health.js';
import type { Metrics } from '../observe/metrics.js';
import { renderHook, type RuleRecord } from '../render/index.js';
import { HookWatch } from '../reconcile/hook-watch.js';
import type { Reconciler } from '../reconcile/reconciler.js';
import { systemClock, type Clock } from '../reconcile/runner.js';
import type { SyncReport } from '../reconcile/sync-reports.js';

export interface ServiceGuardsInputs {
  readonly config: Pick<DaemonConfig, 'hookCheckIntervalMs' | 'dryRun'>;
  readonly kernel: Pick<Kernel, 'firstRule' | 'supports'>;
  readonly reconciler: Pick<Reconciler, 'resyncNow'>;
  readonly metrics: Pick<Metrics, 'countHookDisplaced' | 'setIpvsDetected'>;
  readonly health: Pick<HealthState, 'ipvsDetected'>;
  readonly logger: Logger;
  readonly netns: string | undefined;
  /** The hook watch's timers (tests pace them); the system clock by default. */
  readonly clock?: Clock;
}

/** Also a sync subscriber: each programmed state gives the hooks the watch expects first. */
export interface ServiceGuards {
  /** Tell the guards what was just programmed (the hooks the watch then expects first). */
  programmed(desired: DesiredState): void;
  /** programmed(), and an IPVS re-check on every periodic resync. */
  synced(result: Pick<SyncReport, 'desired' | 'reason'>): void;
  /** Re-check for kube-proxy's IPVS mode (start-up and every periodic resync). */
  checkIpvs(): Promise<void>;
  start(): void;
  stop(): void;
}

export const IPVS_REFUSAL =
  `kube-proxy runs in IPVS mode on this node (${KUBE_IPVS_DEVICE} exists): Service traffic between pods of one node is ` +
  'delivered by IPVS from INPUT through OUTPUT and never crosses FORWARD, where netfence enforces policy, so it would ' +
  'pass unchecked. netfence does not support IPVS mode and stays not ready; run kube-proxy in iptables or nftables mode';

export function createServiceGuards(inputs: ServiceGuardsInputs): ServiceGuards {
  const { kernel, logger } = inputs;
  let expected: { family: IpFamily; chain: string; rule: RuleRecord }[] = [];
  const watch = new HookWatch({
    firstRule: (family, chain) => kernel.firstRule(family, chain),
    expected: () => expected,
    onDisplaced: ({ family, chain, found, firstSeen }) => {
      if (firstSeen) {
        inputs.metrics.countHookDisplaced(chain);
        logger.warn(`netfence's ${chain} jump is no longer first (IPv${family}): rules above it decide before policy; repairing now`, {
          first: found ?? '(chain empty)',
        });
      }
      inputs.reconciler.resyncNow();
    },
    onError: (error) => logger.debug('hook position check failed; will retry', { error: error.message }),
    intervalMs: inputs.config.dryRun ? 0 : inputs.config.hookCheckIntervalMs,
    clock: inputs.clock ?? systemClock,
  });
  let ipvsReported: boolean | undefined;
  const guards: ServiceGuards = {
    synced(result) {
      guards.programmed(result.desired);
      if (result.reason === 'periodic') void guards.checkIpvs();
    },
    programmed(desired) {
      const next: typeof expected = [];
      for (const state of [desired.v4, desired.v6]) {
        if (!kernel.supports(state.family)) continue;
        const seen = new Set<string>();
        for (const hook of state.hooks) {
          if (hook.position !== 'insert' || seen.has(hook.chain)) continue;
          seen.add(hook.chain);
          next.push({ family: state.family, chain: hook.chain, rule: renderHook(hook) });
        }
      }
      expected = next;
    },
    async checkIpvs() {
      const found = await detectIpvs({ netns: inputs.netns }).catch((err: Error) => {
        logger.warn('could not check for kube-proxy IPVS mode', { error: err.message });
        return undefined;
      });
      if (!found || found.detected === ipvsReported) return;
      const wasDetected = ipvsReported === true;
      ipvsReported = found.detected;
      inputs.metrics.setIpvsDetected(found.detected);
      inputs.health.ipvsDetected(found.detected ? IPVS_REFUSAL : undefined);
      if (found.detected) logger.error(IPVS_REFUSAL, { evidence: found.evidence });
      else if (wasDetected) logger.info(`${KUBE_IPVS_DEVICE} is gone: IPVS mode no longer blocks readiness`);
    },
    start: () => watch.start(),
    stop: () => watch.stop(),
  };
  return guards;
}
