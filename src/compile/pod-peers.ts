// What the compiler asks of one pod or one selector peer: whether the pod counts as a peer, its addresses
// of one family, and a peer's canonical key (its set's key, and the key its selection is kept under).

import type { IpFamily, Pod, PolicyPeer } from '../model/index.js';
import { podAddressFamily } from '../model/address.js';
import { canonicalSelector } from './selectors.js';

// "Peer pods count only while they have an IP and are not Succeeded/Failed; hostNetwork pods are never
// policy targets and never selector-matched peers (their IP is the node's)." (DESIGN.md §3)
export const countsAsPeer = (p: Pod): boolean => p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';

export const hasBadAddress = (p: Pod): boolean => p.ips.some((ip) => podAddressFamily(ip) === undefined);

const byFamily = new WeakMap<Pod, { readonly 4: readonly string[]; readonly 6: readonly string[] }>();
const NO_IPS: readonly string[] = [];
/**
 * A pod's addresses of one family (cached per pod object: pods are immutable values). Every address is parsed
 * once (parseIp keeps what it parsed); asking again is one map lookup.
 */
export function ipsOfFamily(p: Pod, family: IpFamily): readonly string[] {
  // Single-stack pods (most): the pod's own array or none, with nothing kept per pod.
  if (p.ips.length <= 1) return p.ips.length === 1 && podAddressFamily(p.ips[0]!) === family ? p.ips : NO_IPS;
  let split = byFamily.get(p);
  if (!split)
    byFamily.set(p, (split = { 4: p.ips.filter((ip) => podAddressFamily(ip) === 4), 6: p.ips.filter((ip) => podAddressFamily(ip) === 6) }));
  return split[family];
}

/** The canonical text of a selector peer: its set's key, and the key its selection is kept under. */
export function peerKey(peer: PolicyPeer, policyNamespace: string): string {
  // Asked for by every rendered selector match: kept per peer object (a peer has one policy's namespace).
  const known = peerKeys.get(peer);
  if (known?.namespace === policyNamespace) return known.key;
  const key = peerKeyText(peer, policyNamespace);
  peerKeys.set(peer, { namespace: policyNamespace, key });
  return key;
}
const peerKeys = new WeakMap<PolicyPeer, { readonly namespace: string; readonly key: string }>();
function peerKeyText(peer: PolicyPeer, policyNamespace: string): string {
  // "If namespaceSelector is also set ... selects the Pods matching PodSelector in the Namespaces
  // selected by NamespaceSelector. Otherwise it selects the Pods matching PodSelector in the policy's own Namespace."
  const scope = peer.namespaceSelector ? `nsSelector=${canonicalSelector(peer.namespaceSelector)}` : `namespace=${policyNamespace}`;
  return `${scope} podSelector=${peer.podSelector ? canonicalSelector(peer.podSelector) : '{}'}`;
}
