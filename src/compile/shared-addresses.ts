// Pods that claim the same address (a stale status during an address hand-over, or a hostile object): a
// packet cannot tell them apart. ClusterState tracks which addresses are shared; peer sets leave them out
// (ipsets.ts), and on their own node they get fail-closed chains instead of a pod's (sharedAddressChains).

import type { Chain, Pod, Problem } from '../model/index.js';
import type { ChainNames } from './names.js';

/** Addresses more than one peer pod claims, with their owners (sorted by namespace/name). */
export type SharedAddresses = ReadonlyMap<string, readonly Pod[]>;

const podKeyOf = (p: Pod): string => `${p.namespace}/${p.name}`;

export function sharedAddressProblems(ip: string, owners: readonly Pod[]): Problem[] {
  const names = owners.map(podKeyOf).join(', ');
  return owners.map((pod) => ({
    object: `Pod ${podKeyOf(pod)}`,
    field: 'status.podIPs',
    message: `address ${ip} is also claimed by another pod (${names}): it matches no peer rule, and new connections to and from it on its node are dropped, until only one pod holds it`,
    severity: 'error' as const,
  }));
}

/**
 * Two local pods claiming one address cannot be told apart by a packet, so neither pod's policies can be
 * applied to it; the first pod by name used to take the dispatch and its policies (or their absence) then
 * judged the other pod's traffic too, opening an isolated pod. Until the conflict clears (usually a stale
 * status during an address hand-over), new connections to and from the address are dropped: never more open
 * than either pod's policies, at the cost of the address's traffic meanwhile. Established flows carry on.
 */
export function sharedAddressChains(ip: string, owners: readonly Pod[], names: ChainNames): Chain[] {
  const who = owners.map(podKeyOf).join(' + ');
  return (['ingress', 'egress'] as const).map((direction) => ({
    name: direction === 'ingress' ? names.toWorkload(`shared ${ip}`) : names.fromWorkload(`shared ${ip}`),
    rules: [
      { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
      { match: [], action: { kind: 'drop' }, comment: `address shared by ${who}: dropped until one pod holds it` },
    ],
    role: { kind: 'workload', direction, pod: who, ip },
  }));
}
