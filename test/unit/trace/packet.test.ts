// flannel's layout: a packet from a local pod enters FORWARD on the bridge, one to a local pod leaves on it,
// anything else uses the uplink. A node's local pods are its pod CIDRs' addresses and the addresses listed
// as local (read as a set, once per list).

import { describe, expect, it } from '@jest/globals';
import { packetFor, type NodeLayout } from '../../../src/trace/index.js';

const ifaces = (layout: NodeLayout, src: string, dst: string): [string, string] => {
  const p = packetFor({ src, dst, proto: 'tcp', dport: 80 }, layout);
  return [p.inIface, p.outIface];
};

describe('packetFor', () => {
  it('puts a listed local address on the bridge, by its value in either family, and nothing else', () => {
    const layout: NodeLayout = { bridge: 'cni0', uplink: 'eth0', podCidrs: [], localIps: ['10.0.0.5', 'fd00::5'] };
    expect(ifaces(layout, '10.0.0.5', '10.0.0.6')).toEqual(['cni0', 'eth0']);
    expect(ifaces(layout, '10.0.0.6', '10.0.0.5')).toEqual(['eth0', 'cni0']);
    expect(ifaces(layout, 'fd00:0::0005', '8.8.8.8')).toEqual(['cni0', 'eth0']);
    // The same number in the other family is another address.
    expect(ifaces(layout, '::a00:5', '::5')).toEqual(['eth0', 'eth0']);
    const other: NodeLayout = { ...layout, localIps: ['10.0.0.6'] };
    expect(ifaces(other, '10.0.0.5', '10.0.0.6')).toEqual(['eth0', 'cni0']);
    expect(ifaces(layout, '10.0.0.5', '10.0.0.6')).toEqual(['cni0', 'eth0']);
  });

  it('puts an address of a pod CIDR on the bridge', () => {
    const layout: NodeLayout = { bridge: 'cni0', uplink: 'eth0', podCidrs: ['10.244.1.0/24'] };
    expect(ifaces(layout, '10.244.1.9', '10.244.2.9')).toEqual(['cni0', 'eth0']);
  });
});
