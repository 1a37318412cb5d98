// ctnetlink bytes: an update request carries the tuple, mark and mask the kernel expects (layout from
// include/uapi/linux/netfilter/nfnetlink_conntrack.h), and a dumped entry parses back to the same flow.

import { entryFromWire, entryToWire, markUpdateRequest, parseEntry } from '../../../src/dataplane/ctnetlink-codec.js';
import { parseAttributes } from '../../../src/dataplane/netlink-attributes.js';

const tcp = { src: '10.244.1.2', dst: '10.244.1.3', proto: 6, sport: 40000, dport: 80 };

describe('markUpdateRequest', () => {
  const bytes = markUpdateRequest({ family: 4, orig: tcp, zone: 0, value: 0x100000, mask: 0x100000 });

  it('starts with nfgenmsg for AF_INET, version 0', () => {
    expect([...bytes.subarray(0, 4)]).toEqual([2, 0, 0, 0]);
  });

  it('carries CTA_MARK and CTA_MARK_MASK big-endian, and no CTA_ZONE for zone 0', () => {
    const attrs = parseAttributes(bytes.subarray(4));
    expect(attrs.get(8)?.readUInt32BE(0)).toBe(0x100000);
    expect(attrs.get(21)?.readUInt32BE(0)).toBe(0x100000);
    expect(attrs.has(18)).toBe(false);
  });

  it('nests the original tuple: addresses, protocol number and ports in network order', () => {
    const tuple = parseAttributes(parseAttributes(bytes.subarray(4)).get(1)!);
    const ip = parseAttributes(tuple.get(1)!);
    const proto = parseAttributes(tuple.get(2)!);
    expect([...ip.get(1)!]).toEqual([10, 244, 1, 2]);
    expect([...ip.get(2)!]).toEqual([10, 244, 1, 3]);
    expect(proto.get(1)?.readUInt8(0)).toBe(6);
    expect(proto.get(2)?.readUInt16BE(0)).toBe(40000);
    expect(proto.get(3)?.readUInt16BE(0)).toBe(80);
  });

  it('uses the IPv6 attributes for family 6', () => {
    const v6 = markUpdateRequest({ family: 6, orig: { ...tcp, src: 'fd00::2', dst: 'fd00::3' }, zone: 3, value: 0, mask: 0x100000 });
    expect(v6.readUInt8(0)).toBe(10);
    const attrs = parseAttributes(v6.subarray(4));
    expect(attrs.get(18)?.readUInt16BE(0)).toBe(3);
    const ip = parseAttributes(parseAttributes(attrs.get(1)!).get(1)!);
    expect(ip.get(3)).toHaveLength(16);
  });
});

describe('parseEntry', () => {
  it('reads back a dumped entry: both tuples, mark, zone', () => {
    // A dump message is CT_NEW-shaped: nfgenmsg, CTA_TUPLE_ORIG, CTA_TUPLE_REPLY, CTA_MARK. Build one
    // from two update requests' tuples (same encoding) and a mark.
    const orig = markUpdateRequest({ family: 4, orig: tcp, zone: 0, value: 0, mask: 0 }).subarray(4);
    const origTuple = parseAttributes(orig).get(1)!;
    const reply = { src: '10.244.1.3', dst: '10.244.1.2', proto: 6, sport: 80, dport: 40000 };
    const replyTuple = parseAttributes(markUpdateRequest({ family: 4, orig: reply, zone: 0, value: 0, mask: 0 }).subarray(4)).get(1)!;
    const attr = (type: number, value: Buffer) => {
      const out = Buffer.alloc((4 + value.length + 3) & ~3);
      out.writeUInt16LE(4 + value.length, 0);
      out.writeUInt16LE(type, 2);
      value.copy(out, 4);
      return out;
    };
    const mark = Buffer.alloc(4);
    mark.writeUInt32BE(0x100000, 0);
    const payload = Buffer.concat([Buffer.from([2, 0, 0, 0]), attr(1 | 0x8000, origTuple), attr(2 | 0x8000, replyTuple), attr(8, mark)]);
    expect(parseEntry(payload)).toEqual({ family: 4, orig: tcp, reply, mark: 0x100000, zone: 0 });
  });

  it('refuses an entry without tuples', () => {
    expect(parseEntry(Buffer.from([2, 0, 0, 0]))).toBeUndefined();
  });
});

describe('the worker wire form', () => {
  it.each([
    {
      name: 'TCP',
      entry: { family: 4 as const, orig: tcp, reply: { ...tcp, src: tcp.dst, dst: tcp.src, sport: 80, dport: 40000 }, mark: 5, zone: 0 },
    },
    {
      name: 'ICMP, no ports',
      entry: {
        family: 4 as const,
        orig: { src: '10.0.0.1', dst: '10.0.0.2', proto: 1 },
        reply: { src: '10.0.0.2', dst: '10.0.0.1', proto: 1 },
        mark: 0,
        zone: 2,
      },
    },
  ])('$name survives the round trip', ({ entry }) => {
    expect(entryFromWire(JSON.parse(JSON.stringify(entryToWire(entry))))).toEqual(entry);
  });
});
