// Lookups the compiler needs over one snapshot, built once per compile.

import type { ClusterSnapshot, IpFamily, Labels, NetworkPolicy, Pod, PolicyPeer } from '../model/index.js';
import { parseIp } from './cidr.js';
import { canonicalSelector, selectorMatches } from './selectors.js';

export interface ClusterIndex {
  readonly snapshot: ClusterSnapshot;
  namespaceLabels(ns: string): Labels;
  /** Pods that count as policy peers (see `countsAsPeer`). */
  readonly peerPods: readonly Pod[];
  /** Pods of this node that policies can target, sorted by namespace/name. */
  readonly localPods: readonly Pod[];
  /** Peer pods a selector peer matches, memoized by canonical key. */
  podsForPeer(peer: PolicyPeer, policyNamespace: string): readonly Pod[];
  /** Canonical key of a selector peer (namespace scope + selectors). */
  peerKey(peer: PolicyPeer, policyNamespace: string): string;
  /** Pods the policy's podSelector selects (peer rules: same namespace, has an IP, running). */
  selectedPods(policy: NetworkPolicy): readonly Pod[];
}

// "Peer pods count only while they have an IP and are not Succeeded/Failed; hostNetwork pods are never
// policy targets and never selector-matched peers (their IP is the node's)." (DESIGN.md §3)
export const countsAsPeer = (p: Pod): boolean =>
  p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';

// Sources hand us canonical addresses; a colon is what tells the families apart. Malformed ones are
// reported by the compiler (podProblems) and never become members.
const familyCache = new Map<string, IpFamily | undefined>();
export function familyOf(ip: string): IpFamily | undefined {
  let family = familyCache.get(ip);
  if (family === undefined && !familyCache.has(ip)) {
    family = parseIp(ip)?.family;
    if (familyCache.size > 1_000_000) familyCache.clear();
    familyCache.set(ip, family);
  }
  return family;
}
export const ipsOfFamily = (p: Pod, family: IpFamily): string[] => p.ips.filter((ip) => familyOf(ip) === family);

export function indexCluster(snapshot: ClusterSnapshot, nodeName: string): ClusterIndex {
  const nsLabels = new Map(snapshot.namespaces.map((n) => [n.name, n.labels]));
  const byKey = (a: Pod, b: Pod) => (a.namespace === b.namespace ? cmp(a.name, b.name) : cmp(a.namespace, b.namespace));
  const peerPods = snapshot.pods.filter(countsAsPeer).sort(byKey);
  const localPods = peerPods.filter((p) => p.nodeName === nodeName);
  const podsByNamespace = new Map<string, Pod[]>();
  for (const p of peerPods) {
    const list = podsByNamespace.get(p.namespace);
    if (list) list.push(p);
    else podsByNamespace.set(p.namespace, [p]);
  }
  const memo = new Map<string, readonly Pod[]>();
  const namespaceLabels = (ns: string): Labels => nsLabels.get(ns) ?? { 'kubernetes.io/metadata.name': ns };

  const peerKey = (peer: PolicyPeer, policyNamespace: string): string => {
    // "If namespaceSelector is also set ... selects the Pods matching PodSelector in the Namespaces
    // selected by NamespaceSelector. Otherwise it selects the Pods matching PodSelector in the policy's own Namespace."
    const scope = peer.namespaceSelector ? `nsSelector=${canonicalSelector(peer.namespaceSelector)}` : `namespace=${policyNamespace}`;
    const pods = peer.podSelector ? canonicalSelector(peer.podSelector) : '{}';
    return `${scope} podSelector=${pods}`;
  };

  const podsForPeer = (peer: PolicyPeer, policyNamespace: string): readonly Pod[] => {
    const key = peerKey(peer, policyNamespace);
    let pods = memo.get(key);
    if (!pods) {
      // Narrow by namespace first: most selectors scope to one namespace or a few.
      const namespaces = peer.namespaceSelector
        ? [...podsByNamespace.keys()].filter((ns) => selectorMatches(peer.namespaceSelector!, namespaceLabels(ns)))
        : [policyNamespace];
      pods = namespaces
        .flatMap((ns) => podsByNamespace.get(ns) ?? [])
        .filter((p) => !peer.podSelector || selectorMatches(peer.podSelector, p.labels));
      memo.set(key, pods);
    }
    return pods;
  };

  return {
    snapshot,
    namespaceLabels,
    peerPods,
    localPods,
    podsForPeer,
    peerKey,
    selectedPods: (policy) => podsForPeer({ podSelector: policy.podSelector }, policy.namespace),
  };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
