// The one address module every layer reads addresses and CIDRs through: one strictness for all of them.

import ipaddr from 'ipaddr.js';
import {
  canonicalCidr,
  containsIp,
  inAnyCidr,
  ipFromBytes,
  ipToBytes,
  parseCidr,
  parseCidrOrHost,
  parseIp,
} from '../../../src/model/address.js';

describe('parseIp', () => {
  it.each([
    { text: '10.0.0.1', family: 4, value: 0x0a000001n },
    { text: '0.0.0.0', family: 4, value: 0n },
    { text: 'fd00::1', family: 6, value: (0xfd00n << 112n) | 1n },
    { text: '::ffff:10.0.0.1', family: 6, value: (0xffffn << 32n) | 0x0a000001n },
  ])('reads $text', ({ text, family, value }) => {
    expect(parseIp(text)).toEqual({ family, value });
  });

  // The API server's strict forms: no octal-looking octets, no classful shorthand, no IPv6 zone.
  it.each(['010.0.0.1', '10.1', '256.0.0.1', '10.0.0.1 ', 'fe80::1%eth0', 'fd00::g', '', 'a.b.c.d'])('rejects %p', (text) => {
    expect(parseIp(text)).toBeUndefined();
  });
});

describe('parseCidrOrHost', () => {
  it.each([
    { text: '10.0.0.0/8', expect: { family: 4, base: 0x0a000000n, prefix: 8 } },
    { text: '10.1.2.3/8', expect: { family: 4, base: 0x0a000000n, prefix: 8 } },
    { text: '10.0.0.7', expect: { family: 4, base: 0x0a000007n, prefix: 32 } },
    { text: 'fd00::1', expect: { family: 6, base: (0xfd00n << 112n) | 1n, prefix: 128 } },
  ])('reads $text (a bare address is a host route, as iptables-save prints one)', ({ text, expect: expected }) => {
    expect(parseCidrOrHost(text)).toEqual(expected);
  });

  it.each(['10.0.0.0/33', '10.0.0.0/8/8', '010.0.0.0/8', 'fd00::/129', '10.0.0.0/'])('rejects %p', (text) => {
    expect(parseCidrOrHost(text)).toBeUndefined();
  });

  it('agrees with parseCidr on every CIDR', () => {
    for (const text of ['10.0.0.0/8', '192.168.1.77/30', 'fd00:10::5/64', '0.0.0.0/0', '::/0']) {
      const parsed = parseCidr(text);
      expect(parsed.ok && parsed.cidr).toEqual(parseCidrOrHost(text));
    }
  });
});

describe('inAnyCidr', () => {
  const ip = parseIp('10.244.1.5')!;
  it.each([
    { cidrs: ['10.244.0.0/16'], inside: true },
    { cidrs: ['10.245.0.0/16', '10.244.1.5'], inside: true },
    { cidrs: ['fd00::/8', '10.245.0.0/16'], inside: false },
    { cidrs: ['not a cidr'], inside: false },
  ])('$cidrs → $inside', ({ cidrs, inside }) => {
    expect(inAnyCidr(ip, cidrs)).toBe(inside);
  });
});

describe('canonicalCidr', () => {
  it.each([
    { text: '10.244.1.0/24', expect: { family: 4, cidr: '10.244.1.0/24' } },
    { text: '10.244.1.1/24', expect: { family: 4, cidr: '10.244.1.0/24' } },
    { text: '0.0.0.0/0', expect: { family: 4, cidr: '0.0.0.0/0' } },
    { text: '10.0.0.7/32', expect: { family: 4, cidr: '10.0.0.7/32' } },
    { text: 'fd00:10:244:1::1/64', expect: { family: 6, cidr: 'fd00:10:244:1::/64' } },
    { text: '::/0', expect: { family: 6, cidr: '::/0' } },
    { text: 'FD00::1/128', expect: { family: 6, cidr: 'fd00::1/128' } },
  ])('accepts $text', ({ text, expect: expected }) => {
    expect(canonicalCidr(text)).toEqual(expected);
  });

  it.each([
    '10.0.0.0',
    '10.0.0.0/33',
    '10.1/16',
    '256.0.0.0/8',
    '010.0.0.0/8',
    'fd00::/129',
    'fe80::1%eth0/64',
    'fd00::g/64',
    '10.0.0.0/-1',
    '10.0.0.0/ 8',
    '',
  ])('rejects %p', (text) => {
    expect(canonicalCidr(text)).toBeUndefined();
  });
});

describe('addresses as netlink carries them (network byte order)', () => {
  it.each([
    { text: '10.244.1.5', hex: '0af40105' },
    { text: '0.0.0.0', hex: '00000000' },
    { text: 'fd00::1', hex: 'fd000000000000000000000000000001' },
    { text: '::ffff:10.0.0.1', hex: '00000000000000000000ffff0a000001' },
  ])('$text ↔ $hex', ({ text, hex }) => {
    expect(ipToBytes(text).toString('hex')).toBe(hex);
    expect(ipFromBytes(Buffer.from(hex, 'hex'))).toBe(parseIp(text)!.family === 4 ? text : ipFromBytes(ipToBytes(text)));
  });

  it.each([
    ['fd000000000000000000000000000001', 'fd00::1'],
    ['00000000000000000000000000000000', '::'],
    ['20010db8000000000001000000000001', '2001:db8::1:0:0:1'],
    ['20010db8000100010001000100010001', '2001:db8:1:1:1:1:1:1'],
    ['20010db8000000010000000000000001', '2001:db8:0:1::1'],
    ['20010000000000010000000000000000', '2001:0:0:1::'],
  ])('prints IPv6 %s in RFC 5952 form, as ipaddr does (%s)', (hex, text) => {
    expect(ipFromBytes(Buffer.from(hex, 'hex'))).toBe(text);
    expect(ipFromBytes(Buffer.from(hex, 'hex'))).toBe(ipaddr.fromByteArray([...Buffer.from(hex, 'hex')]).toString());
  });

  it('refuses text that is not an address rather than sending zeros', () => {
    expect(() => ipToBytes('010.0.0.1')).toThrow('not an IP address');
    expect(() => ipToBytes('fe80::1%eth0')).toThrow('not an IP address');
  });
});

describe('prefix masks and CIDR text, each computed once', () => {
  /** Whether the first `prefix` bits of two addresses agree, from their bits as text. */
  const samePrefix = (a: bigint, b: bigint, bits: number, prefix: number): boolean =>
    a.toString(2).padStart(bits, '0').slice(0, prefix) === b.toString(2).padStart(bits, '0').slice(0, prefix);

  it.each([
    [4, '10.1.2.3', ['10.1.2.4', '10.1.255.0', '11.1.2.3', '138.1.2.3', '0.0.0.0']],
    [6, 'fd00:1:2::3', ['fd00:1:2::4', 'fd00:1:3::', 'fe00::', '7d00::1', '::']],
  ] as const)('every prefix of IPv%i contains what shares its first bits', (family, base, others) => {
    const bits = family === 4 ? 32 : 128;
    for (let prefix = 0; prefix <= bits; prefix++) {
      const cidr = parseCidrOrHost(`${base}/${prefix}`)!;
      expect(cidr.prefix).toBe(prefix);
      for (const other of [base, ...others]) {
        const ip = parseIp(other)!;
        expect([prefix, other, containsIp(cidr, family, ip.value)]).toEqual([
          prefix,
          other,
          samePrefix(parseIp(base)!.value, ip.value, bits, prefix),
        ]);
      }
    }
  });

  it('reads each text as its own, however often it is asked', () => {
    for (let round = 0; round < 2; round++) {
      expect(parseCidrOrHost('10.0.0.0/8')).toEqual({ family: 4, base: 0x0a000000n, prefix: 8 });
      expect(parseCidrOrHost('10.0.0.0/16')).toEqual({ family: 4, base: 0x0a000000n, prefix: 16 });
      expect(parseCidrOrHost('10.0.0.1')).toEqual({ family: 4, base: 0x0a000001n, prefix: 32 });
      expect(parseCidrOrHost('10.0.0.0/33')).toBeUndefined();
      expect(parseCidrOrHost('nonsense')).toBeUndefined();
    }
  });
});
