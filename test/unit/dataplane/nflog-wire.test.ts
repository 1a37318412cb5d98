// nfnetlink_log bytes: the bind/mode requests as the kernel's structs lay them out, and packet messages
// built here byte by byte (the kernel-made ones are parsed in test/kernel/flow-log.test.ts).

import {
  bindRequest,
  modeRequest,
  NFULNL_MSG_CONFIG,
  NFULNL_MSG_PACKET,
  parseIpHeader,
  parseNflogMessage,
} from '../../../src/dataplane/nflog-wire.js';

const attr = (type: number, value: Buffer): Buffer => {
  const len = 4 + value.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  value.copy(b, 4);
  return b;
};

function ipv4Tcp(src: number[], dst: number[], sport: number, dport: number): Buffer {
  const p = Buffer.alloc(40);
  p[0] = 0x45;
  p[9] = 6;
  Buffer.from(src).copy(p, 12);
  Buffer.from(dst).copy(p, 16);
  p.writeUInt16BE(sport, 20);
  p.writeUInt16BE(dport, 22);
  return p;
}

describe('nfnetlink_log requests', () => {
  it('message types are NFNL_SUBSYS_ULOG (4) << 8 | PACKET (0) / CONFIG (1)', () => {
    expect([NFULNL_MSG_PACKET, NFULNL_MSG_CONFIG]).toEqual([0x400, 0x401]);
  });

  it('bind: nfgenmsg(AF_UNSPEC, v0, group big-endian) + NFULA_CFG_CMD(BIND)', () => {
    expect([...bindRequest(0x1234)]).toEqual([0, 0, 0x12, 0x34, 5, 0, 1, 0, 1, 0, 0, 0]);
  });

  it('mode: packed copy range (be32) and COPY_PACKET, then queue threshold 1 and no flush timeout', () => {
    const b = modeRequest(7, 128);
    expect([...b.subarray(0, 4)]).toEqual([0, 0, 0, 7]);
    expect([...b.subarray(4, 16)]).toEqual([10, 0, 2, 0, 0, 0, 0, 128, 2, 0, 0, 0]);
    expect([...b.subarray(16, 24)]).toEqual([8, 0, 5, 0, 0, 0, 0, 1]);
  });
});

describe('parseNflogMessage', () => {
  const body = (attrs: Buffer[], group = 9476): Buffer => Buffer.concat([Buffer.from([2, 0, group >> 8, group & 0xff]), ...attrs]);

  it('reads group, prefix, interfaces, the kernel timestamp and the IPv4/TCP header', () => {
    const ts = Buffer.alloc(16);
    ts.writeBigUInt64BE(1_700_000_000n, 0);
    ts.writeBigUInt64BE(250_000n, 8);
    const idx = (n: number): Buffer => Buffer.from([0, 0, 0, n]);
    const msg = body([
      attr(1, Buffer.from([0x08, 0x00, 3, 0])),
      attr(10, Buffer.from('nf:iso:nf-tw-abc\0')),
      attr(3, ts),
      attr(4, idx(3)),
      attr(5, idx(4)),
      attr(9, ipv4Tcp([10, 244, 2, 5], [10, 244, 1, 7], 40000, 80)),
    ]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg)).toEqual({
      group: 9476,
      prefix: 'nf:iso:nf-tw-abc',
      time: 1_700_000_000_250,
      inIfindex: 3,
      outIfindex: 4,
      ip: { family: 4, src: '10.244.2.5', dst: '10.244.1.7', protocol: 6, srcPort: 40000, dstPort: 80 },
    });
  });

  it('takes the reading time when the kernel sent no timestamp, and ignores other message types', () => {
    const msg = body([attr(10, Buffer.from('p\0'))]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg, () => 42)).toEqual({ group: 9476, prefix: 'p', time: 42 });
    expect(parseNflogMessage(NFULNL_MSG_CONFIG, msg)).toBeUndefined();
  });

  it('stops at a truncated attribute instead of reading past the message', () => {
    const msg = Buffer.concat([body([attr(10, Buffer.from('ok\0'))]), Buffer.from([40, 0, 9, 0, 1, 2])]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg, () => 1)).toEqual({ group: 9476, prefix: 'ok', time: 1 });
  });
});

describe('parseIpHeader', () => {
  it('IPv6 UDP, with the address in RFC 5952 text', () => {
    const p = Buffer.alloc(48);
    p[0] = 0x60;
    p[6] = 17;
    Buffer.from('fd000000000000000000000000000001', 'hex').copy(p, 8);
    Buffer.from('fd000001000200000000000000000000', 'hex').copy(p, 24);
    p.writeUInt16BE(5353, 40);
    p.writeUInt16BE(53, 42);
    expect(parseIpHeader(p, 0x86dd)).toEqual({ family: 6, src: 'fd00::1', dst: 'fd00:1:2::', protocol: 17, srcPort: 5353, dstPort: 53 });
  });

  it('no ports for ICMP (its header instead: all zero, an echo reply) or a non-first fragment; nothing for a short or foreign payload', () => {
    const icmp = ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 0, 0);
    icmp[9] = 1;
    expect(parseIpHeader(icmp)).toEqual({
      family: 4,
      src: '1.2.3.4',
      dst: '5.6.7.8',
      protocol: 1,
      icmp: { type: 0, code: 0, id: 0, hopLimit: 0 },
    });
    const frag = ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
    frag.writeUInt16BE(100, 6);
    expect(parseIpHeader(frag)).toEqual({ family: 4, src: '1.2.3.4', dst: '5.6.7.8', protocol: 6 });
    expect(parseIpHeader(Buffer.from([0x45, 0]))).toBeUndefined();
    expect(parseIpHeader(ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2), 0x86dd)).toBeUndefined();
  });
});

// ICMP and ICMPv6 as the wire lays them out: RFC 791 / RFC 8200 headers, then RFC 792 / RFC 4443 §2.1
// (type, code, checksum) and, for echo, RFC 792 "Echo or Echo Reply Message" / RFC 4443 §4.1 (identifier,
// sequence number). The checksums are left 0: nothing here reads them.
describe('parseIpHeader: ICMP and ICMPv6 type and code', () => {
  /** IPv4 echo request 10.244.2.9 → 10.244.1.5, TTL 63, id 0x1234 seq 1, 8 bytes of data (as ping sends). */
  const ipv4Echo = (): Buffer =>
    Buffer.from(
      [
        '4500 0024 abcd 4000 3f01 0000 0af4 0209 0af4 0105', // version 4, IHL 5, total 36, DF, TTL 63, proto 1
        '0800 0000 1234 0001', // type 8 code 0, checksum, identifier, sequence
        '6162 6364 6566 6768',
      ]
        .join('')
        .replace(/ /g, ''),
      'hex',
    );
  const src6 = 'fd000000000000000000000000000001';
  const dst6 = 'ff0200000000000000000001ff000002'; // the solicited-node group of fd00::2
  /** IPv6 neighbour solicitation for fd00::2: hop limit 255, 24 bytes of ICMPv6 (RFC 4861 §4.3). */
  const ipv6Ns = (): Buffer =>
    Buffer.from(`6000000000183aff${src6}${dst6}` + `87000000` + `00000000` + `fd000000000000000000000000000002`, 'hex');

  it('IPv4 echo request: type 8, code 0, the identifier and the TTL it was logged with', () => {
    expect(parseIpHeader(ipv4Echo(), 0x0800)).toEqual({
      family: 4,
      src: '10.244.2.9',
      dst: '10.244.1.5',
      protocol: 1,
      icmp: { type: 8, code: 0, id: 0x1234, hopLimit: 63 },
    });
  });

  it('IPv4 destination unreachable (port unreachable) behind 4 bytes of IP options: no identifier', () => {
    const p = Buffer.from('4600 0028 0000 0000 4001 0000 0a000001 0a000002 94040000 0303 0000 00000000 4500001c'.replace(/ /g, ''), 'hex'); // IHL 6: a router alert option (RFC 2113) before ICMP type 3 code 3
    expect(parseIpHeader(p)).toMatchObject({ protocol: 1, icmp: { type: 3, code: 3, hopLimit: 64 } });
    expect(parseIpHeader(p)!.icmp).not.toHaveProperty('id');
  });

  it('IPv6 neighbour solicitation: type 135, hop limit 255', () => {
    expect(parseIpHeader(ipv6Ns(), 0x86dd)).toEqual({
      family: 6,
      src: 'fd00::1',
      dst: 'ff02::1:ff00:2',
      protocol: 58,
      icmp: { type: 135, code: 0, hopLimit: 255 },
    });
  });

  it('IPv6 MLDv2 report behind its hop-by-hop router alert (RFC 3810 §5): ICMPv6 type 143, as ip6tables -p sees it', () => {
    // Next header 0 (hop-by-hop), 8 bytes: next 58, length 0, router alert option (5, 2, value 0), PadN (1, 0).
    const hbh = '3a00' + '05020000' + '0100';
    const p = Buffer.from(
      `6000000000240001fe800000000000000000000000000001ff020000000000000000000000000016${hbh}8f000000 00000001 04000000 ff020000000000000000000000000fb0`.replace(
        / /g,
        '',
      ),
      'hex',
    );
    expect(parseIpHeader(p, 0x86dd)).toMatchObject({ family: 6, protocol: 58, icmp: { type: 143, code: 0, hopLimit: 1 } });
  });

  it('IPv6 echo request behind a destination options header and an atomic fragment header: the identifier too', () => {
    const dstOpts = '2c00' + '010400000000'; // next 44 (fragment), length 0, PadN of 4
    const frag = '3a00' + '0000' + 'deadbeef'; // next 58, offset 0, M 0: an atomic fragment (RFC 6946)
    const p = Buffer.from(`60000000001c3c40${src6}${'fd000000000000000000000000000002'}${dstOpts}${frag}80000000abcd0007`, 'hex');
    expect(parseIpHeader(p, 0x86dd)).toEqual({
      family: 6,
      src: 'fd00::1',
      dst: 'fd00::2',
      protocol: 58,
      icmp: { type: 128, code: 0, id: 0xabcd, hopLimit: 64 },
    });
  });

  it('TCP behind a hop-by-hop header: the ports after the extension headers, not inside them', () => {
    const p = Buffer.from(`6000000000200040${src6}${'fd000000000000000000000000000002'}0600050200000100 9c400050`.replace(/ /g, ''), 'hex');
    expect(parseIpHeader(p, 0x86dd)).toMatchObject({ protocol: 6, srcPort: 40000, dstPort: 80 });
  });

  it('a copy cut short gives no type rather than a wrong one: the protocol alone', () => {
    // Cut inside the ICMP header: one byte of it.
    expect(parseIpHeader(ipv4Echo().subarray(0, 21))).toEqual({ family: 4, src: '10.244.2.9', dst: '10.244.1.5', protocol: 1 });
    // Type and code, but not the identifier.
    expect(parseIpHeader(ipv4Echo().subarray(0, 25))!.icmp).toEqual({ type: 8, code: 0, hopLimit: 63 });
    expect(parseIpHeader(ipv6Ns().subarray(0, 41), 0x86dd)).toEqual({ family: 6, src: 'fd00::1', dst: 'ff02::1:ff00:2', protocol: 58 });
    // Cut inside an extension header: the header's number, never a byte of it read as ICMP.
    const hbh = Buffer.from(`6000000000200000${src6}${dst6}3a00050200000100 87000000`.replace(/ /g, ''), 'hex');
    expect(parseIpHeader(hbh.subarray(0, 46), 0x86dd)).toEqual({ family: 6, src: 'fd00::1', dst: 'ff02::1:ff00:2', protocol: 0 });
  });

  it('no ICMP header in a later fragment, nor ICMPv6 on IPv4 or ICMP on IPv6', () => {
    const later = ipv4Echo();
    later.writeUInt16BE(0x2001, 6); // MF, offset 1 (8 bytes)
    expect(parseIpHeader(later)).not.toHaveProperty('icmp');
    const v6Later = Buffer.from(`6000000000103c40${src6}${dst6}3a000009deadbeef80000000abcd0007`.replace(/ /g, ''), 'hex');
    v6Later[6] = 44; // fragment header at offset 9 (72 bytes)
    expect(parseIpHeader(v6Later, 0x86dd)).toEqual({ family: 6, src: 'fd00::1', dst: 'ff02::1:ff00:2', protocol: 58 });
    const v4With58 = ipv4Echo();
    v4With58[9] = 58;
    expect(parseIpHeader(v4With58)).not.toHaveProperty('icmp');
    const v6With1 = ipv6Ns();
    v6With1[6] = 1;
    expect(parseIpHeader(v6With1, 0x86dd)).not.toHaveProperty('icmp');
  });
});
