// The sync loop's results as metrics and readiness: sync and apply durations, what is programmed, drift
// repairs, failures, invalid policies, the node budget, and the health state /readyz answers from.

import type { DesiredState } from '../model/index.js';
import type { HealthState } from '../observe/health.js';
import type { Metrics } from '../observe/metrics.js';
import type { SyncSubscriber } from '../reconcile/sync-reports.js';

export function syncMetrics(metrics: Metrics, health: HealthState): SyncSubscriber {
  return {
    heartbeat: () => health.heartbeat(),
    synced: (info) => {
      metrics.setLastSuccessfulSync(Date.now() / 1000);
      metrics.keepDeniedPods(() => localPods(info.desired));
      // A sync that re-read the kernel is a full one (start-up, drift timer, retry); others trust the tracker.
      metrics.observeSync(info.readKernel ? 'full' : 'incremental', info.seconds);
      metrics.observeApply(info.applySeconds);
      if (info.reason !== 'change') metrics.countEvent('resync');
      metrics.setProgrammed(() => programmedCounts(info.desired));
      if (info.drift) {
        for (const plan of info.plans) for (const c of plan.changes) metrics.countDriftRepair(c.object);
      }
      health.fullSyncProgrammed();
      health.lastSyncFailed(undefined);
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

/** The local pods (ns/name) programmed now: denied-connection series of pods gone are pruned. */
function localPods(desired: DesiredState): Set<string> {
  const local = new Set<string>();
  for (const f of [desired.v4, desired.v6]) for (const c of f.chains) if (c.role.kind === 'workload') local.add(c.role.pod);
  return local;
}

function programmedCounts(desired: DesiredState): { rules: number; ipsets: number; ipsetMembers: number } {
  const families = [desired.v4, desired.v6];
  return {
    rules: families.reduce((n, f) => n + f.chains.reduce((m, c) => m + c.rules.length, 0) + f.hooks.length, 0),
    ipsets: families.reduce((n, f) => n + f.ipsets.length, 0),
    ipsetMembers: families.reduce((n, f) => n + f.ipsets.reduce((m, s) => m + s.members.length, 0), 0),
  };
}
