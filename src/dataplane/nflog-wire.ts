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
  /** IANA protocol number (6 tcp, 17 udp, 132 sctp, 1 icmp, 58 icmpv6, …). */
  readonly protocol: number;
  readonly srcPort?: number;
  readonly dstPort?: number;
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

/** The IPv4/IPv6 header (and L4 ports) at the start of a logged packet. */
export function parseIpHeader(p: Buffer, ethertype?: number): IpHeader | undefined {
  if (p.length < 1) return undefined;
  const version = p[0]! >> 4;
  if (version === 4 && (ethertype === undefined || ethertype === 0x0800) && p.length >= 20) {
    const ihl = (p[0]! & 0x0f) * 4;
    const protocol = p[9]!;
    const src = ipFromBytes(p.subarray(12, 16));
    const dst = ipFromBytes(p.subarray(16, 20));
    // Only the first fragment carries the ports.
    const fragOffset = p.readUInt16BE(6) & 0x1fff;
    return { family: 4, src, dst, protocol, ...(fragOffset === 0 ? ports(p, ihl, protocol) : {}) };
  }
  if (version === 6 && (ethertype === undefined || ethertype === 0x86dd) && p.length >= 40) {
    // The fixed header's next header; extension headers are not walked (the protocol is then theirs).
    const protocol = p[6]!;
    return { family: 6, src: ipFromBytes(p.subarray(8, 24)), dst: ipFromBytes(p.subarray(24, 40)), protocol, ...ports(p, 40, protocol) };
  }
  return undefined;
}

function ports(p: Buffer, at: number, protocol: number): { srcPort?: number; dstPort?: number } {
  if (!PORT_PROTOCOLS.has(protocol) || p.length < at + 4) return {};
  return { srcPort: p.readUInt16BE(at), dstPort: p.readUInt16BE(at + 2) };
}
