// The one address module every layer reads addresses and CIDRs through: one strictness for all of them.

import { canonicalCidr, inAnyCidr, ipFromBytes, ipToBytes, parseCidr, parseCidrOrHost, parseIp } from '../../../src/model/address.js';

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

  it('prints IPv6 in the canonical form the rest of netfence compares with', () => {
    expect(ipFromBytes(Buffer.from('fd000000000000000000000000000001', 'hex'))).toBe('fd00::1');
  });

  it('refuses text that is not an address rather than sending zeros', () => {
    expect(() => ipToBytes('010.0.0.1')).toThrow('not an IP address');
    expect(() => ipToBytes('fe80::1%eth0')).toThrow('not an IP address');
  });
});
