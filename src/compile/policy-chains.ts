// Per-policy chains nf-pi-<id> / nf-po-<id>: shared by every local pod the policy selects.
// They never ACCEPT: an allow sets the accept bit and returns; the workload chain decides.

import type { Chain, IpFamily, Match, NetworkPolicy, NodeSettings, Pod, PolicyRule, Rule } from '../model/index.js';
import { containsIp, parseIp } from './cidr.js';
import { ipsOfFamily, type ClusterIndex } from './cluster-index.js';
import type { IpSetRegistry } from './ipsets.js';
import type { ChainNames } from './names.js';
import { cidrMember, namedPortOf, resolvePeers, resolvePorts, type PeerAlt, type PortAlt } from './peers-ports.js';

export type Direction = 'ingress' | 'egress';

export interface PolicyChainInput {
  readonly policy: NetworkPolicy;
  readonly direction: Direction;
  readonly family: IpFamily;
  /** False for a policy with errors: it isolates but allows nothing. */
  readonly valid: boolean;
  /** Local pods the policy selects: the destinations an ingress named port resolves against. */
  readonly localTargets: readonly Pod[];
}

export interface PolicyChainContext {
  readonly index: ClusterIndex;
  readonly sets: IpSetRegistry;
  readonly names: ChainNames;
  readonly settings: NodeSettings;
}

export function policyChain(input: PolicyChainInput, ctx: PolicyChainContext): Chain {
  const { policy, direction } = input;
  const key = `${policy.namespace}/${policy.name}`;
  const name = direction === 'ingress' ? ctx.names.policyIngress(key) : ctx.names.policyEgress(key);
  const rulesIn = (direction === 'ingress' ? policy.ingress : policy.egress) ?? [];
  const accept = ctx.settings.marks.accept;
  const rules: Rule[] = [];
  if (input.valid) {
    rulesIn.forEach((rule, i) => {
      const body = ruleBody(rule, input, ctx);
      if (body.length === 0) return;
      const comment = `${key} ${direction}:${i}`;
      rules.push(...body.map((match) => ({ match, action: { kind: 'set-mark', value: accept, mask: accept }, comment }) as const));
      rules.push({ match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } });
    });
    // A trailing RETURN is a no-op: the chain ends there anyway.
    if (rules.length > 0) rules.pop();
  }
  if (rules.length === 0) {
    const why = input.valid ? `no ${direction} rule of ${key} can match` : `${key} is invalid: allows nothing`;
    rules.push({ match: [], action: { kind: 'return' }, comment: why });
  }
  return { name, rules, role: { kind: 'policy', direction, policy: key } };
}

/** The match lists (each one iptables rule) whose union is one NetworkPolicy rule. */
function ruleBody(rule: PolicyRule, input: PolicyChainInput, ctx: PolicyChainContext): Match[][] {
  const peers = resolvePeers(rule.peers, input.policy.namespace, input.family, ctx.index);
  const ports = resolvePorts(rule.ports);
  const out: Match[][] = [];
  for (const peer of peers) {
    for (const port of ports) {
      const match = combine(peer, port, input, ctx);
      if (match) out.push(match);
    }
  }
  return out;
}

function combine(peer: PeerAlt, port: PortAlt, input: PolicyChainInput, ctx: PolicyChainContext): Match[] | undefined {
  const { family, direction } = input;
  const peerDir = direction === 'ingress' ? 'src' : 'dst';
  const protocol: Match[] = port.kind === 'any' ? [] : [{ kind: 'protocol', protocol: port.protocol }];
  const portMatch: Match[] = port.kind === 'ranges' ? [{ kind: 'dports', ports: port.ranges }] : [];

  if (port.kind === 'named') {
    // "port ... can either be a numerical or named port on a pod" — resolved per destination pod, from its
    // own container ports with the same protocol; a destination without that name does not match.
    const destinations = direction === 'ingress' ? input.localTargets : podsOfPeer(peer, family, ctx);
    const scope = direction === 'ingress' ? `targets of ${input.policy.namespace}/${input.policy.name}` : peerScope(peer);
    const set = ctx.sets.request('n', `${scope} ${port.protocol}:${port.name}`, `${scope}, named port ${port.protocol}/${port.name}`, () =>
      destinations.flatMap((pod) => {
        const number = namedPortOf(pod, port.name, port.protocol);
        return number === undefined ? [] : ipsOfFamily(pod, family).map((ip) => `${ip},${port.protocol}:${number}`);
      }),
    );
    const peerMatch = direction === 'ingress' ? peerSetMatch(peer, peerDir, input, ctx) : [];
    return peerMatch && [...protocol, ...peerMatch, { kind: 'set', set, direction: 'dst,dst' }];
  }
  const peerMatch = peerSetMatch(peer, peerDir, input, ctx);
  return peerMatch && [...protocol, ...peerMatch, ...portMatch];
}

function peerSetMatch(peer: PeerAlt, dir: 'src' | 'dst', input: PolicyChainInput, ctx: PolicyChainContext): Match[] | undefined {
  switch (peer.kind) {
    case 'any':
      return [];
    case 'pods': {
      const set = ctx.sets.request('s', peer.key, peer.key, () => peer.pods.flatMap((p) => ipsOfFamily(p, input.family)));
      return [{ kind: 'set', set, direction: dir }];
    }
    case 'cidrs': {
      const set = ctx.sets.request('b', peer.key, `ipBlock ${peer.key}`, () => peer.cidrs.map(cidrMember));
      return [{ kind: 'set', set, direction: dir }];
    }
  }
}

/** Egress named ports: the peer's pods that exist, restricted to the ipBlock when the peer is one. */
function podsOfPeer(peer: PeerAlt, family: IpFamily, ctx: PolicyChainContext): readonly Pod[] {
  switch (peer.kind) {
    case 'any':
      return ctx.index.peerPods;
    case 'pods':
      return peer.pods;
    case 'cidrs':
      return ctx.index.peerPods.filter((pod) =>
        pod.ips.some((ip) => {
          const parsed = parseIp(ip);
          return parsed?.family === family && peer.cidrs.some((c) => containsIp(c, family, parsed.value));
        }),
      );
  }
}

const peerScope = (peer: PeerAlt): string => (peer.kind === 'any' ? 'all pods' : peer.kind === 'pods' ? peer.key : `pods in ${peer.key}`);
