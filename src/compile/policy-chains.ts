// Per-policy chains nf-pi-<id> / nf-po-<id>: shared by every local pod the policy selects.
// They never ACCEPT: an allow sets the accept bit and returns; the workload chain decides.

import {
  ruleComment,
  type Chain,
  type IpFamily,
  type IpSetName,
  type Match,
  type NetworkPolicy,
  type NodeSettings,
  type PolicyRule,
  type PolicyType,
  type Rule,
} from '../model/index.js';
import { SetNamer, type PodScope, type RenderedChain } from './ipsets.js';
import type { ChainNames } from './names.js';
import type { Cidr } from '../model/address.js';
import { cidrMember, resolvePeers, resolvePorts, type PeerAlt, type PortAlt } from './peers-ports.js';
import { flowLogRules, ruleId } from './flow-log.js';

export type Direction = 'ingress' | 'egress';

// "If this field is not specified, it will default based on the existence of ingress or egress rules;
// policies that contain an egress section are assumed to affect egress, and all policies (whether or not
// they contain an ingress section) are assumed to affect ingress."
export function policyTypes(policy: NetworkPolicy): readonly PolicyType[] {
  if (policy.policyTypes && policy.policyTypes.length > 0) return policy.policyTypes;
  return policy.egress && policy.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
}

export interface PolicyChainInput {
  readonly policy: NetworkPolicy;
  readonly direction: Direction;
  readonly family: IpFamily;
  /** False for a policy with errors: it isolates but allows nothing. */
  readonly valid: boolean;
}

/**
 * What a policy chain needs besides the policy: chain names, mark bits and the set prefix. A chain depends
 * on nothing else, so it can be cached per policy.
 */
export interface PolicyChainSettings {
  readonly names: ChainNames;
  readonly settings: NodeSettings;
}

interface PolicyChainContext extends PolicyChainSettings {
  readonly sets: SetNamer;
}

/**
 * One policy's chain for one direction and family, with the sets it names (their members are resolved
 * later, from the requests): a pure function of its arguments.
 */
export function policyChain(input: PolicyChainInput, settings: PolicyChainSettings): RenderedChain {
  const sets = new SetNamer(settings.settings.ipsetPrefix, input.family);
  return { chain: renderPolicyChain(input, { ...settings, sets }), sets: sets.requests };
}

function renderPolicyChain(input: PolicyChainInput, ctx: PolicyChainContext): Chain {
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
      const comment = ruleComment.policyRule(key, direction, i);
      // Opt-in: each allow is preceded by its own rate-limited log rule with the same matches.
      const logged = ctx.settings.flowLog?.allowed ? ctx.settings.flowLog : undefined;
      const id = logged ? ruleId(rule) : undefined;
      rules.push(
        ...body.flatMap((match): Rule[] => [
          ...flowLogRules(logged, { kind: 'allowed', chain: name, rule: i, ...(id !== undefined ? { id } : {}) }, match),
          { match, action: { kind: 'set-mark', value: accept, mask: accept }, comment },
        ]),
      );
      rules.push({ match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } });
    });
    // A trailing RETURN is a no-op: the chain ends there anyway.
    if (rules.length > 0) rules.pop();
  }
  if (rules.length === 0) {
    const why = input.valid ? ruleComment.policyNone(key, direction) : ruleComment.policyInvalid(key);
    rules.push({ match: [], action: { kind: 'return' }, comment: why });
  }
  return { name, rules, role: { kind: 'policy', direction, policy: key, ...(policy.audit ? { audited: true as const } : {}) } };
}

/** The match lists (each one iptables rule) whose union is one NetworkPolicy rule. */
function ruleBody(rule: PolicyRule, input: PolicyChainInput, ctx: PolicyChainContext): Match[][] {
  const peers = resolvePeers(rule.peers, input.policy.namespace, input.family);
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
  const { direction } = input;
  const peerDir = direction === 'ingress' ? 'src' : 'dst';
  const protocol: Match[] = port.kind === 'any' ? [] : [{ kind: 'protocol', protocol: port.protocol }];
  const portMatch: Match[] = port.kind === 'ranges' ? [{ kind: 'dports', ports: port.ranges }] : [];

  if (port.kind === 'named') {
    // Named ports resolve per destination pod: for ingress the policy's own targets, for egress the peers.
    const name = port.name;
    const scope = direction === 'ingress' ? `targets of ${input.policy.namespace}/${input.policy.name}` : peerScope(peer);
    const words = direction === 'ingress' || peer.kind !== 'block' ? scope : `pods in ${exceptWords(peer)}`;
    const set = ctx.sets.request({
      kind: 'n',
      key: `${scope} ${port.protocol}:${name}`,
      description: `${words}, named port ${port.protocol}/${name}`,
      spec:
        direction === 'ingress'
          ? { kind: 'named-targets', policy: input.policy, protocol: port.protocol, name }
          : { kind: 'named-pods', scope: podScope(peer), protocol: port.protocol, name },
    });
    const peerMatch = direction === 'ingress' ? peerSetMatch(peer, peerDir, ctx) : [];
    return [...protocol, ...peerMatch, { kind: 'set', set, direction: 'dst,dst' }];
  }
  return [...protocol, ...peerSetMatch(peer, peerDir, ctx), ...portMatch];
}

function peerSetMatch(peer: PeerAlt, dir: 'src' | 'dst', ctx: PolicyChainContext): Match[] {
  switch (peer.kind) {
    case 'any':
      return [];
    case 'pods': {
      const set = ctx.sets.request({
        kind: 's',
        key: peer.key,
        description: peer.key,
        spec: { kind: 'selector', peer: peer.peer, namespace: peer.namespace },
      });
      return [{ kind: 'set', set, direction: dir }];
    }
    case 'cidrs':
      return [{ kind: 'set', set: cidrSet(peer.key, peer.cidrs, ctx), direction: dir }];
    case 'block': {
      // "in the cidr and not in an except": the excepts are a set of their own, negated.
      const excepts = ctx.sets.request({
        kind: 'x',
        // Keyed by the cidrs too, so the set's description (which names them) is the same whoever asks first.
        key: peer.key,
        description: `ipBlock excepts of ${exceptWords(peer)}`,
        spec: { kind: 'cidrs', members: peer.exceptMembers },
      });
      const notExcepted: Match = { kind: 'set', set: excepts, direction: dir, negate: true };
      // A /0 is the whole family, which hash:net cannot hold: only the excepts are matched.
      if (peer.cidrs.some((c) => c.prefix === 0)) return [notExcepted];
      return [{ kind: 'set', set: cidrSet(peer.cidrsKey, peer.cidrs, ctx), direction: dir }, notExcepted];
    }
  }
}

function cidrSet(key: string, cidrs: readonly Cidr[], ctx: PolicyChainContext): IpSetName {
  return ctx.sets.request({ kind: 'b', key, description: `ipBlock ${key}`, spec: { kind: 'cidrs', members: cidrs.map(cidrMember) } });
}

/** Egress named ports: the peer's pods, restricted to the ipBlock when the peer is one. */
function podScope(peer: PeerAlt): PodScope {
  switch (peer.kind) {
    case 'any':
      return { kind: 'all' };
    case 'pods':
      return { kind: 'selector', peer: peer.peer, namespace: peer.namespace };
    case 'cidrs':
      return { kind: 'cidrs', cidrs: peer.cidrs, excepts: [] };
    case 'block':
      return { kind: 'cidrs', cidrs: peer.cidrs, excepts: peer.excepts };
  }
}

const peerScope = (peer: PeerAlt): string => (peer.kind === 'any' ? 'all pods' : peer.kind === 'pods' ? peer.key : `pods in ${peer.key}`);

/** `10.0.0.0/8 except 12 ranges`: an except set's members can be thousands, so they are counted, not listed. */
const exceptWords = (peer: Extract<PeerAlt, { kind: 'block' }>): string =>
  `${peer.cidrsKey} except ${peer.excepts.length === 1 ? cidrMember(peer.excepts[0]!) : `${peer.excepts.length} ranges`}`;
