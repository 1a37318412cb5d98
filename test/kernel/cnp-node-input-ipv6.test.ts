// ClusterNetworkPolicy egress to the pod's OWN node over IPv6, on real packets (cnp-node-input.test.ts is
// the IPv4 counterpart). The houses are dual-stack with IPv6 first (houses.ts family 6); every probe goes to
// an IPv6 address and the probing pod's neighbour cache is flushed before each round, so each probe first
// resolves its next hop with ND. A pod's packet to its node's address is delivered through INPUT, where
// netfence runs the pod's CNP egress tiers; its ND/MLD to the node (the gateway) arrives there too and must
// pass even a Deny of `::/0`, or the pod could reach nothing off its bridge (RFC 4861 §7.1.1: NS "IP Hop
// Limit field has a value of 255"; icmpv6.ts hostLinkIcmpv6Rules). A Deny must time out (a silent DROP).
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns cnp-node-input-ipv6

import { jest } from '@jest/globals';
import { main } from '../../src/cli/main.js';
import { HouseCluster, ns, pod, type CnpDoc } from '../helpers/conformance-cnp/houses.js';
import { iptables } from '../helpers/kernel-asserts.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(180_000);

const house = (h: string) => ({ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': ns(h as 'gryffindor') } } });

function adminEgress(name: string, priority: number, egress: readonly Record<string, unknown>[]): CnpDoc {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier: 'Admin', priority, subject: house('gryffindor'), egress },
  };
}

describeKernel('ClusterNetworkPolicy egress to the local node over IPv6 goes through INPUT, ND to the node passes', () => {
  let cluster: HouseCluster | undefined;
  const c = (): HouseCluster => cluster!;

  beforeAll(async () => {
    cluster = await HouseCluster.create(6);
  }, 120_000);
  afterAll(async () => {
    await cluster?.destroy();
  }, 120_000);

  const check = async (protocol: 'TCP' | 'UDP', port: number, cells: readonly (readonly [string, string, boolean])[]) => {
    const report = await c().expect(protocol, port, cells);
    expect(report ?? 'as expected').toBe('as expected');
  };

  it('no CNP: every pod reaches its own node and the other node over IPv6 (TCP and UDP: the agents answer from the probed address)', async () => {
    await c().apply();
    const cells = [pod('harry-potter-0'), pod('draco-malfoy-1')].flatMap((from) =>
      ['node:n1', 'node:n2'].map((to) => [from, to, true] as const),
    );
    await check('TCP', 34345, cells);
    await check('UDP', 34347, cells);
  });

  it('Admin: Accept to hufflepuff, then Deny ::/0 and 0.0.0.0/0 — own node (INPUT) and other node time out; hufflepuff on the other node is reached through the gateway, whose ND passes INPUT', async () => {
    c().setClusterPolicies([
      adminEgress('gryffindor-egress', 10, [
        { name: 'accept-hufflepuff', action: 'Accept', to: [house('hufflepuff')] },
        { name: 'deny-everything', action: 'Deny', to: [{ networks: ['::/0', '0.0.0.0/0'] }] },
      ]),
    ]);
    await c().apply();
    const hp0 = pod('harry-potter-0');
    await check('TCP', 34345, [
      [hp0, 'node:n1', false], // own node: INPUT
      [hp0, 'node:n2', false], // other node: FORWARD
      [pod('draco-malfoy-0'), 'node:n1', true], // not a subject
    ]);
    await check('UDP', 34347, [
      [hp0, 'node:n1', false],
      [pod('draco-malfoy-0'), 'node:n1', true],
    ]);
    await check('TCP', 80, [
      [hp0, pod('cedric-diggory-1'), true], // off the bridge: needs ND to the gateway through INPUT
      [hp0, pod('cedric-diggory-0'), true], // same bridge: ND through FORWARD
      [hp0, pod('luna-lovegood-1'), false],
    ]);
  });

  it('netfence diff finds both nodes in sync with the IPv6 INPUT side, and ip6tables INPUT jumps to it first', async () => {
    for (const node of c().sandbox.nodes()) {
      const input = await iptables(node.netns, 'nft', ['-S', 'INPUT'], 6);
      expect(input.split('\n').filter((l) => l.startsWith('-A INPUT'))[0]).toMatch(/-j nf-INPUT/);
      let text = '';
      const file = c().manifestFile();
      const code = await main(
        [
          'diff',
          '--netns',
          node.netns,
          '--node-name',
          node.name,
          ...c()
            .podCidrs(node.name)
            .flatMap((x) => ['--pod-cidr', x]),
          '--log-level',
          'error',
          '--resources',
          file,
        ],
        { out: (t) => void (text += t), err: (t) => void (text += t) },
      );
      expect(`${node.name}: exit ${code}\n${text}`).toBe(`${node.name}: exit 0\n${text}`);
    }
  });

  it("netfence trace --family 6 walks INPUT for the node's own IPv6 address and names the CNP rule that dropped it", async () => {
    const n1 = c()
      .sandbox.nodes()
      .find((n) => n.name === 'n1')!;
    let text = '';
    const argv = [
      'trace',
      '--netns',
      n1.netns,
      '--node-name',
      'n1',
      // No --pod-cidr: trace reads the node's from its Node object (and refuses settings it does not read).
      '--log-level',
      'error',
      '--resources',
      c().manifestFile(),
    ];
    const code = await main(
      [...argv, '--family', '6', '--src', pod('harry-potter-0'), '--dst', n1.ipv6!.underlayIp, '--proto', 'tcp', '--port', '34345'],
      { out: (t) => void (text += t), err: (t) => void (text += t) },
    );
    expect(code).toBe(1);
    expect(text).toMatch(/enters INPUT in cni0/);
    expect(text).toMatch(/verdict DROP: denied by ClusterNetworkPolicy gryffindor-egress rule egress:1\s+deny-everything\s+Deny/);
  });
});
