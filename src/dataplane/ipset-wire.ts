// The kernel's ipset netlink protocol as bytes (include/uapi/linux/netfilter/ipset/ip_set.h; nfnetlink
// subsystem NFNL_SUBSYS_IPSET = 6): the protocol query and member add/del requests, and the kernel's replies.
// Pure (values in, Buffers out and back) so the layout is unit-tested against messages captured from the real
// `ipset` tool (test/unit/dataplane/fixtures/ipset-netlink.json, scripts/capture-ipset-netlink.ts).
//
// An add/del request carries, like `ipset restore`'s batches, many members of one set: IPSET_ATTR_ADT holds one
// nested IPSET_ATTR_DATA per member, each with its own line number (IPSET_ATTR_LINENO). The kernel applies them
// in order and stops at the first it refuses; its error reply echoes the request with the top-level
// IPSET_ATTR_LINENO rewritten to the refused member's number (ip_set_core.c call_ad), so a failure names the
// member. Without NLM_F_EXCL the kernel sets IPSET_FLAG_EXIST: re-adding a present member or deleting an
// absent one is no error (`ipset -exist`).

import { ipToBytes, parseIp } from '../model/index.js';
import { attr, be32, nested, NLA_F_NESTED, NLA_F_NET_BYTEORDER, parseAttributes } from './netlink-attributes.js';

const NFNL_SUBSYS_IPSET = 6;
/** The protocol netfence speaks: 7 (the kernel's since 5.x); the kernel takes 6 and up for every command we send. */
export const IPSET_PROTOCOL = 7;
export const IPSET_PROTOCOL_MIN = 6;

// enum ipset_cmd
const IPSET_CMD_PROTOCOL = 1;
const IPSET_CMD_ADD = 9;
const IPSET_CMD_DEL = 10;
export const IPSET_MSG_PROTOCOL = (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_PROTOCOL;
const MSG_OF = { add: (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_ADD, del: (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_DEL } as const;

// Command-level attributes
const IPSET_ATTR_PROTOCOL = 1;
const IPSET_ATTR_SETNAME = 2;
const IPSET_ATTR_DATA = 7;
const IPSET_ATTR_ADT = 8;
const IPSET_ATTR_LINENO = 9;
const IPSET_ATTR_PROTOCOL_MIN = 10;
// CADT attributes (inside IPSET_ATTR_DATA)
const IPSET_ATTR_IP = 1;
const IPSET_ATTR_CIDR = 3;
const IPSET_ATTR_PORT = 4;
const IPSET_ATTR_TIMEOUT = 6;
const IPSET_ATTR_PROTO = 7;
const IPSET_ATTR_CADT_FLAGS = 8;
/** enum ipset_cadt_flags: a hash:net entry that matches nothing (`ipset add S 10.0.0.0/24 nomatch`). */
const IPSET_FLAG_NOMATCH = 1 << 2;
/** IPSET_ATTR_CADT_MAX (16) + 10: a member's comment, for sets created with `comment`. */
const IPSET_ATTR_COMMENT = 26;
/** The kernel's IPSET_MAX_COMMENT_SIZE (bytes before the NUL). */
const MAX_COMMENT_BYTES = 255;
// Inside IPSET_ATTR_IP
const IPSET_ATTR_IPADDR_IPV4 = 1;
const IPSET_ATTR_IPADDR_IPV6 = 2;

export const NLMSG_ERROR = 2;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const AF_INET = 2;
/** The set name's limit: IPSET_MAXNAMELEN (32) with the NUL. */
const MAX_SET_NAME = 31;
/**
 * Bytes of members per request. IPSET_ATTR_ADT's length is a u16, so one request holds under 64 KiB of members;
 * 16 KiB (about 680 IPv4 or 300 IPv6 ip,port members) keeps each well under that and an error reply (which
 * echoes the request) small.
 */
const MAX_ADT_BYTES = 16 * 1024;

const PROTOCOL_NUMBER: Readonly<Record<string, number>> = { tcp: 6, udp: 17, sctp: 132 };

export type MemberOp = 'add' | 'del';

/**
 * A member with its own lifetime and comment (`add S 10.0.0.1 timeout 60 comment "…"`), for sets created with
 * `timeout` and `comment`: the learned sets of egress by DNS name.
 */
export interface TimedMember {
  readonly member: string;
  /** Seconds until the kernel removes the member; adding it again restarts the count. */
  readonly timeout: number;
  readonly comment?: string;
}

/** A member as `ipset restore` writes it, or one with its own timeout and comment. */
export type SetMember = string | TimedMember;

/** The member's element text (what an error names and a delete sends). */
export const memberText = (m: SetMember): string => (typeof m === 'string' ? m : m.member);

export class IpsetMemberSyntaxError extends Error {
  override readonly name = 'IpsetMemberSyntaxError';
}

// ---- attributes -----------------------------------------------------------------------------------------

const u8 = (n: number): Buffer => Buffer.from([n]);
const nulTerminated = (s: string): Buffer => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]);

/** struct nfgenmsg: AF_INET (what libipset sends for every set; the kernel goes by the set), version 0, res_id 0. */
const NFGENMSG = Buffer.from([AF_INET, 0, 0, 0]);

/** One netlink message: struct nlmsghdr (host order), payload, padded to 4 bytes. Port id 0: the kernel fills it. */
export function nlmsg(type: number, flags: number, seq: number, payload: Buffer): Buffer {
  const len = 16 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt32LE(len, 0);
  out.writeUInt16LE(type, 4);
  out.writeUInt16LE(flags, 6);
  out.writeUInt32LE(seq >>> 0, 8);
  payload.copy(out, 16);
  return out;
}

// ---- requests -------------------------------------------------------------------------------------------

/** The payload of IPSET_CMD_PROTOCOL: which protocol versions the kernel speaks (sent as `ipset version` does). */
export const protocolRequest = (): Buffer => Buffer.concat([NFGENMSG, attr(IPSET_ATTR_PROTOCOL, u8(IPSET_PROTOCOL))]);

/** The kernel's protocol versions from its IPSET_CMD_PROTOCOL reply (min equals max when it sends no minimum). */
export function parseProtocolReply(payload: Buffer): { readonly max: number; readonly min: number } | undefined {
  const attrs = parseAttributes(payload.subarray(4));
  const max = attrs.get(IPSET_ATTR_PROTOCOL);
  if (!max || max.length < 1) return undefined;
  const min = attrs.get(IPSET_ATTR_PROTOCOL_MIN);
  return { max: max.readUInt8(0), min: min && min.length >= 1 ? min.readUInt8(0) : max.readUInt8(0) };
}

/** Writes one attribute header at `at` and returns where its value starts. */
function putHeader(out: Buffer, at: number, len: number, type: number): number {
  out.writeUInt16LE(len, at);
  out.writeUInt16LE(type, at + 2);
  return at + 4;
}

/**
 * One member's IPSET_ATTR_DATA (its CADT attributes and its line number), for a member as `ipset restore` writes
 * it for the set types netfence uses: `10.0.0.1` / `fd00::1` (hash:ip, or a host in hash:net), `10.0.0.0/8`
 * (hash:net), `10.0.0.1,tcp:80` (hash:ip,port; tcp, udp or sctp), and `10.0.0.0/24 nomatch` as `ipset save`
 * prints such an entry. Anything else throws IpsetMemberSyntaxError: nothing is sent. Written straight into one
 * buffer: a pod change encodes one member, a start-up batch tens of thousands.
 */
export function memberData(text: string, lineno: number, extensions?: Omit<TimedMember, 'member'>): Buffer {
  const nomatch = text.endsWith(' nomatch');
  const member = nomatch ? text.slice(0, -' nomatch'.length) : text;
  const comma = member.indexOf(',');
  const address = comma < 0 ? member : member.slice(0, comma);
  const slash = address.indexOf('/');
  const ipText = slash < 0 ? address : address.slice(0, slash);
  const comment = extensions?.comment === undefined ? undefined : commentBytes(extensions.comment);
  const out = Buffer.alloc(80 + (extensions ? 8 : 0) + (comment ? comment.length + 8 : 0));
  // DATA { IP { IPADDR_IPV4|IPV6 }, CIDR?, PORT?, PROTO?, CADT_FLAGS?, TIMEOUT?, COMMENT?, LINENO } (the kernel reads
  // them by type; for hash:ip with timeout and comment this is libipset's order, byte for byte).
  let at = 4;
  // Members come from the compiler, whose addresses model/address.ts already read: the same reader here.
  if (parseIp(ipText) === undefined) throw new IpsetMemberSyntaxError(`ipset member "${text}": "${ipText}" is not an IP address`);
  const bytes = ipToBytes(ipText);
  bytes.copy(out, at + 8);
  const v6 = bytes.length === 16;
  const ipLen = bytes.length;
  putHeader(out, at, 8 + ipLen, IPSET_ATTR_IP | NLA_F_NESTED);
  putHeader(out, at + 4, 4 + ipLen, (v6 ? IPSET_ATTR_IPADDR_IPV6 : IPSET_ATTR_IPADDR_IPV4) | NLA_F_NET_BYTEORDER);
  at += 8 + ipLen;
  if (slash >= 0) {
    const cidrText = address.slice(slash + 1);
    const cidr = Number(cidrText);
    if (!/^\d{1,3}$/.test(cidrText) || cidr > (v6 ? 128 : 32))
      throw new IpsetMemberSyntaxError(`ipset member "${text}": bad prefix length "${cidrText}"`);
    out[putHeader(out, at, 5, IPSET_ATTR_CIDR)] = cidr;
    at += 8;
  }
  if (comma >= 0) {
    const m = /^(tcp|udp|sctp):(\d{1,5})$/.exec(member.slice(comma + 1));
    const port = m ? Number(m[2]) : NaN;
    if (!m || port > 65535)
      throw new IpsetMemberSyntaxError(`ipset member "${text}": expected proto:port after the comma (tcp, udp or sctp)`);
    out.writeUInt16BE(port, putHeader(out, at, 6, IPSET_ATTR_PORT | NLA_F_NET_BYTEORDER));
    at += 8;
    out[putHeader(out, at, 5, IPSET_ATTR_PROTO)] = PROTOCOL_NUMBER[m[1]!]!;
    at += 8;
  }
  if (nomatch) {
    out.writeUInt32BE(IPSET_FLAG_NOMATCH, putHeader(out, at, 8, IPSET_ATTR_CADT_FLAGS | NLA_F_NET_BYTEORDER));
    at += 8;
  }
  if (extensions) {
    const t = extensions.timeout;
    if (!Number.isInteger(t) || t < 0 || t > 0xffffffff) throw new IpsetMemberSyntaxError(`ipset member "${text}": bad timeout ${t}`);
    out.writeUInt32BE(t, putHeader(out, at, 8, IPSET_ATTR_TIMEOUT | NLA_F_NET_BYTEORDER));
    at += 8;
  }
  if (comment) {
    putHeader(out, at, 4 + comment.length, IPSET_ATTR_COMMENT);
    comment.copy(out, at + 4);
    at += (4 + comment.length + 3) & ~3;
  }
  out.writeUInt32BE(lineno >>> 0, putHeader(out, at, 8, IPSET_ATTR_LINENO | NLA_F_NET_BYTEORDER));
  at += 8;
  putHeader(out, 0, at, IPSET_ATTR_DATA | NLA_F_NESTED);
  return out.subarray(0, at);
}

/** A comment as the kernel takes it: NUL-terminated, at most 255 bytes before the NUL (longer is refused, not cut). */
function commentBytes(comment: string): Buffer {
  const bytes = Buffer.from(comment, 'utf8');
  if (bytes.includes(0) || bytes.length > MAX_COMMENT_BYTES)
    throw new IpsetMemberSyntaxError(`ipset comment must be at most ${MAX_COMMENT_BYTES} bytes without NUL: "${comment.slice(0, 40)}…"`);
  return Buffer.concat([bytes, nulByte]);
}
const nulByte = Buffer.from([0]);

/** One add/del request: its payload, and which members (by index into the call's list) it carries. */
export interface MemberRequest {
  readonly type: number;
  readonly flags: number;
  readonly payload: Buffer;
  readonly first: number;
  readonly count: number;
}

/**
 * Requests that add (or delete) `members` to `set`, in order, as few as the per-request limit allows. Each
 * member's line number is its 1-based index in `members`, so an error reply names it. No NLM_F_EXCL: present
 * members are re-added and absent ones deleted without error. Throws IpsetMemberSyntaxError before building
 * anything when a member or the name is malformed.
 */
export function memberRequests(op: MemberOp, set: string, members: readonly SetMember[], protocol = IPSET_PROTOCOL): MemberRequest[] {
  if (set.length === 0 || Buffer.byteLength(set) > MAX_SET_NAME)
    throw new IpsetMemberSyntaxError(`ipset name "${set}" must be 1–${MAX_SET_NAME} bytes`);
  // `ipset del` takes the element alone (a saved member may carry options: `10.0.0.5 nomatch`), as the tool does.
  const datas = members.map((m, i) =>
    op === 'del'
      ? memberData(memberText(m).split(' ')[0]!, i + 1)
      : typeof m === 'string'
        ? memberData(m, i + 1)
        : memberData(m.member, i + 1, m),
  );
  const out: MemberRequest[] = [];
  for (let first = 0; first < datas.length;) {
    let end = first;
    let bytes = 0;
    while (end < datas.length && (end === first || bytes + datas[end]!.length <= MAX_ADT_BYTES)) bytes += datas[end++]!.length;
    const payload = Buffer.concat([
      NFGENMSG,
      attr(IPSET_ATTR_PROTOCOL, u8(protocol)),
      attr(IPSET_ATTR_SETNAME, nulTerminated(set)),
      attr(IPSET_ATTR_LINENO | NLA_F_NET_BYTEORDER, be32(first + 1)),
      nested(IPSET_ATTR_ADT, datas.slice(first, end)),
    ]);
    out.push({ type: MSG_OF[op], flags: NLM_F_REQUEST | NLM_F_ACK, payload, first, count: end - first });
    first = end;
  }
  return out;
}

// ---- replies --------------------------------------------------------------------------------------------

export interface NlReply {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  readonly payload: Buffer;
  /** The whole message, header included. */
  readonly raw: Buffer;
}

/** Splits a datagram from the kernel into its messages (stops at a truncated one). */
export function splitMessages(datagram: Buffer): NlReply[] {
  const out: NlReply[] = [];
  for (let off = 0; off + 16 <= datagram.length;) {
    const len = datagram.readUInt32LE(off);
    if (len < 16 || off + len > datagram.length) break;
    out.push({
      type: datagram.readUInt16LE(off + 4),
      flags: datagram.readUInt16LE(off + 6),
      seq: datagram.readUInt32LE(off + 8),
      payload: datagram.subarray(off + 16, off + len),
      raw: datagram.subarray(off, off + len),
    });
    off += (len + 3) & ~3;
  }
  return out;
}

/**
 * An NLMSG_ERROR payload: the error (0 for an ACK, else a positive errno or IPSET_ERR_* code) and, when the
 * kernel echoed an ipset request with a line number, that number (the refused member's, for add/del).
 */
export function parseError(payload: Buffer): { readonly errno: number; readonly lineno?: number } {
  if (payload.length < 4) return { errno: 0 };
  const errno = -payload.readInt32LE(0) || 0;
  if (errno === 0 || payload.length < 4 + 16 + 4) return { errno };
  const echoed = payload.subarray(4);
  const len = Math.min(echoed.readUInt32LE(0), echoed.length);
  const lineno = parseAttributes(echoed.subarray(16 + 4, len)).get(IPSET_ATTR_LINENO);
  return lineno && lineno.length >= 4 ? { errno, lineno: lineno.readUInt32BE(0) } : { errno };
}

const IPSET_ERRORS: Readonly<Record<number, string>> = {
  4097: 'the kernel could not read the request: an address of the other family, or another protocol version (IPSET_ERR_PROTOCOL)',
  4098: 'set type not supported by the kernel (IPSET_ERR_FIND_TYPE)',
  4099: 'the kernel allows no more sets (IPSET_ERR_MAX_SETS)',
  4100: 'set is in use (IPSET_ERR_BUSY)',
  4101: 'the second set does not exist (IPSET_ERR_EXIST_SETNAME2)',
  4102: 'set types differ (IPSET_ERR_TYPE_MISMATCH)',
  4103: 'element exists / is missing (IPSET_ERR_EXIST)',
  4104: 'invalid CIDR for this set (IPSET_ERR_INVALID_CIDR)',
  4105: 'invalid netmask (IPSET_ERR_INVALID_NETMASK)',
  4106: 'address family does not match the set (IPSET_ERR_INVALID_FAMILY)',
  4107: 'timeout not supported (IPSET_ERR_TIMEOUT)',
  4108: 'set is referenced and cannot be destroyed (IPSET_ERR_REFERENCED)',
  4109: 'invalid IPv4 address (IPSET_ERR_IPADDR_IPV4)',
  4110: 'invalid IPv6 address (IPSET_ERR_IPADDR_IPV6)',
  4352: 'set is full (IPSET_ERR_HASH_FULL)',
  4353: 'null-valued element (IPSET_ERR_HASH_ELEM)',
  4354: 'invalid protocol (IPSET_ERR_INVALID_PROTO)',
  4355: 'protocol missing (IPSET_ERR_MISSING_PROTO)',
};

const ERRNO_NAMES: Readonly<Record<number, string>> = {
  1: 'EPERM',
  2: 'ENOENT (no such set)',
  12: 'ENOMEM',
  22: 'EINVAL',
  93: 'EPROTONOSUPPORT',
  95: 'EOPNOTSUPP',
  105: 'ENOBUFS',
};

/** A readable name for an error code a reply carried. */
export const errorText = (errno: number): string => IPSET_ERRORS[errno] ?? ERRNO_NAMES[errno] ?? `errno ${errno}`;
