// When the IPv6 bridge sysctl matters: a node has IPv6 pods by its pod CIDRs or by its pods' addresses,
// and only when netfence programs IPv6 at all.

import { hasIpv6Pods } from '../../../src/daemon/preconditions.js';
import { compile } from '../../../src/compile/index.js';
import { defaultNodeSettings, type ClusterSnapshot, type NodeSettings } from '../../../src/model/index.js';
import { ips as withIps, makeNamespace, makePod, NODE } from '../../helpers/builders.js';

const v4Only = defaultNodeSettings(NODE, ['10.244.1.0/24']);
const dual = defaultNodeSettings(NODE, ['10.244.1.0/24', 'fd00:10:244:1::/64']);

function desiredWith(ips: string[], settings: NodeSettings) {
  const snapshot: ClusterSnapshot = {
    nodes: [],
    namespaces: [makeNamespace('x')],
    pods: [makePod('x', 'a', ips[0]!, withIps(...ips))],
    policies: [],
  };
  return compile(snapshot, settings).desired;
}

describe('hasIpv6Pods', () => {
  it.each([
    { name: 'IPv4 pod CIDR and IPv4 pods', ipv6: true, settings: v4Only, ips: ['10.244.1.2'], want: false },
    { name: 'an IPv6 pod CIDR, no pod has an IPv6 address yet', ipv6: true, settings: dual, ips: ['10.244.1.2'], want: true },
    {
      name: 'IPv4 pod CIDR configured, a pod with an IPv6 address',
      ipv6: true,
      settings: v4Only,
      ips: ['10.244.1.2', 'fd00:10:244:1::2'],
      want: true,
    },
    { name: 'IPv6 everywhere but netfence does not program IPv6', ipv6: false, settings: dual, ips: ['fd00:10:244:1::2'], want: false },
  ])('$name: $want', ({ ipv6, settings, ips, want }) => {
    expect(hasIpv6Pods(ipv6, settings, desiredWith(ips, settings))).toBe(want);
  });

  it('before the first sync (no settings, nothing compiled): no', () => {
    expect(hasIpv6Pods(true, undefined, undefined)).toBe(false);
  });
});
