// Addresses and CIDRs from the API, from configuration and from flannel are read by one module
// (src/model/address.ts), so the same text gets the same answer wherever it comes from.

import { convert } from '../../../src/cluster/convert.js';
import { canonicalCidr, canonicalIp, isCidr } from '../../../src/model/address.js';

describe('canonicalIp', () => {
  it.each([
    ['10.244.1.5', '10.244.1.5'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['fd00::0001', 'fd00::1'],
    ['FD00:0:0::1', 'fd00::1'],
  ])('%s → %s', (text, canonical) => {
    expect(canonicalIp(text)).toBe(canonical);
  });

  it.each(['256.1.1.1', '1.2.3', '1.2.3.4.5', '10.0.0.1 ', '', 'ten.0.0.1', '1.2.3.-1'])('%j is not an address', (text) => {
    expect(canonicalIp(text)).toBeUndefined();
  });

  it('refuses leading zeros, as the strict API validation does (octal or decimal is ambiguous)', () => {
    expect(canonicalIp('010.0.0.1')).toBeUndefined();
  });

  it('is not given a non-string (API objects are untyped)', () => {
    expect(canonicalIp(10)).toBeUndefined();
    expect(canonicalIp(null)).toBeUndefined();
  });
});

describe('a CIDR read from a Node and from configuration gets one answer', () => {
  const node = (podCIDR: string) =>
    convert('Node', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR }, status: {} });

  // The Node reader had its own CIDR check, which refused a prefix written `/024` while the configuration's
  // reader took it as /24: the same text was a pod CIDR on one path and an error on the other.
  it.each(['10.244.1.0/024', '010.244.1.0/24', '10.244.1.0/33', 'fd00::/129', '10.244.1.0'])('%p is refused by both', (text) => {
    const converted = node(text);
    expect(converted.ok && converted.value.podCidrs).toEqual([]);
    expect(canonicalCidr(text)).toBeUndefined();
    expect(isCidr(text)).toBe(false);
  });

  it.each(['10.244.1.0/24', 'fd00:10:244:1::/64', '0.0.0.0/0'])('%p is taken by both', (text) => {
    const converted = node(text);
    expect(converted.ok && converted.value.podCidrs).toEqual([text]);
    expect(canonicalCidr(text)?.cidr).toBe(text);
  });
});
