// The IP packet around a DNS message, read from hostile bytes: the addresses and ports that key a query to its
// answer, the payload, and a refusal with its reason for anything that does not fit.

import { parseSegment } from '../../../src/dns/packet.js';
import { tcpPacket, udpPacket } from '../../helpers/dns-message.js';

describe('parseSegment', () => {
  it('reads UDP over IPv4 and IPv6, and TCP with its sequence number and flags', () => {
    expect(parseSegment(udpPacket('10.0.0.1', 53, '10.0.0.2', 4000, Buffer.from('abc')))).toEqual({
      ok: true,
      value: { family: 4, protocol: 'udp', src: '10.0.0.1', dst: '10.0.0.2', srcPort: 53, dstPort: 4000, payload: Buffer.from('abc') },
    });
    const v6 = parseSegment(udpPacket('fd00::1', 53, 'fd00::2', 4000, Buffer.from('x')));
    expect(v6).toMatchObject({ ok: true, value: { family: 6, src: 'fd00::1', dst: 'fd00::2' } });
    const tcp = parseSegment(tcpPacket('10.0.0.1', 53, '10.0.0.2', 4000, 0xfffffff0, { syn: true }, Buffer.from('zz')));
    expect(tcp).toMatchObject({
      ok: true,
      value: { protocol: 'tcp', payload: Buffer.from('zz'), tcp: { seq: 0xfffffff0, syn: true, fin: false, rst: false } },
    });
  });

  it('ignores bytes past the IP total length (link padding)', () => {
    const p = Buffer.concat([udpPacket('10.0.0.1', 53, '10.0.0.2', 4000, Buffer.from('abc')), Buffer.alloc(6)]);
    expect(parseSegment(p)).toMatchObject({ ok: true, value: { payload: Buffer.from('abc') } });
  });

  const refused = (p: Buffer): string => {
    const r = parseSegment(p);
    if (r.ok) throw new Error('parsed');
    return r.reason;
  };

  it.each<[string, () => Buffer, RegExp]>([
    ['empty', () => Buffer.alloc(0), /empty/],
    ['a truncated IPv4 header', () => udpPacket('10.0.0.1', 53, '10.0.0.2', 1, Buffer.alloc(0)).subarray(0, 12), /IPv4 packet of 12/],
    ['an IPv4 total length past the bytes', () => udpPacket('10.0.0.1', 53, '10.0.0.2', 1, Buffer.alloc(4)).subarray(0, 30), /lengths/],
    [
      'an IPv4 fragment',
      () => {
        const p = udpPacket('10.0.0.1', 53, '10.0.0.2', 1, Buffer.alloc(4));
        p.writeUInt16BE(0x2000, 6); // more fragments
        return p;
      },
      /fragment/,
    ],
    [
      'a UDP length past the packet',
      () => {
        const p = udpPacket('10.0.0.1', 53, '10.0.0.2', 1, Buffer.alloc(4));
        p.writeUInt16BE(200, 24);
        return p;
      },
      /UDP length/,
    ],
    [
      'an IPv6 extension header',
      () => {
        const p = udpPacket('fd00::1', 53, 'fd00::2', 1, Buffer.alloc(4));
        p[6] = 0; // hop-by-hop options
        return p;
      },
      /protocol 0/,
    ],
    [
      'a TCP data offset past the packet',
      () => {
        const p = tcpPacket('10.0.0.1', 53, '10.0.0.2', 1, 1, {});
        p[20 + 12] = 15 << 4;
        return p;
      },
      /data offset/,
    ],
    ['IP version 5', () => Buffer.from([0x50, 0, 0, 0]), /version 5/],
  ])('refuses %s', (_, make, reason) => {
    expect(refused(make())).toMatch(reason);
  });
});
