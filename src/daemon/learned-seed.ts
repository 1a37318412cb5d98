// What the DNS agent must count before it grants anything new: the members the kernel's learned sets already
// hold. The sets outlive the daemon (a restart, an upgrade), so an agent that started its per-node count empty
// would let the node hold up to twice the bound ("Learned entries are bounded per pod and per node ... a pod that
// resolves a million random names under a wildcard cannot exhaust the node"). A set a sync has just created (or
// recreated) is empty, and one the agent already follows it has counted itself; every other set of a plan is
// adopted with whatever it holds and is read back from the kernel, each member with its remaining timeout.

import type { DnsLearningPlan } from '../model/index.js';
import { canonicalIp } from '../model/index.js';
import type { FamilyPlan } from '../plan/index.js';
import { savedMembersOf } from '../render/index.js';

/** The sets a sync created or recreated: empty when the agent first sees them. */
export function createdSets(plans: readonly FamilyPlan[]): Set<string> {
  const created = new Set<string>();
  for (const p of plans) {
    for (const op of [...p.ipsetOps, ...p.ipsetAfterOps]) if (op.op === 'create' && !op.prime) created.add(op.name);
    for (const set of p.retype) created.add(set.name);
  }
  return created;
}

/** The plan's sets that may already hold members the agent has not counted. */
export function setsToRead(plan: DnsLearningPlan, counted: ReadonlySet<string>, created: ReadonlySet<string> | undefined): string[] {
  return plan.sets.map((s) => s.setName).filter((name) => !counted.has(name) && !created?.has(name));
}

export interface SeededMember {
  readonly set: string;
  readonly address: string;
  /** When the kernel expires it (ms). */
  readonly until: number;
}

/**
 * The members of `names` in an `ipset save` of the node's namespace, read at `readAt` (ms). A member saved without
 * a timeout (not a learned set's, but counted all the same) lives as long as the longest lifetime the agent gives.
 */
export function seededMembers(saved: string, names: readonly string[], readAt: number, maxTtlSeconds: number): SeededMember[] {
  const out: SeededMember[] = [];
  for (const [set, entries] of savedMembersOf(saved, new Set(names)))
    for (const e of entries) {
      const address = canonicalIp(e.element);
      if (address !== undefined) out.push({ set, address, until: readAt + (e.timeout ?? maxTtlSeconds) * 1000 });
    }
  return out;
}
