// Flows already established are otherwise never re-judged when the rules change. Two opt-in answers,
// both sync subscribers: strict mode (revokeEstablished) marks the flows a change denies in conntrack,
// and the conntrack flush (conntrackFlush) deletes the entries of the local pods whose rules changed.

import type { DaemonConfig } from '../config/schema.js';
import { flushFlows } from '../dataplane/conntrack.js';
import { openConntrackTable } from '../dataplane/ctnetlink.js';
import type { Logger } from '../log.js';
import type { DesiredState, NodeSettings } from '../model/index.js';
import type { Metrics } from '../observe/metrics.js';
import { affectedWorkloads, type FamilyPlan } from '../plan/index.js';
import type { SyncSubscriber } from '../reconcile/sync-reports.js';
import { Revoker } from '../revoke/revoker.js';

/** Strict mode's conntrack marker; none when revokeEstablished is off. */
export function createRevoker(config: DaemonConfig, netns: string | undefined, metrics: Metrics, logger: Logger): Revoker | undefined {
  if (!config.revokeEstablished) return undefined;
  return new Revoker({
    open: () => openConntrackTable({ netns }),
    logger: logger.child({ component: 'strict-mode' }),
    onPass: (reports, seconds) => metrics.observeRevokePass(reports, seconds),
    onFailure: () => metrics.countRevokePassFailure(),
  });
}

export interface EstablishedFlowsInputs {
  readonly config: Pick<DaemonConfig, 'conntrackFlush' | 'dryRun'>;
  readonly revoker: Revoker | undefined;
  /** The node settings the synced rules were compiled with. */
  readonly settings: () => NodeSettings | undefined;
  readonly netns: string | undefined;
  readonly logger: Logger;
}

export function establishedFlows(inputs: EstablishedFlowsInputs): SyncSubscriber {
  const { config, revoker, netns, logger } = inputs;
  let programmedOnce = false;
  return {
    synced: ({ plans, desired }) => {
      if (config.conntrackFlush) void flushDeniedFlows(plans, desired, netns, logger);
      // Strict mode re-judges established flows whenever the rules changed, and once at start-up for
      // flows that predate this daemon.
      if (!programmedOnce || plans.some((p) => p.changes.length > 0)) {
        const settings = inputs.settings();
        if (revoker && settings && !config.dryRun) revoker.request(desired, settings);
      }
      programmedOnce = true;
    },
  };
}

/**
 * Conntrack flush: deleting the entries of the local pods whose rules changed makes their next packet
 * count as new (nf_conntrack_tcp_loose), so flows still allowed carry on and flows a new deny forbids are cut.
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
