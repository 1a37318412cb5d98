// What the kernel holds after a plan made against what we programmed is applied: the last expected state with
// the plan's own changes patched in, instead of deriving it again from every chain and set (expectedObserved).
// Under churn the tracker needs it after every sync, and a one-pod change moves a handful of objects.

import type { Chain, FamilyState, IpSet } from '../model/index.js';
import { renderChain, type RuleRecord, type SavedIpSet } from '../render/index.js';
import { expectedHooks, savedOf, type ObservedFamily } from './observed.js';
import type { FamilyPlan } from './plan.js';

/**
 * expectedObserved(desired), given `before` = the expected state `plan` was planned against (planFamily's
 * `observed`, derived from the previous desired state, not read from the kernel). A chain or set the plan left
 * alone holds what it held: it was the same object as before, or one the planner found equal to it.
 */
export function expectedAfter(before: ObservedFamily, plan: FamilyPlan, desired: FamilyState): ObservedFamily {
  let chains: Map<string, readonly RuleRecord[]> | undefined;
  let ipsets: Map<string, SavedIpSet> | undefined;
  let hooksMoved = false;
  const chainsToRender = new Set<string>();
  const setsToSave = new Set<string>();
  for (const change of plan.changes) {
    if (change.object === 'hook') hooksMoved = true;
    else if (change.object === 'chain') {
      chains ??= new Map(before.chains);
      if (change.action === 'delete') chains.delete(change.name);
      else chainsToRender.add(change.name);
    } else {
      ipsets ??= new Map(before.ipsets);
      if (change.action === 'delete') ipsets.delete(change.name);
      else setsToSave.add(change.name);
    }
  }
  // The desired objects of the changed names, in one pass that stops once all are found.
  if (chains) for (const c of named(desired.chains, chainsToRender)) chains.set(c.name, renderChain(c).rules);
  if (ipsets) for (const s of named(desired.ipsets, setsToSave)) ipsets.set(s.name, savedOf(s));
  return {
    family: desired.family,
    chains: chains ?? before.chains,
    hooks: hooksMoved ? expectedHooks(desired) : before.hooks,
    policies: before.policies,
    ipsets: ipsets ?? before.ipsets,
  };
}

function* named<T extends Chain | IpSet>(objects: readonly T[], names: ReadonlySet<string>): Iterable<T> {
  let left = names.size;
  if (left === 0) return;
  for (const o of objects) {
    if (!names.has(o.name)) continue;
    yield o;
    if (--left === 0) return;
  }
}
