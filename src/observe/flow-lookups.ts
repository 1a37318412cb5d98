// Which ClusterNetworkPolicy `domainNames` rules a dropped packet missed only because its destination was not
// learned for its source pod: the packet is traced through the source pod's egress chain as last programmed
// (learned sets hold nothing there, as for an address no lookup returned), and the tracer's own reading of a
// missed `domainNames` rule (trace/learned.ts afterLookup, what `trace` and `why` print as "would be allowed …
// after x/a looks up …") names them. Only rules above the drop count: the walk stops at the verdict.

import type { NflogPacket } from '../dataplane/nflog.js';
import type { DesiredState, FamilyState, MatchProtocol } from '../model/index.js';
import { icmpCtstate, rulesetOfDesired, tracePacket, type AfterLookup, type Packet } from '../trace/index.js';

const PROTOCOLS: Readonly<Record<number, MatchProtocol | 'icmp'>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'ipv6-icmp', 132: 'sctp' };

/**
 * A logged packet got past the chain's ESTABLISHED/RELATED accept and INVALID drop (workload-chains.ts) to its
 * log rule, so it opened a flow, or is one conntrack never tracks (neighbour discovery, MLD: trace/icmp.ts).
 */
function ctstateOf(ip: NonNullable<NflogPacket['ip']>): Packet['ctstate'] {
  return ip.icmp && icmpCtstate(ip.family, ip.icmp.type) === 'UNTRACKED' ? 'UNTRACKED' : 'NEW';
}

/** The tracer's input per programmed state: built on the first drop that needs it, dropped with the state. */
const rulesets = new WeakMap<FamilyState, ReturnType<typeof rulesetOfDesired>>();

/**
 * The `domainNames` rules above the drop whose every other match held for `pod`'s egress packet (empty: none,
 * or the pod has no egress chain here, or the programmed rules do not drop the packet). `toNode`: the packet
 * was going to this node itself (INPUT: no output interface), judged by the pod's chain to its node.
 */
export function missedLookups(
  desired: DesiredState | undefined,
  chainPrefix: string,
  pod: string,
  ip: NonNullable<NflogPacket['ip']>,
  toNode = false,
): AfterLookup[] {
  const proto = PROTOCOLS[ip.protocol];
  // No `domainNames` rule learns for this pod (the compiler's plan lists one set per rule, pod and family): no trace.
  if (!desired?.dns?.sets.some((s) => s.pod === pod && s.family === ip.family) || proto === undefined) return [];
  const state = ip.family === 6 ? desired.v6 : desired.v4;
  const chain = state.chains.find((c) =>
    toNode
      ? c.role.kind === 'host-workload' && c.role.pod === pod
      : c.role.kind === 'workload' && c.role.direction === 'egress' && c.role.pod === pod,
  );
  if (!chain) return [];
  let rules = rulesets.get(state);
  if (!rules) rulesets.set(state, (rules = rulesetOfDesired(state)));
  const packet: Packet = {
    src: ip.src,
    dst: ip.dst,
    proto,
    dport: ip.dstPort ?? 0,
    ...(ip.srcPort !== undefined ? { sport: ip.srcPort } : {}),
    // The type and hop limit the kernel matched (`--icmpv6-type`, `--hl-eq`), as `trace --icmp-type` models them.
    ...(ip.icmp ? { icmp: { type: ip.icmp.type, hopLimit: ip.icmp.hopLimit } } : {}),
    inIface: '',
    outIface: '',
    ctstate: ctstateOf(ip),
  };
  const result = tracePacket(rules.ruleset, rules.ipsets, packet, { chainPrefix, startChain: chain.name });
  // The tracer names each rule once, and none an audited object's pass judged (it opens nothing).
  return result.verdict === 'DROP' ? [...(result.afterLookup ?? [])] : [];
}
