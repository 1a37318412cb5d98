import { externalIpv6, planNodeIpv6, podIpv6 } from '../../../sandbox/ipv6.js';
import { flannelRestore, flannelSubnetEnv, nodeBatch, podBatch, podHostBatch } from '../../../sandbox/commands.js';

describe('sandbox commands', () => {
  it('builds a node with eth0 on the underlay, cni0 and host-gw routes', () => {
    const lines = nodeBatch(
      {
        netns: 'nfs1a2b-node-n1',
        underlayPort: 'nfs1a2b-u0',
        underlayIp: '10.99.0.1',
        underlayPrefix: 24,
        podCidr: '10.244.1.0/24',
        gatewayIp: '10.244.1.1',
        podPrefix: 24,
      },
      'nfs1a2b-underlay',
      [{ podCidr: '10.244.2.0/24', via: '10.99.0.2' }],
    );
    expect(lines).toEqual([
      'link set lo up',
      'link add eth0 type veth peer name nfs1a2b-u0 netns nfs1a2b-underlay',
      'addr add 10.99.0.1/24 dev eth0',
      'link set eth0 up',
      'link add cni0 type bridge',
      'addr add 10.244.1.1/24 dev cni0',
      'link set cni0 up',
      'route add 10.244.2.0/24 via 10.99.0.2 dev eth0',
    ]);
  });

  it('attaches a pod veth to cni0 with hairpin on and routes the pod via the bridge', () => {
    expect(podHostBatch('veth0123abcd', 'nfs1a2b-pod-x.a')).toContain('link set dev veth0123abcd type bridge_slave hairpin on');
    expect(podBatch([{ ip: '10.244.1.2', prefix: 24, gatewayIp: '10.244.1.1' }])).toEqual([
      'link set lo up',
      'addr add 10.244.1.2/24 dev eth0',
      'link set eth0 up',
      'route add default via 10.244.1.1 dev eth0',
    ]);
  });

  it('dual-stack pods get both addresses (IPv6 without DAD) and a default route per family, in podIPs order', () => {
    const v6 = { ip: 'fd00:10:244:1::2', prefix: 64, gatewayIp: 'fd00:10:244:1::1' };
    expect(podBatch([v6, { ip: '10.244.1.2', prefix: 24, gatewayIp: '10.244.1.1' }])).toEqual([
      'link set lo up',
      'addr add fd00:10:244:1::2/64 dev eth0 nodad',
      'addr add 10.244.1.2/24 dev eth0',
      'link set eth0 up',
      'route add ::/0 via fd00:10:244:1::1 dev eth0',
      'route add default via 10.244.1.1 dev eth0',
    ]);
  });

  it('plans IPv6 like flannel: a /64 per node out of the cluster /56, cni0 on ::1, pods numbered like their IPv4 twin', () => {
    const plan = { clusterCidr: 'fd00:10:244::/56', underlayCidr: 'fd00:99::/64' };
    const n1 = planNodeIpv6(plan, 0);
    expect(n1).toEqual({ podCidr: 'fd00:10:244:1::/64', gatewayIp: 'fd00:10:244:1::1', underlayIp: 'fd00:99::1', underlayPrefix: 64 });
    expect(planNodeIpv6(plan, 1).podCidr).toBe('fd00:10:244:2::/64');
    expect(podIpv6(n1, 0x2a)).toBe('fd00:10:244:1::2a');
    expect(() => planNodeIpv6(plan, 255)).toThrow(/no \/64 left/);
    expect(() => planNodeIpv6({ ...plan, clusterCidr: '10.0.0.0/8' }, 0)).toThrow(/not an IPv6 CIDR/);
  });

  it('numbers external clients down from the top of the IPv6 underlay, away from the nodes', () => {
    const plan = { clusterCidr: 'fd00:10:244::/56', underlayCidr: 'fd00:99::/64' };
    expect(externalIpv6(plan, 0)).toEqual({ ip: 'fd00:99::ffff:ffff:ffff:fffe', prefix: 64 });
    expect(externalIpv6(plan, 1).ip).toBe('fd00:99::ffff:ffff:ffff:fffd');
  });

  it('writes flannel-like filter and nat chains in one restore payload', () => {
    const text = flannelRestore('10.244.0.0/16', '10.244.1.0/24');
    expect(text.match(/^\*(filter|nat)$/gm)).toEqual(['*filter', '*nat']);
    expect(text.match(/^COMMIT$/gm)).toHaveLength(2);
    expect(text).toContain('-A FLANNEL-FWD -d 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT');
    expect(text).toContain('-A FLANNEL-POSTRTG -s 10.244.1.0/24 -d 10.244.0.0/16 -m comment --comment "flanneld masq" -j RETURN');
  });

  it('writes subnet.env the way flanneld does, bridge address first', () => {
    expect(flannelSubnetEnv('10.244.0.0/16', '10.244.2.1', 24)).toBe(
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.2.1/24\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n',
    );
    expect(
      flannelSubnetEnv('10.244.0.0/16', '10.244.2.1', 24, { clusterCidr: 'fd00:10:244::/56', gatewayIp: 'fd00:10:244:2::1' }),
    ).toContain('FLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:2::1/64\n');
  });
});
