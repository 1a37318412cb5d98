// "Closest rule": when a pod is isolated and no rule of its policies admits the packet, the rule that misses
// it by exactly one field (the port, the protocol, one label, the namespace, the address block) is
// usually the typo or the missing label the operator is looking for.

import { selectorMatches } from '../compile/selectors.js';
import type { ClusterSnapshot, L4Protocol, NetworkPolicy, Pod, PolicyPeer, PolicyPort, PolicyRule } from '../model/index.js';
import { inAnyCidr, parseIp } from '../model/address.js';
import { ruleText, selectorText } from './describe.js';

export interface ClosestQuery {
  readonly direction: 'ingress' | 'egress';
  /** Keys of the NetworkPolicies that isolate the pod in that direction. */
  readonly policies: readonly string[];
  /** The other end of the connection (the source for ingress, the destination for egress). */
  readonly peerIp: string;
  readonly peerPod?: Pod;
  /** The destination pod (named ports are its). */
  readonly dstPod?: Pod;
  readonly proto: L4Protocol;
  readonly port: number;
}

export interface ClosestRule {
  readonly policy: string;
  /** `ingress:0` */
  readonly rule: string;
  /** What the rule admits, in words. */
  readonly admits: string;
  /** The one field in which it misses the packet. */
  readonly differs: string;
}

/** Every rule that misses the packet in exactly one field, in policy and rule order. */
export function closestRules(snapshot: ClusterSnapshot, q: ClosestQuery): ClosestRule[] {
  const out: ClosestRule[] = [];
  for (const key of q.policies) {
    const policy = snapshot.policies.find((p) => `${p.namespace}/${p.name}` === key);
    if (!policy || (policy.problems?.length ?? 0) > 0) continue;
    const rules = (q.direction === 'ingress' ? policy.ingress : policy.egress) ?? [];
    rules.forEach((rule, i) => {
      const misses = [...peerMisses(snapshot, policy, rule, q), ...portMisses(rule, q)];
      if (misses.length === 1) out.push({ policy: key, rule: `${q.direction}:${i}`, admits: ruleText(rule), differs: misses[0]! });
    });
  }
  return out;
}

/** The fewest fields in which one of the rule's peers misses the peer (none: a peer matches, or the rule has none). */
function peerMisses(snapshot: ClusterSnapshot, policy: NetworkPolicy, rule: PolicyRule, q: ClosestQuery): string[] {
  const peers = rule.peers ?? [];
  if (peers.length === 0) return [];
  return fewest(peers.map((peer) => peerMiss(snapshot, policy, peer, q)));
}

function peerMiss(snapshot: ClusterSnapshot, policy: NetworkPolicy, peer: PolicyPeer, q: ClosestQuery): string[] {
  if (peer.ipBlock) {
    const addr = parseIp(q.peerIp);
    const inside = addr !== undefined && inAnyCidr(addr, [peer.ipBlock.cidr]) && !inAnyCidr(addr, peer.ipBlock.except);
    return inside ? [] : [`the address: ${q.peerIp} is not in ${ruleText({ peers: [peer] })}`];
  }
  const pod = q.peerPod;
  // An address no pod owns misses a pod peer in every field that peer names: never the closest rule.
  if (!pod) return ['not a pod', 'not in a namespace'];
  const misses: string[] = [];
  if (peer.namespaceSelector) {
    const labels = {
      'kubernetes.io/metadata.name': pod.namespace,
      ...(snapshot.namespaces.find((n) => n.name === pod.namespace)?.labels ?? {}),
    };
    if (!selectorMatches(peer.namespaceSelector, labels))
      misses.push(`the namespace: ${pod.namespace} is not one of namespaces ${selectorText(peer.namespaceSelector, '(all)')}`);
  } else if (pod.namespace !== policy.namespace) misses.push(`the namespace: ${pod.namespace}, not ${policy.namespace}`);
  const selector = peer.podSelector;
  if (selector) {
    for (const [k, v] of Object.entries(selector.matchLabels))
      if (labelOf(pod.labels, k) !== v) misses.push(`one label: ${k}=${labelOf(pod.labels, k) ?? '(unset)'}, not ${k}=${v}`);
    for (const e of selector.matchExpressions)
      if (!selectorMatches({ matchLabels: {}, matchExpressions: [e] }, pod.labels))
        misses.push(
          `one label: ${e.key}=${labelOf(pod.labels, e.key) ?? '(unset)'} fails ${selectorText({ matchLabels: {}, matchExpressions: [e] }, '')}`,
        );
  }
  return misses;
}

/** A pod's own label `key` (a key such as `constructor` is not read from the object's prototype). */
const labelOf = (labels: Readonly<Record<string, string>>, key: string): string | undefined =>
  Object.hasOwn(labels, key) ? labels[key] : undefined;

function portMisses(rule: PolicyRule, q: ClosestQuery): string[] {
  const ports = rule.ports ?? [];
  if (ports.length === 0) return [];
  return fewest(ports.map((p) => portMiss(p, q)));
}

function portMiss(p: PolicyPort, q: ClosestQuery): string[] {
  const misses: string[] = [];
  const proto = p.protocol.toLowerCase();
  if (proto !== q.proto) misses.push(`the protocol: ${q.proto}, not ${proto}`);
  if (p.port === undefined) return misses;
  let from: number | undefined;
  let to: number | undefined;
  if (typeof p.port === 'string') {
    // A named port is the destination pod's container port of that name (and the rule's protocol).
    const named = q.dstPod?.ports.find((c) => c.name === p.port && c.protocol === p.protocol);
    if (named) from = to = named.containerPort;
  } else {
    from = p.port;
    to = p.endPort ?? p.port;
  }
  if (from === undefined || to === undefined) misses.push(`the port: the destination declares no port named ${String(p.port)}`);
  else if (q.port < from || q.port > to) misses.push(`the port: ${q.port}, not ${from === to ? from : `${from}-${to}`}`);
  return misses;
}

const fewest = (options: readonly string[][]): string[] => options.reduce((a, b) => (b.length < a.length ? b : a));
