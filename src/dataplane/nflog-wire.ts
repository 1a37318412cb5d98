// nfnetlink_log on the wire (linux/netfilter/nfnetlink_log.h), as pure functions over bytes: the
// configuration requests that bind a log group, and the packet messages the kernel sends back. No
// socket here, so the same code parses real kernel messages in the daemon and byte fixtures in tests.

import { ipFromBytes } from '../model/index.js';
import { attr, be32, parseAttributes } from './netlink-attributes.js';

/** NFNL_SUBSYS_ULOG << 8 | NFULNL_MSG_*: the netlink message types of nfnetlink_log. */
export const NFULNL_MSG_PACKET = (4 << 8) | 0;
export const NFULNL_MSG_CONFIG = (4 << 8) | 1;

const NFULA_CFG_CMD = 1;
const NFULA_CFG_MODE = 2;
const NFULA_CFG_NLBUFSIZ = 3;
const NFULA_CFG_TIMEOUT = 4;
const NFULA_CFG_QTHRESH = 5;
const NFULNL_CFG_CMD_BIND = 1;
const NFULNL_CFG_CMD_UNBIND = 2;
const NFULNL_COPY_PACKET = 2;

const NFULA_PACKET_HDR = 1;
const NFULA_TIMESTAMP = 3;
const NFULA_IFINDEX_INDEV = 4;
const NFULA_IFINDEX_OUTDEV = 5;
const NFULA_PAYLOAD = 9;
const NFULA_PREFIX = 10;
const AF_UNSPEC = 0;

/** struct nfgenmsg: family, version (NFNETLINK_V0), resource id (the log group, big-endian). */
function nfgenmsg(family: number, group: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt8(family, 0);
  b.writeUInt8(0, 1);
  b.writeUInt16BE(group, 2);
  return b;
}

/** NFULNL_CFG_CMD_BIND for `group`: from then on the kernel unicasts that group's packets to this socket. */
export const bindRequest = (group: number): Buffer =>
  Buffer.concat([nfgenmsg(AF_UNSPEC, group), attr(NFULA_CFG_CMD, Buffer.from([NFULNL_CFG_CMD_BIND]))]);

export const unbindRequest = (group: number): Buffer =>
  Buffer.concat([nfgenmsg(AF_UNSPEC, group), attr(NFULA_CFG_CMD, Buffer.from([NFULNL_CFG_CMD_UNBIND]))]);

/**
 * Copy `copyRange` bytes of each packet (headers are all we read), send every packet at once (queue
 * threshold 1, no timeout) so a denied probe is logged within milliseconds, in buffers of `bufSize`.
 */
export function modeRequest(group: number, copyRange: number): Buffer {
  // struct nfulnl_msg_config_mode is packed: be32 copy_range, u8 copy_mode, u8 pad.
  const mode = Buffer.alloc(6);
  mode.writeUInt32BE(copyRange, 0);
  mode.writeUInt8(NFULNL_COPY_PACKET, 4);
  return Buffer.concat([
    nfgenmsg(AF_UNSPEC, group),
    attr(NFULA_CFG_MODE, mode),
    attr(NFULA_CFG_QTHRESH, be32(1)),
    attr(NFULA_CFG_TIMEOUT, be32(0)),
    attr(NFULA_CFG_NLBUFSIZ, be32(8192)),
  ]);
}

/** One logged packet, as far as netfence reads it. */
export interface NflogPacket {
  readonly group: number;
  readonly prefix: string;
  /** Milliseconds since the epoch: the kernel's timestamp when it sent one, else when we read it. */
  readonly time: number;
  readonly inIfindex?: number;
  readonly outIfindex?: number;
  readonly ip?: IpHeader;
}

export interface IpHeader {
  readonly family: 4 | 6;
  readonly src: string;
  readonly dst: string;
  /** IANA protocol number (6 tcp, 17 udp, 132 sctp, 1 icmp, 58 icmpv6, …); IPv6: after its extension headers. */
  readonly protocol: number;
  readonly srcPort?: number;
  readonly dstPort?: number;
  /** ICMP (protocol 1 on IPv4) and ICMPv6 (58 on IPv6) whose header the payload holds. */
  readonly icmp?: IcmpHeader;
}

/** The start of an ICMP or ICMPv6 message (RFC 792; RFC 4443 §2.1), and what the trace needs of its IP header. */
export interface IcmpHeader {
  readonly type: number;
  readonly code: number;
  /** Echo request and reply only: the identifier, which conntrack keys the flow on as it would a port. */
  readonly id?: number;
  /** The hop limit (IPv4: TTL) the packet had where it was logged: what `--hl-eq` matched. */
  readonly hopLimit: number;
}

/** An NFULNL_MSG_PACKET body → the packet; undefined for any other message. */
export function parseNflogMessage(type: number, body: Buffer, now: () => number = Date.now): NflogPacket | undefined {
  if (type !== NFULNL_MSG_PACKET || body.length < 4) return undefined;
  const group = body.readUInt16BE(2);
  const attrs = parseAttributes(body, 4);
  const prefixBytes = attrs.get(NFULA_PREFIX);
  const prefix = prefixBytes ? prefixBytes.toString('latin1').replace(/\0.*$/s, '') : '';
  const ts = attrs.get(NFULA_TIMESTAMP);
  // struct nfulnl_msg_packet_timestamp: be64 seconds, be64 microseconds.
  const time = ts && ts.length >= 16 ? Number(ts.readBigUInt64BE(0)) * 1000 + Math.floor(Number(ts.readBigUInt64BE(8)) / 1000) : now();
  const inDev = attrs.get(NFULA_IFINDEX_INDEV);
  const outDev = attrs.get(NFULA_IFINDEX_OUTDEV);
  const hdr = attrs.get(NFULA_PACKET_HDR);
  const payload = attrs.get(NFULA_PAYLOAD);
  // NFULA_PACKET_HDR's hw_protocol (big-endian ethertype) says which header the payload starts with.
  const ethertype = hdr && hdr.length >= 2 ? hdr.readUInt16BE(0) : undefined;
  const ip = payload ? parseIpHeader(payload, ethertype) : undefined;
  return {
    group,
    prefix,
    time,
    ...(inDev && inDev.length >= 4 ? { inIfindex: inDev.readUInt32BE(0) } : {}),
    ...(outDev && outDev.length >= 4 ? { outIfindex: outDev.readUInt32BE(0) } : {}),
    ...(ip ? { ip } : {}),
  };
}

/** The logged packet itself (from its network header on, `copyRange` bytes at most), for a reader that needs more than its header. */
export function nflogPayload(type: number, body: Buffer): Buffer | undefined {
  if (type !== NFULNL_MSG_PACKET || body.length < 4) return undefined;
  return parseAttributes(body, 4).get(NFULA_PAYLOAD);
}

const PORT_PROTOCOLS = new Set([6, 17, 132, 136]); // tcp, udp, sctp, udplite: ports are the first 4 bytes
/** Each family's ICMP and its echo request and reply, whose bytes 4-5 are the identifier (RFC 792; RFC 4443 §4.1, §4.2). */
const ICMP4 = { protocol: 1, echo: new Set([8, 0]) };
const ICMP6 = { protocol: 58, echo: new Set([128, 129]) };

/**
 * The IPv4/IPv6 header at the start of a logged packet, with the L4 ports or the ICMP type and code when the
 * copy holds them. The reader copies 128 bytes (nflog.ts), which holds an IPv4 header with the most options
 * (60 bytes) or an IPv6 one with 80 bytes of extension headers, plus the 8 bytes of either: a shorter copy
 * gives the protocol alone, never a field read past its end.
 */
export function parseIpHeader(p: Buffer, ethertype?: number): IpHeader | undefined {
  if (p.length < 1) return undefined;
  const version = p[0]! >> 4;
  if (version === 4 && (ethertype === undefined || ethertype === 0x0800) && p.length >= 20) {
    const ihl = (p[0]! & 0x0f) * 4;
    const protocol = p[9]!;
    const src = ipFromBytes(p.subarray(12, 16));
    const dst = ipFromBytes(p.subarray(16, 20));
    // Only the first fragment carries the ports (or the ICMP header).
    const fragOffset = p.readUInt16BE(6) & 0x1fff;
    const l4 = fragOffset === 0 ? upperHeader(p, ihl, protocol, ICMP4, p[8]!) : {};
    return { family: 4, src, dst, protocol, ...l4 };
  }
  if (version === 6 && (ethertype === undefined || ethertype === 0x86dd) && p.length >= 40) {
    const { protocol, at } = walkExtensionHeaders(p);
    return {
      family: 6,
      src: ipFromBytes(p.subarray(8, 24)),
      dst: ipFromBytes(p.subarray(24, 40)),
      protocol,
      ...upperHeader(p, at, protocol, ICMP6, p[7]!),
    };
  }
  return undefined;
}

/** Hop-by-hop, routing and destination options: length in 8-byte units past the first 8 (RFC 8200 §4.3-4.6). */
const EXT_8 = new Set([0, 43, 60]);
const FRAGMENT = 44;
/** Authentication header: its length is in 4-byte units past the first 8 (RFC 4302 §2.2). */
const AUTH = 51;

/**
 * The protocol after the IPv6 extension headers, as ip6tables' `-p` judges it (ipv6_find_hdr): an MLD report
 * behind its hop-by-hop router alert is ICMPv6. `at` is where its header starts; undefined when the copy
 * ends inside the headers or the packet is a later fragment (no upper header in it). A header cut short
 * leaves the last next-header read, as the fixed header's alone was before this walk.
 */
function walkExtensionHeaders(p: Buffer): { protocol: number; at: number | undefined } {
  let next = p[6]!;
  let at = 40;
  while (EXT_8.has(next) || next === FRAGMENT || next === AUTH) {
    if (p.length < at + 8) return { protocol: next, at: undefined };
    const following = p[at]!;
    if (next === FRAGMENT) {
      // A fragment offset other than 0: the upper header is in the first fragment, not this one.
      if (p.readUInt16BE(at + 2) >> 3 !== 0) return { protocol: following, at: undefined };
      at += 8;
    } else at += next === AUTH ? (p[at + 1]! + 2) * 4 : (p[at + 1]! + 1) * 8;
    next = following;
  }
  return { protocol: next, at };
}

function upperHeader(
  p: Buffer,
  at: number | undefined,
  protocol: number,
  icmp: typeof ICMP4,
  hopLimit: number,
): { srcPort?: number; dstPort?: number; icmp?: IcmpHeader } {
  if (at === undefined) return {};
  if (PORT_PROTOCOLS.has(protocol)) return p.length < at + 4 ? {} : { srcPort: p.readUInt16BE(at), dstPort: p.readUInt16BE(at + 2) };
  // ICMP on IPv4, ICMPv6 on IPv6: the other family's number there is no ICMP the kernel would parse as such.
  if (protocol !== icmp.protocol || p.length < at + 2) return {};
  const type = p[at]!;
  const id = icmp.echo.has(type) && p.length >= at + 6 ? { id: p.readUInt16BE(at + 4) } : {};
  return { icmp: { type, code: p[at + 1]!, ...id, hopLimit } };
}
