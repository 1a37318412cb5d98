// nfnetlink_queue on the wire (include/uapi/linux/netfilter/nfnetlink_queue.h), as pure functions over
// bytes: the configuration requests that bind a queue and set how it copies packets, the packet messages
// the kernel sends, and the verdicts that release them. No socket here (dns-socket.ts has it), so the same
// code reads kernel messages and byte fixtures.

import { attr, be32, parseAttributes } from './netlink-attributes.js';

/** NFNL_SUBSYS_QUEUE (3) << 8 | NFQNL_MSG_*. */
export const NFQNL_MSG_PACKET = (3 << 8) | 0;
export const NFQNL_MSG_VERDICT = (3 << 8) | 1;
export const NFQNL_MSG_CONFIG = (3 << 8) | 2;

// enum nfqnl_attr_config
const NFQA_CFG_CMD = 1;
const NFQA_CFG_PARAMS = 2;
const NFQA_CFG_QUEUE_MAXLEN = 3;
const NFQA_CFG_MASK = 4;
const NFQA_CFG_FLAGS = 5;
// enum nfqnl_msg_config_cmds
const NFQNL_CFG_CMD_BIND = 1;
const NFQNL_CFG_CMD_UNBIND = 2;
const NFQNL_COPY_PACKET = 2;
/** Packets pass (are accepted) instead of being dropped when the queue is full. */
const NFQA_CFG_F_FAIL_OPEN = 1 << 0;
/** Each packet message carries its conntrack entry (NFQA_CT) and ctinfo (NFQA_CT_INFO). */
const NFQA_CFG_F_CONNTRACK = 1 << 1;

// enum nfqnl_attr_type
const NFQA_PACKET_HDR = 1;
const NFQA_VERDICT_HDR = 2;
const NFQA_MARK = 3;
const NFQA_PAYLOAD = 10;
const NFQA_CT_INFO = 12;
const NFQA_CAP_LEN = 13;

/** include/uapi/linux/netfilter.h */
const NF_DROP = 0;
const NF_ACCEPT = 1;
const AF_UNSPEC = 0;

/**
 * enum ip_conntrack_info (nf_conntrack_common.h): IP_CT_ESTABLISHED (0) + IP_CT_IS_REPLY (3), a reply of an
 * established flow, the direction a DNS answer to the pod's own query takes.
 */
export const IP_CT_ESTABLISHED_REPLY = 3;

/** struct nfgenmsg: family, version (NFNETLINK_V0), resource id (the queue number, big-endian). */
function nfgenmsg(queue: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt8(AF_UNSPEC, 0);
  b.writeUInt16BE(queue, 2);
  return b;
}

/** struct nfqnl_msg_config_cmd: u8 command, u8 pad, be16 pf (only the obsolete PF_(UN)BIND read it). */
const command = (queue: number, cmd: number): Buffer => Buffer.concat([nfgenmsg(queue), attr(NFQA_CFG_CMD, Buffer.from([cmd, 0, 0, 0]))]);

/** NFQNL_CFG_CMD_BIND: this socket takes `queue`'s packets (EBUSY if another socket holds it). */
export const bindRequest = (queue: number): Buffer => command(queue, NFQNL_CFG_CMD_BIND);

export const unbindRequest = (queue: number): Buffer => command(queue, NFQNL_CFG_CMD_UNBIND);

export interface QueueConfig {
  /** Bytes of each packet copied to us (the DNS message needs the whole packet; headers alone need ~128). */
  readonly copyRange: number;
  /** Packets the kernel holds for us at most; past that they fail open (accepted) or are dropped. */
  readonly maxLen: number;
  /** Accept packets when the queue is full rather than drop them (NFQA_CFG_F_FAIL_OPEN). */
  readonly failOpen: boolean;
  /** Report each packet's conntrack state (NFQA_CFG_F_CONNTRACK). */
  readonly conntrack: boolean;
}

/** Copy mode, queue length and flags in one NFQNL_MSG_CONFIG (the flags apply under their mask only). */
export function configRequest(queue: number, c: QueueConfig): Buffer {
  // struct nfqnl_msg_config_params is packed: be32 copy_range, u8 copy_mode.
  const params = Buffer.alloc(5);
  params.writeUInt32BE(c.copyRange, 0);
  params.writeUInt8(NFQNL_COPY_PACKET, 4);
  const flags = (c.failOpen ? NFQA_CFG_F_FAIL_OPEN : 0) | (c.conntrack ? NFQA_CFG_F_CONNTRACK : 0);
  return Buffer.concat([
    nfgenmsg(queue),
    attr(NFQA_CFG_PARAMS, params),
    attr(NFQA_CFG_QUEUE_MAXLEN, be32(c.maxLen)),
    attr(NFQA_CFG_MASK, be32(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_CONNTRACK)),
    attr(NFQA_CFG_FLAGS, be32(flags)),
  ]);
}

/** NFQNL_MSG_VERDICT for one packet: struct nfqnl_msg_verdict_hdr { be32 verdict; be32 id; }. */
export function verdictRequest(queue: number, packetId: number, verdict: 'accept' | 'drop'): Buffer {
  const hdr = Buffer.alloc(8);
  hdr.writeUInt32BE(verdict === 'accept' ? NF_ACCEPT : NF_DROP, 0);
  hdr.writeUInt32BE(packetId >>> 0, 4);
  return Buffer.concat([nfgenmsg(queue), attr(NFQA_VERDICT_HDR, hdr)]);
}

/** One queued packet, as far as netfence reads it. */
export interface QueuedPacket {
  readonly queue: number;
  /** The id a verdict names. */
  readonly id: number;
  /** Ethertype (0x0800 IPv4, 0x86dd IPv6) of the payload. */
  readonly hwProtocol: number;
  /** The netfilter hook it was queued at (0 PRE_ROUTING … 4 POST_ROUTING). */
  readonly hook: number;
  /** The packet from its network header on, `copyRange` bytes at most. */
  readonly payload: Buffer;
  /** The packet's length before the copy was cut, when it was cut (NFQA_CAP_LEN). */
  readonly capturedLength?: number;
  readonly mark?: number;
  /** enum ip_conntrack_info, when the queue reports conntrack and the packet has an entry. */
  readonly ctinfo?: number;
}

/** An NFQNL_MSG_PACKET body → the packet; undefined for any other message or one without its header. */
export function parsePacketMessage(type: number, body: Buffer): QueuedPacket | undefined {
  if (type !== NFQNL_MSG_PACKET || body.length < 4) return undefined;
  const attrs = parseAttributes(body, 4);
  const hdr = attrs.get(NFQA_PACKET_HDR);
  // struct nfqnl_msg_packet_hdr is packed: be32 packet_id, be16 hw_protocol, u8 hook.
  if (!hdr || hdr.length < 7) return undefined;
  const be32At = (t: number): number | undefined => {
    const v = attrs.get(t);
    return v && v.length >= 4 ? v.readUInt32BE(0) : undefined;
  };
  const capLen = be32At(NFQA_CAP_LEN);
  const mark = be32At(NFQA_MARK);
  const ctinfo = be32At(NFQA_CT_INFO);
  return {
    queue: body.readUInt16BE(2),
    id: hdr.readUInt32BE(0),
    hwProtocol: hdr.readUInt16BE(4),
    hook: hdr.readUInt8(6),
    payload: attrs.get(NFQA_PAYLOAD) ?? Buffer.alloc(0),
    ...(capLen !== undefined ? { capturedLength: capLen } : {}),
    ...(mark !== undefined ? { mark } : {}),
    ...(ctinfo !== undefined ? { ctinfo } : {}),
  };
}
