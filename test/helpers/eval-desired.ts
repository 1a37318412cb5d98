// A tiny userspace walker over compiled DesiredState values (test-only). It follows the FORWARD hooks into
// our chains with iptables' jump/goto/RETURN and mark semantics and answers what one NEW packet meets.
// Deliberately independent of src/compile and src/render (address maths via ipaddr.js), and strict: any
// match it does not understand, dangling jump, missing set or family mix-up throws instead of guessing.

import ipaddr from 'ipaddr.js';
import type { Chain, ConntrackState, FamilyState, IpSet, L4Protocol, Match, Rule } from '../../src/model/index.js';

export interface EvalPacket {
  readonly src: string;
  readonly dst: string;
  readonly proto: L4Protocol | 'ipv6-icmp';
  readonly dport: number;
  /** ICMPv6 only: the message type and the hop limit the packet carries. */
  readonly icmpType?: number;
  readonly hopLimit?: number;
  /** Interfaces as FORWARD sees them: `cni0` for the pod bridge, `flannel.1`/`eth0` otherwise. */
  readonly inIface: string;
  readonly outIface: string;
  /** Defaults to NEW: connections are judged on their first packet. */
  readonly ctstate?: ConntrackState;
  /** Only needed if the compiler ever emits physdev matches. */
  readonly physIn?: string;
  readonly physOut?: string;
  readonly bridged?: boolean;
}

/** NONE: our chains gave no verdict, so the rest of FORWARD (policy ACCEPT here) decides. */
export type EvalVerdict = 'ACCEPT' | 'DROP' | 'REJECT' | 'NONE';

export interface EvalResult {
  readonly verdict: EvalVerdict;
  /** `chain#index` of every rule that matched, in order. */
  readonly path: readonly string[];
}

type Outcome = 'ACCEPT' | 'DROP' | 'REJECT' | 'CONTINUE';

const MAX_DEPTH = 32;

export function evaluate(state: FamilyState, pkt: EvalPacket): EvalResult {
  const chains = new Map<string, Chain>(state.chains.map((c) => [c.name, c]));
  const sets = new Map<string, IpSet>(state.ipsets.map((s) => [s.name, s]));
  const src = addr(pkt.src, state.family);
  const dst = addr(pkt.dst, state.family);
  const path: string[] = [];
  let mark = 0;

  const matches = (m: Match, rule: Rule): boolean => {
    switch (m.kind) {
      case 'src-net':
        return xor(m.negate, inCidr(src, m.cidr, state.family));
      case 'dst-net':
        return xor(m.negate, inCidr(dst, m.cidr, state.family));
      case 'in-iface':
        return xor(m.negate, ifaceMatches(m.name, pkt.inIface));
      case 'out-iface':
        return xor(m.negate, ifaceMatches(m.name, pkt.outIface));
      case 'protocol':
        return pkt.proto === m.protocol;
      case 'dports': {
        // The kernel refuses multiport without a protocol match; so do we.
        if (!rule.match.some((x) => x.kind === 'protocol')) throw new Error(`multiport without -p in ${JSON.stringify(rule)}`);
        return m.ports.some((r) => pkt.dport >= r.from && pkt.dport <= r.to);
      }
      case 'sports': {
        if (!rule.match.some((x) => x.kind === 'protocol')) throw new Error(`multiport without -p in ${JSON.stringify(rule)}`);
        // Only DNS answers (replies) are matched by source port; the packets evaluated here open flows.
        return false;
      }
      case 'ctdir':
        // The packets evaluated here open their flows: the original direction.
        return m.direction === 'ORIGINAL';
      case 'set': {
        const set = sets.get(m.set);
        if (!set) throw new Error(`rule refers to missing set ${m.set}`);
        if (set.family !== state.family) throw new Error(`family ${state.family} rule refers to family ${set.family} set ${m.set}`);
        return xor(m.negate, setMatches(set, m.direction, src, dst, pkt));
      }
      case 'mark':
        return xor(m.negate, (mark & m.mask) >>> 0 === m.value >>> 0);
      case 'ctstate':
        return m.states.includes(pkt.ctstate ?? 'NEW');
      case 'connmark':
        // A NEW packet's flow has no conntrack mark yet.
        return xor(m.negate, (0 & m.mask) >>> 0 === m.value >>> 0);
      case 'physdev': {
        if ((m.in !== undefined && pkt.physIn === undefined) || (m.out !== undefined && pkt.physOut === undefined)) {
          throw new Error('packet has no bridge ports, but a rule matches physdev names');
        }
        return (
          (m.in === undefined || m.in === pkt.physIn) &&
          (m.out === undefined || m.out === pkt.physOut) &&
          (!m.isBridged || pkt.bridged === true)
        );
      }
      case 'limit':
        // One NEW packet never exhausts a rate limit's bucket.
        return true;
      case 'icmpv6-type':
        // ip6tables refuses `-m icmp6` without `-p ipv6-icmp`; so do we.
        if (!rule.match.some((x) => x.kind === 'protocol' && x.protocol === 'ipv6-icmp'))
          throw new Error(`icmp6 without -p ipv6-icmp in ${JSON.stringify(rule)}`);
        if (state.family !== 6) throw new Error(`icmp6 match in the IPv${state.family} ruleset`);
        return pkt.icmpType === m.type;
      case 'hop-limit':
        if (pkt.hopLimit === undefined) throw new Error(`packet without a hop limit meets ${JSON.stringify(rule)}`);
        return pkt.hopLimit === m.value;
    }
  };

  const run = (rules: readonly Rule[], name: string, depth: number): Outcome => {
    if (depth > MAX_DEPTH) throw new Error(`chain nesting deeper than ${MAX_DEPTH} at ${name} (loop?)`);
    for (const [i, rule] of rules.entries()) {
      if (!rule.match.every((m) => matches(m, rule))) continue;
      path.push(`${name}#${i}`);
      const a = rule.action;
      switch (a.kind) {
        case 'accept':
          return 'ACCEPT';
        case 'drop':
          return 'DROP';
        case 'reject':
          return 'REJECT';
        case 'return':
          return 'CONTINUE';
        case 'nflog':
          // A copy to the flow log; the walk goes on.
          break;
        case 'nfqueue':
          // Held for the DNS agent, which releases every answer.
          return 'ACCEPT';
        case 'set-mark':
          mark = (((mark & ~a.mask) >>> 0) ^ a.value) >>> 0;
          break;
        case 'jump': {
          const out = run(chainRules(a.target), a.target, depth + 1);
          if (out !== 'CONTINUE') return out;
          break;
        }
        case 'goto':
          // A goto's RETURN (or end) goes back to whoever called *this* chain: this chain ends with it.
          return run(chainRules(a.target), a.target, depth + 1);
      }
    }
    return 'CONTINUE';
  };

  const chainRules = (name: string): readonly Rule[] => {
    const chain = chains.get(name);
    if (!chain) throw new Error(`jump to missing chain ${name}`);
    return chain.rules;
  };

  // FORWARD as the kernel holds it: our inserted hooks at the top, appended ones at the end, nothing else.
  const forward = [
    ...state.hooks.filter((h) => h.chain === 'FORWARD' && h.position === 'insert').map((h) => h.rule),
    ...state.hooks.filter((h) => h.chain === 'FORWARD' && h.position === 'append').map((h) => h.rule),
  ];
  const out = run(forward, 'FORWARD', 0);
  return { verdict: out === 'CONTINUE' ? 'NONE' : out, path };
}

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** `! <match>`: the negation flag flips the match. */
const xor = (negate: boolean | undefined, matched: boolean): boolean => (negate === true ? !matched : matched);

function addr(text: string, family: 4 | 6): Addr {
  const a = ipaddr.parse(text);
  if ((a.kind() === 'ipv4' ? 4 : 6) !== family) throw new Error(`${text} evaluated against the IPv${family} state`);
  return a;
}

const parsedCidrs = new Map<string, readonly [Addr, number]>();

function inCidr(a: Addr, cidr: string, family: 4 | 6): boolean {
  let parsed = parsedCidrs.get(cidr);
  if (!parsed) {
    parsed = cidr.includes('/') ? ipaddr.parseCIDR(cidr) : [ipaddr.parse(cidr), family === 4 ? 32 : 128];
    parsedCidrs.set(cidr, parsed);
  }
  const [net, bits] = parsed;
  if (net.kind() !== a.kind()) throw new Error(`${cidr} used in an IPv${family} rule`);
  return a.match(net, bits);
}

/** iptables: a trailing `+` matches any interface with that prefix. */
const ifaceMatches = (pattern: string, name: string): boolean =>
  pattern.endsWith('+') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;

interface ParsedMember {
  readonly net: Addr;
  readonly bits: number;
  readonly nomatch: boolean;
  readonly proto?: string;
  readonly port?: number;
}

// Parsed members per set, computed once: the verdict tables walk thousands of packets through the same sets.
const parsedSets = new WeakMap<IpSet, readonly ParsedMember[]>();

function parseMembers(set: IpSet): readonly ParsedMember[] {
  let parsed = parsedSets.get(set);
  if (parsed) return parsed;
  const full = set.family === 4 ? 32 : 128;
  parsed = set.members.map((member) => {
    const [entry = '', flag] = member.split(' ');
    if (set.type === 'hash:ip,port') {
      const [ip = '', rest = ''] = entry.split(',');
      const [proto, port] = rest.includes(':') ? rest.split(':') : ['tcp', rest];
      return { net: ipaddr.parse(ip), bits: full, nomatch: false, ...(proto !== undefined ? { proto } : {}), port: Number(port) };
    }
    const [net, bits] = entry.includes('/') ? ipaddr.parseCIDR(entry) : [ipaddr.parse(entry), full];
    if (set.type === 'hash:ip' && bits !== full) throw new Error(`hash:ip set ${set.name} holds a network ${entry}`);
    return { net, bits, nomatch: flag === 'nomatch' };
  });
  parsedSets.set(set, parsed);
  return parsed;
}

function setMatches(set: IpSet, direction: string, src: Addr, dst: Addr, pkt: EvalPacket): boolean {
  const members = parseMembers(set);
  const contains = (m: ParsedMember, a: Addr) => m.net.kind() === a.kind() && a.match(m.net, m.bits);
  switch (set.type) {
    case 'hash:ip':
    case 'hash:net': {
      const a = direction === 'src' ? src : direction === 'dst' ? dst : undefined;
      if (!a) throw new Error(`${set.type} set ${set.name} used with direction ${direction}`);
      // ipset picks the most specific entry that contains the address; a `nomatch` entry then means no.
      let best: ParsedMember | undefined;
      for (const m of members) if (contains(m, a) && (!best || m.bits > best.bits)) best = m;
      return best !== undefined && !best.nomatch;
    }
    case 'hash:ip,port':
      // Only `dst,dst` has a meaning for a packet we model (we do not track source ports).
      if (direction !== 'dst,dst') throw new Error(`hash:ip,port set ${set.name} used with direction ${direction}`);
      return members.some((m) => contains(m, dst) && m.proto === pkt.proto && m.port === pkt.dport);
  }
}

/** One FORWARD pass of a packet on one node, and what that node's chains said. */
export interface Hop {
  readonly node: string;
  readonly packet: EvalPacket;
  readonly result: EvalResult;
}

export interface ClusterPacket {
  readonly src: string;
  readonly dst: string;
  readonly proto: L4Protocol;
  readonly dport: number;
  readonly ctstate?: ConntrackState;
}

/**
 * Routes a packet through the nodes it crosses in a flannel cluster and runs each node's FORWARD: the
 * sender's node sees it come in from the pod bridge, the receiver's node sees it leave through it; a
 * same-node pair is bridged and crosses FORWARD once with both. `nodeOf` names the node hosting an
 * address (undefined: outside the cluster). Allowed iff no hop drops or rejects.
 */
export function evaluateCluster(
  stateOf: (node: string, family: 4 | 6) => FamilyState,
  nodeOf: (ip: string) => string | undefined,
  pkt: ClusterPacket,
): { readonly allowed: boolean; readonly hops: readonly Hop[] } {
  const family = ipaddr.parse(pkt.src).kind() === 'ipv4' ? 4 : 6;
  const srcNode = nodeOf(pkt.src);
  const dstNode = nodeOf(pkt.dst);
  const overlay = (other: string | undefined): string => (other === undefined ? 'eth0' : 'flannel.1');
  const passes: { node: string; inIface: string; outIface: string }[] = [];
  if (srcNode !== undefined) passes.push({ node: srcNode, inIface: 'cni0', outIface: dstNode === srcNode ? 'cni0' : overlay(dstNode) });
  if (dstNode !== undefined && dstNode !== srcNode) passes.push({ node: dstNode, inIface: overlay(srcNode), outIface: 'cni0' });
  const hops = passes.map(({ node, inIface, outIface }) => {
    const packet: EvalPacket = { ...pkt, inIface, outIface, ...(inIface === 'cni0' && outIface === 'cni0' ? { bridged: true } : {}) };
    return { node, packet, result: evaluate(stateOf(node, family), packet) };
  });
  return { allowed: hops.every((h) => h.result.verdict !== 'DROP' && h.result.verdict !== 'REJECT'), hops };
}
