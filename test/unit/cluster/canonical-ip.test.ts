import { canonicalIp } from '../../../src/cluster/convert.js';

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

  it('agrees with the full parser on forms the fast path leaves to it', () => {
    // Leading zeros are not taken by the fast path; whatever ipaddr.js makes of them is kept.
    expect(canonicalIp('010.0.0.1')).not.toBe('010.0.0.1');
  });
});
