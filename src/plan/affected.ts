// Which local pods' connections a plan can change the verdict of: the workload chains it rewrote, or that
// jump to a chain it rewrote or to a chain matching on a set it changed. Pure; the daemon's opt-in conntrack
// flush deletes exactly these pods' entries (src/daemon/established-flows.ts), so their next packet is judged anew.

import type { DesiredState, IpFamily } from '../model/index.js';
import type { FamilyPlan } from './plan.js';

export interface AffectedWorkload {
  readonly family: IpFamily;
  readonly pod: string;
  readonly direction: 'ingress' | 'egress';
  readonly ip: string;
}

export function affectedWorkloads(plans: readonly FamilyPlan[], desired: DesiredState): AffectedWorkload[] {
  const out: AffectedWorkload[] = [];
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
      if (affected) out.push({ family: plan.family, pod: chain.role.pod, direction: chain.role.direction, ip: chain.role.ip });
    }
  }
  return out;
}
