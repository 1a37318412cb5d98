// Repairing a set of ours that someone recreated with another type (or that an older version created
// with one). `ipset swap` needs equal types and a set that rules reference cannot be destroyed, so the
// set is replaced in three steps, each leaving the node enforcing the desired members:
//   1. ipset:    create a temp set of the right type with the desired members;
//   2. iptables: one transaction re-points every chain of ours that matches on the set to the temp set;
//   3. ipset:    destroy the set (nothing of ours references it now) and create it again, right type,
//                desired members.
// The ordinary plan that follows re-points the chains back (one transaction) and destroys the temp set.
// If a rule that is not ours still references the set, step 3 fails: the chains stay on the temp set,
// which holds the right members, and the error names the set.

import type { IpSet } from '../model/index.js';
import { createWithMembers, declareChainLine, filterTransaction, renderIpsetOps, ruleLine, withSetRenamed } from '../render/index.js';
import type { ObservedFamily, Ownership } from './observed.js';

export interface RetypeSteps {
  readonly createTemp: string;
  /** `iptables-restore --noflush` text; empty when no chain of ours references the set. */
  readonly reroute: string;
  readonly recreate: string;
}

/** The temp set a set is rebuilt in (also used for large member swaps): `<prefix><family>t:<hash>`. */
export function tempSetName(set: Pick<IpSet, 'name' | 'family'>, own: Ownership): string {
  const suffix = set.name.slice(set.name.indexOf(':') + 1);
  return `${own.ipsetPrefix}${set.family}t:${suffix}`.slice(0, 31);
}

export function retypeSteps(set: IpSet, observed: ObservedFamily, own: Ownership): RetypeSteps {
  const temp = tempSetName(set, own);
  const declare: string[] = [];
  const body: string[] = [];
  for (const [chain, rules] of observed.chains) {
    const renamed = rules.map((r) => withSetRenamed(r.text, set.name, temp));
    if (renamed.every((r) => r === undefined)) continue;
    declare.push(declareChainLine(chain));
    body.push(...rules.map((r, i) => ruleLine('append', chain, renamed[i] ?? r.text)));
  }
  return {
    createTemp: renderIpsetOps([
      { op: 'create', name: temp, set },
      { op: 'flush', name: temp },
      { op: 'add', name: temp, members: set.members },
    ]),
    reroute: body.length > 0 ? filterTransaction([...declare, ...body]) : '',
    recreate: renderIpsetOps([{ op: 'destroy', name: set.name }, ...createWithMembers(set)]),
  };
}
