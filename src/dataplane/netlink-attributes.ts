// Netlink attributes (struct nlattr) as bytes, for every netfilter codec here: ctnetlink, NFLOG, NFQUEUE and
// ipset. One encoder and one parser, so padding, flag bits and the "last one wins" rule cannot differ between
// them. The length and type are in host order (little-endian on the machines netfence runs on); a value's own
// byte order is the attribute's business (netfilter's are big-endian, hence be16/be32).

/** NLA_F_NESTED: the value is itself a list of attributes. */
export const NLA_F_NESTED = 0x8000;
/** NLA_F_NET_BYTEORDER: the value is in network byte order (ipset marks its integers and addresses). */
export const NLA_F_NET_BYTEORDER = 0x4000;
/** The type without the two flag bits. */
const NLA_TYPE_MASK = 0x3fff;

/** struct nlattr (host-order length and type) + value, padded to 4 bytes. */
export function attr(type: number, value: Buffer): Buffer {
  const len = 4 + value.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  value.copy(out, 4);
  return out;
}

/** An attribute holding attributes. */
export const nested = (type: number, parts: readonly Buffer[]): Buffer => attr(type | NLA_F_NESTED, Buffer.concat(parts));

export function be16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
}

export function be32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

/**
 * Splits an attribute stream, from byte `from` on, into type → value: flag bits stripped, the last of a type
 * wins (as the kernel's nla_parse), a truncated attribute ends the stream.
 */
export function parseAttributes(buf: Buffer, from = 0): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  for (let off = from; off + 4 <= buf.length;) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || off + len > buf.length) break;
    out.set(buf.readUInt16LE(off + 2) & NLA_TYPE_MASK, buf.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}
