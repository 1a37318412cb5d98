// ctnetlink messages as bytes: the dump request, the entries it returns, and the mark update. Pure
// (Buffers in, values out) so the byte layout is unit-tested without a kernel; ctnetlink.ts sends them.
//
// Layout (include/uapi/linux/netfilter/nfnetlink*.h): message type = NFNL_SUBSYS_CTNETLINK << 8 | msg,
// payload = struct nfgenmsg { u8 family; u8 version; be16 res_id } then attributes. Every ctnetlink
// attribute value is in network byte order; nested attributes carry NLA_F_NESTED on the way out of the
// kernel, which the parser strips.

import { ipFromBytes, ipToBytes, type IpFamily } from '../model/index.js';
import { attr, be16, be32, nested, parseAttributes } from './netlink-attributes.js';

const NFNL_SUBSYS_CTNETLINK = 1;
export const IPCTNL_MSG_CT_NEW = (NFNL_SUBSYS_CTNETLINK << 8) | 0;
export const IPCTNL_MSG_CT_GET = (NFNL_SUBSYS_CTNETLINK << 8) | 1;

const AF_INET = 2;
const AF_INET6 = 10;

// enum ctattr_type
const CTA_TUPLE_ORIG = 1;
const CTA_TUPLE_REPLY = 2;
const CTA_MARK = 8;
const CTA_ZONE = 18;
const CTA_MARK_MASK = 21;
// enum ctattr_tuple / ctattr_ip / ctattr_l4proto
const CTA_TUPLE_IP = 1;
const CTA_TUPLE_PROTO = 2;
const CTA_IP_V4_SRC = 1;
const CTA_IP_V4_DST = 2;
const CTA_IP_V6_SRC = 3;
const CTA_IP_V6_DST = 4;
const CTA_PROTO_NUM = 1;
const CTA_PROTO_SRC_PORT = 2;
const CTA_PROTO_DST_PORT = 3;

/** One direction of a conntrack entry. Ports only for protocols that have them (TCP, UDP, SCTP, …). */
export interface CtTuple {
  readonly src: string;
  readonly dst: string;
  /** IP protocol number: 6 TCP, 17 UDP, 132 SCTP, 1 ICMP, … */
  readonly proto: number;
  readonly sport?: number;
  readonly dport?: number;
}

/** A conntrack entry: the initiator's tuple, the reply tuple (post-NAT addresses), its mark and zone. */
export interface CtEntry {
  readonly family: IpFamily;
  readonly orig: CtTuple;
  readonly reply: CtTuple;
  readonly mark: number;
  readonly zone: number;
}

/** Sets `(mark & ~mask) ^ value` on the entry whose original tuple (and zone) is `entry`'s. */
export interface MarkUpdate {
  readonly family: IpFamily;
  readonly orig: CtTuple;
  readonly zone: number;
  readonly value: number;
  readonly mask: number;
}

const familyByte = (family: IpFamily): number => (family === 6 ? AF_INET6 : AF_INET);

function nfgenmsg(family: IpFamily): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt8(familyByte(family), 0);
  return b; // version 0 (NFNETLINK_V0), res_id 0
}

/** The payload of a CT_GET dump request (flags NLM_F_DUMP) for one family. */
export const dumpRequest = (family: IpFamily): Buffer => nfgenmsg(family);

// ---- attributes ---------------------------------------------------------------------------------

function tupleAttr(type: number, family: IpFamily, t: CtTuple): Buffer {
  const [srcType, dstType] = family === 6 ? [CTA_IP_V6_SRC, CTA_IP_V6_DST] : [CTA_IP_V4_SRC, CTA_IP_V4_DST];
  const proto = [attr(CTA_PROTO_NUM, Buffer.from([t.proto]))];
  if (t.sport !== undefined) proto.push(attr(CTA_PROTO_SRC_PORT, be16(t.sport)));
  if (t.dport !== undefined) proto.push(attr(CTA_PROTO_DST_PORT, be16(t.dport)));
  return nested(type, [
    nested(CTA_TUPLE_IP, [attr(srcType, ipToBytes(t.src)), attr(dstType, ipToBytes(t.dst))]),
    nested(CTA_TUPLE_PROTO, proto),
  ]);
}

function parseTuple(buf: Buffer | undefined): CtTuple | undefined {
  if (!buf) return undefined;
  const top = parseAttributes(buf);
  const ip = parseAttributes(top.get(CTA_TUPLE_IP) ?? Buffer.alloc(0));
  const proto = parseAttributes(top.get(CTA_TUPLE_PROTO) ?? Buffer.alloc(0));
  const src = ip.get(CTA_IP_V4_SRC) ?? ip.get(CTA_IP_V6_SRC);
  const dst = ip.get(CTA_IP_V4_DST) ?? ip.get(CTA_IP_V6_DST);
  const num = proto.get(CTA_PROTO_NUM);
  if (!src || !dst || !num || num.length < 1) return undefined;
  const sport = proto.get(CTA_PROTO_SRC_PORT);
  const dport = proto.get(CTA_PROTO_DST_PORT);
  return {
    src: ipFromBytes(src),
    dst: ipFromBytes(dst),
    proto: num.readUInt8(0),
    ...(sport && sport.length >= 2 ? { sport: sport.readUInt16BE(0) } : {}),
    ...(dport && dport.length >= 2 ? { dport: dport.readUInt16BE(0) } : {}),
  };
}

/** One CT_NEW message of a dump (its payload, nfgenmsg included) → the entry, or undefined if malformed. */
export function parseEntry(payload: Buffer): CtEntry | undefined {
  if (payload.length < 4) return undefined;
  const family: IpFamily = payload.readUInt8(0) === AF_INET6 ? 6 : 4;
  const attrs = parseAttributes(payload.subarray(4));
  const orig = parseTuple(attrs.get(CTA_TUPLE_ORIG));
  const reply = parseTuple(attrs.get(CTA_TUPLE_REPLY));
  if (!orig || !reply) return undefined;
  const mark = attrs.get(CTA_MARK);
  const zone = attrs.get(CTA_ZONE);
  return {
    family,
    orig,
    reply,
    mark: mark && mark.length >= 4 ? mark.readUInt32BE(0) : 0,
    zone: zone && zone.length >= 2 ? zone.readUInt16BE(0) : 0,
  };
}

/**
 * The payload of a CT_NEW update (flags NLM_F_REQUEST | NLM_F_ACK, no NLM_F_CREATE: an existing entry
 * or ENOENT). The kernel computes `(ct->mark & ~CTA_MARK_MASK) ^ CTA_MARK` (ctnetlink_change_mark), so
 * one bit is set or cleared without touching the marks other tools keep on the same flow.
 */
export function markUpdateRequest(u: MarkUpdate): Buffer {
  return Buffer.concat([
    nfgenmsg(u.family),
    tupleAttr(CTA_TUPLE_ORIG, u.family, u.orig),
    ...(u.zone !== 0 ? [attr(CTA_ZONE, be16(u.zone))] : []),
    attr(CTA_MARK, be32(u.value)),
    attr(CTA_MARK_MASK, be32(u.mask)),
  ]);
}

/** nlmsgerr.error of an NLMSG_ERROR payload: 0 for an ACK, else a positive errno. */
export const errnoOf = (payload: Buffer): number => (payload.length >= 4 ? -payload.readInt32LE(0) : 0);

/** An entry as the netns worker sends it: a flat array, a third of the JSON of the object form. */
export type WireEntry = readonly [IpFamily, string, string, number, number, number, string, string, number, number, number, number];

export function entryToWire(e: CtEntry): WireEntry {
  const { orig: o, reply: r } = e;
  return [e.family, o.src, o.dst, o.proto, o.sport ?? -1, o.dport ?? -1, r.src, r.dst, r.sport ?? -1, r.dport ?? -1, e.mark, e.zone];
}

export function entryFromWire(w: WireEntry): CtEntry {
  const [family, oSrc, oDst, proto, oSport, oDport, rSrc, rDst, rSport, rDport, mark, zone] = w;
  const ports = (sport: number, dport: number) => ({ ...(sport >= 0 ? { sport } : {}), ...(dport >= 0 ? { dport } : {}) });
  return {
    family,
    orig: { src: oSrc, dst: oDst, proto, ...ports(oSport, oDport) },
    reply: { src: rSrc, dst: rDst, proto, ...ports(rSport, rDport) },
    mark,
    zone,
  };
}
