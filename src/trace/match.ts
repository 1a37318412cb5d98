// Every Match kind netfence emits, evaluated against one packet. A mapped table, like the renderer's:
// a new Match kind does not compile until the tracer can evaluate and describe it.

import type { Match } from '../model/index.js';
import { containsIp, parseCidrOrHost } from '../model/address.js';
import { packetAddress, setMatches, type IpSets } from './ipsets.js';
import type { Packet } from './packet.js';

export interface MatchContext {
  readonly packet: Packet;
  /** The packet mark at this point of the walk. */
  readonly mark: number;
  readonly ipsets: IpSets;
  /** No words for a failed match (a caller that keeps only the verdict). */
  readonly quiet?: boolean;
}

/** `true`/`false`, or why the tracer cannot tell (then the rule is reported as not evaluated). */
export type MatchAnswer = boolean | { readonly unknown: string };

/** iptables `-i`/`-o`/`--physdev-*`: exact name, or a prefix when the pattern ends in `+`. */
export function ifaceMatches(pattern: string, name: string | undefined): boolean {
  if (name === undefined) return false;
  return pattern.endsWith('+') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

const flip = (answer: MatchAnswer, negate: boolean | undefined): MatchAnswer => (typeof answer === 'boolean' && negate ? !answer : answer);

function addrIn(cidr: string, ip: string): MatchAnswer {
  // parseCidrOrHost keeps what it parsed: a map walks thousands of packets past the same rules.
  const net = parseCidrOrHost(cidr);
  const addr = packetAddress(ip);
  if (!net) return { unknown: `"${cidr}" is not a CIDR` };
  if (!addr) return { unknown: `"${ip}" is not an address` };
  return containsIp(net, addr.family, addr.value);
}

const evaluate: { [K in Match['kind']]: (m: Extract<Match, { kind: K }>, ctx: MatchContext) => MatchAnswer } = {
  'src-net': (m, { packet }) => flip(addrIn(m.cidr, packet.src), m.negate),
  'dst-net': (m, { packet }) => flip(addrIn(m.cidr, packet.dst), m.negate),
  'in-iface': (m, { packet }) => flip(ifaceMatches(m.name, packet.inIface), m.negate),
  'out-iface': (m, { packet }) => flip(ifaceMatches(m.name, packet.outIface), m.negate),
  protocol: (m, { packet }) => m.protocol === packet.proto,
  'icmpv6-type': (m, { packet }) => packet.icmp !== undefined && packet.proto === 'ipv6-icmp' && packet.icmp.type === m.type,
  // Only ICMPv6 packets carry a hop limit in a trace; an L4 flow's is not modelled, so a rule needing one cannot match it.
  'hop-limit': (m, { packet }) => packet.icmp !== undefined && packet.icmp.hopLimit === m.value,
  dports: (m, { packet }) =>
    packet.icmp === undefined &&
    packet.proto !== 'ipv6-icmp' &&
    packet.proto !== 'icmp' &&
    m.ports.some((r) => packet.dport >= r.from && packet.dport <= r.to),
  sports: (m, { packet }) =>
    packet.icmp === undefined && packet.proto !== 'ipv6-icmp' && packet.proto !== 'icmp'
      ? packet.sport === undefined
        ? { unknown: 'the packet has no source port' }
        : m.ports.some((r) => packet.sport! >= r.from && packet.sport! <= r.to)
      : false,
  set: (m, { packet, ipsets }) => {
    const set = ipsets.get(m.set);
    if (!set) return { unknown: `ipset ${m.set} is not in the ipset dump` };
    const answer = setMatches(set, packet, m.direction);
    return answer.known ? flip(answer.member, m.negate) : { unknown: answer.why };
  },
  // `-m mark --mark value/mask`: (mark & mask) == value.
  mark: (m, { mark }) => flip((mark & m.mask) >>> 0 === m.value >>> 0, m.negate),
  ctstate: (m, { packet }) => m.states.includes(packet.ctstate),
  // A traced packet opens its flow: it travels the flow's original direction (an answer is never traced).
  ctdir: (m) => m.direction === 'ORIGINAL',
  physdev: (m, { packet }) =>
    (m.in === undefined || ifaceMatches(m.in, packet.physIn)) &&
    (m.out === undefined || ifaceMatches(m.out, packet.physOut)) &&
    (!m.isBridged || packet.physOut !== undefined),
  // The flow's conntrack mark; a traced packet is a new flow's first, whose mark is 0 unless the packet says.
  connmark: (m, { packet }) => flip(((packet.ctmark ?? 0) & m.mask) >>> 0 === m.value >>> 0, m.negate),
  // One packet never exhausts a token bucket: the trace assumes the rate is not exceeded.
  limit: () => true,
};

const not = (negate: boolean | undefined): string => (negate ? '! ' : '');

/** Short words for a match, for "did not match: …" lines. */
export const describe: { [K in Match['kind']]: (m: Extract<Match, { kind: K }>) => string } = {
  'src-net': (m) => `src ${not(m.negate)}${m.cidr}`,
  'dst-net': (m) => `dst ${not(m.negate)}${m.cidr}`,
  'in-iface': (m) => `in ${not(m.negate)}${m.name}`,
  'out-iface': (m) => `out ${not(m.negate)}${m.name}`,
  protocol: (m) => `proto ${m.protocol}`,
  'icmpv6-type': (m) => `icmpv6 type ${m.type}`,
  'hop-limit': (m) => `hop limit ${m.value}`,
  dports: (m) => `dport ${m.ports.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}-${r.to}`)).join(',')}`,
  set: (m) => `${m.direction} ${not(m.negate)}in set ${m.set}`,
  mark: (m) => `mark ${not(m.negate)}0x${m.value.toString(16)}/0x${m.mask.toString(16)}`,
  sports: (m) => `sport ${m.ports.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}-${r.to}`)).join(',')}`,
  ctstate: (m) => `ctstate ${m.states.join(',')}`,
  ctdir: (m) => `ctdir ${m.direction}`,
  physdev: (m) => `physdev${m.in ? ` in ${m.in}` : ''}${m.out ? ` out ${m.out}` : ''}${m.isBridged ? ' bridged' : ''}`,
  connmark: (m) => `connmark ${not(m.negate)}0x${m.value.toString(16)}/0x${m.mask.toString(16)}`,
  limit: (m) => `at most ${m.perSecond}/s (burst ${m.burst})`,
};

export const evaluateMatch = (m: Match, ctx: MatchContext): MatchAnswer =>
  (evaluate[m.kind] as (m: Match, c: MatchContext) => MatchAnswer)(m, ctx);
export const describeMatch = (m: Match): string => (describe[m.kind] as (m: Match) => string)(m);

export type RuleMatch =
  | { readonly result: 'match' }
  | { readonly result: 'no-match'; readonly failed: string }
  | { readonly result: 'unknown'; readonly why: string };

/**
 * A failed match in words, with what a set holds: an ipBlock is "in its cidr set and not in its except
 * set", and `! in set nf4x:…` alone does not say the address was one of the block's 10,000 excepts.
 */
function describeFailed(m: Match, ctx: MatchContext): string {
  const text = describeMatch(m);
  if (m.kind !== 'set') return text;
  const members = ctx.ipsets.get(m.set)?.members;
  if (!members || members.length === 0) return text;
  const what = members.length === 1 ? members[0]! : `${members.length} entries`;
  return `${text} (${m.negate ? 'except ' : ''}${what})`;
}

/** All matches must hold (iptables ANDs them); the first failing one is named. */
export function evaluateMatches(matches: readonly Match[], ctx: MatchContext): RuleMatch {
  let unknown: string | undefined;
  // Indexed: every rule of every traced packet comes here, and the one-shot commands run unoptimised (cli/main.ts).
  for (let i = 0; i < matches.length; i++) {
    const m = matches[i]!;
    const answer = evaluateMatch(m, ctx);
    if (answer === false) return { result: 'no-match', failed: ctx.quiet === true ? '' : describeFailed(m, ctx) };
    if (answer !== true) unknown ??= answer.unknown;
  }
  return unknown === undefined ? { result: 'match' } : { result: 'unknown', why: unknown };
}
