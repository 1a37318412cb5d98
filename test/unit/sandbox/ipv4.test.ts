import { formatIpv4, gatewayOf, isAssignable, nextFreeIp, parseIpv4, parseIpv4Cidr } from '../../../sandbox/ipv4.js';

const cidr = parseIpv4Cidr('10.244.1.0/24');
const ip = (text: string): number => parseIpv4(text) ?? -1;

describe('ipv4', () => {
  it.each(['10.244.1.7', '0.0.0.0', '255.255.255.255'])('round-trips %s', (text) => {
    expect(formatIpv4(ip(text))).toBe(text);
  });

  it.each(['10.244.1', '10.244.1.256', '10.244.1.1/24', 'a.b.c.d', ''])('rejects the address "%s"', (text) => {
    expect(parseIpv4(text)).toBeUndefined();
  });

  it.each([
    { text: '10.244.1.1/24', error: 'host bits' },
    { text: '10.244.1.0/33', error: 'not an IPv4 CIDR' },
    { text: '10.244.1.0', error: 'not an IPv4 CIDR' },
    { text: '10.244.1.0/24/1', error: 'not an IPv4 CIDR' },
  ])('rejects the CIDR $text', ({ text, error }) => {
    expect(() => parseIpv4Cidr(text)).toThrow(error);
  });

  it('gives the bridge the first address', () => {
    expect(formatIpv4(gatewayOf(cidr))).toBe('10.244.1.1');
  });

  it.each([
    { name: 'fresh node', taken: [], next: '10.244.1.2' },
    { name: 'skips taken', taken: ['10.244.1.2', '10.244.1.3'], next: '10.244.1.4' },
    { name: 'reuses a freed hole', taken: ['10.244.1.3'], next: '10.244.1.2' },
  ])('next free IP: $name', ({ taken, next }) => {
    expect(formatIpv4(nextFreeIp(cidr, new Set(taken.map(ip))) ?? 0)).toBe(next);
  });

  it('reports a full range', () => {
    const small = parseIpv4Cidr('10.244.9.0/30'); // .1 gateway, .2 the only pod address, .3 broadcast
    expect(nextFreeIp(small, new Set([ip('10.244.9.2')]))).toBeUndefined();
  });

  it.each([
    { addr: '10.244.1.0', ok: false },
    { addr: '10.244.1.1', ok: false },
    { addr: '10.244.1.2', ok: true },
    { addr: '10.244.1.254', ok: true },
    { addr: '10.244.1.255', ok: false },
    { addr: '10.244.2.2', ok: false },
  ])('$addr assignable to a pod: $ok', ({ addr, ok }) => {
    expect(isAssignable(cidr, ip(addr))).toBe(ok);
  });
});
