import { sysctlPath } from '../../../src/dataplane/sysctl.js';

describe('sysctlPath', () => {
  it.each([
    ['net.ipv4.ip_forward', '/proc/sys/net/ipv4/ip_forward'],
    ['net.bridge.bridge-nf-call-iptables', '/proc/sys/net/bridge/bridge-nf-call-iptables'],
    ['net/ipv4/conf/eth0.100/rp_filter', '/proc/sys/net/ipv4/conf/eth0.100/rp_filter'],
  ])('%s → %s', (key, path) => {
    expect(sysctlPath(key)).toBe(path);
  });

  it.each(['', '../etc/passwd', 'net/../../etc', '/net/ipv4', 'net.ipv4 ip_forward', 'net;rm'])('rejects %j', (key) => {
    expect(() => sysctlPath(key)).toThrow(/invalid sysctl key/);
  });
});
