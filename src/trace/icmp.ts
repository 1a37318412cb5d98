// An ICMP or ICMPv6 packet to trace (`netfence trace --proto icmp|icmpv6 --icmp-type N`): the conntrack
// state the kernel gives its first packet, the hop limit it is sent with, and how it crosses the node.

import type { IpFamily } from '../model/index.js';
import { parseIp } from '../model/address.js';
import { isLocal, packetFor, type NodeLayout, type Packet } from './packet.js';

/**
 * ICMPv6 messages conntrack never tracks (nf_conntrack_proto_icmpv6.c `noct_valid_new`): MLD query,
 * report, done (130–132), RS, RA, NS, NA (133–136) and MLDv2 report (143). They cross FORWARD UNTRACKED.
 */
const UNTRACKED6 = new Set([130, 131, 132, 133, 134, 135, 136, 143]);
/** Types that may open a conntrack entry (`valid_new`): ICMPv6 echo request, node information query. */
const NEW6 = new Set([128, 139]);
/** ICMP (IPv4) types that may open an entry: echo, timestamp, information and address mask requests. */
const NEW4 = new Set([8, 13, 15, 17]);

/**
 * The state a lone first packet of this type has in FORWARD. Anything else (an echo reply, an error with
 * no flow it belongs to, a redirect) is INVALID to conntrack: a trace has no earlier packet to relate it to.
 */
export function icmpCtstate(family: IpFamily, type: number): Packet['ctstate'] {
  if (family === 6) return UNTRACKED6.has(type) ? 'UNTRACKED' : NEW6.has(type) ? 'NEW' : 'INVALID';
  return NEW4.has(type) ? 'NEW' : 'INVALID';
}

/**
 * The hop limit a sender uses: 255 for neighbour discovery and redirects (RFC 4861 §7.1.1 etc.: "The IP
 * Hop Limit field has a value of 255"), 1 for MLD (RFC 2710 §3, RFC 3810 §5: "sent with an IP Hop Limit
 * of 1"), else Linux's default 64.
 */
export function defaultHopLimit(type: number): number {
  if (type >= 133 && type <= 137) return 255;
  if ([130, 131, 132, 143].includes(type)) return 1;
  return 64;
}

export interface IcmpSpec {
  readonly src: string;
  readonly dst: string;
  readonly family: IpFamily;
  readonly type: number;
  /** As sent; default defaultHopLimit(type). IPv6 only (IPv4's TTL is matched by no netfence rule). */
  readonly hopLimit?: number;
  /** Addressed to this node itself: delivered through INPUT, no out interface, hop limit as sent. */
  readonly toNode?: boolean;
}

const isMulticast = (ip: string): boolean => {
  const addr = parseIp(ip);
  return addr !== undefined && addr.family === 6 && addr.value >> 120n === 0xffn;
};

/** fe80::/10 or `::` (a DAD probe's source): never routed, so such a packet in FORWARD was bridged. */
const isLinkSource = (ip: string): boolean => {
  const addr = parseIp(ip);
  return addr !== undefined && addr.family === 6 && (addr.value >> 118n === 0x3fan || addr.value === 0n);
};

/**
 * The packet as netfence's chains see it. From a local pod (or a link-local or unspecified source) to
 * another local pod, or to a multicast group (ND's solicited-node address is no pod's), it is bridged: in
 * and out on the bridge, hop limit as sent. To this node (`toNode`) it is delivered locally through INPUT,
 * also with the hop limit as sent (the kernel decrements only what it forwards). Anything else is routed,
 * and a routed packet meets FORWARD with its hop limit already one lower (measured: an echo sent with 64
 * arrives with 63), which is why `--hl-eq 255` never matches it.
 */
export function icmpPacketFor(spec: IcmpSpec, layout: NodeLayout): Packet {
  const sent = spec.hopLimit ?? defaultHopLimit(spec.type);
  const bridged =
    !spec.toNode && (isLocal(spec.src, layout) || isLinkSource(spec.src)) && (isLocal(spec.dst, layout) || isMulticast(spec.dst));
  const base = packetFor({ src: spec.src, dst: spec.dst, proto: 'tcp', dport: 0 }, layout);
  const inIface = bridged || (spec.toNode && isLinkSource(spec.src)) ? layout.bridge : base.inIface;
  return {
    ...base,
    proto: spec.family === 6 ? 'ipv6-icmp' : 'icmp',
    inIface,
    outIface: spec.toNode ? '' : bridged ? layout.bridge : base.outIface,
    icmp: { type: spec.type, hopLimit: bridged || spec.toNode ? sent : Math.max(sent - 1, 0) },
    ctstate: icmpCtstate(spec.family, spec.type),
  };
}
