// `netfence trace` must agree with the kernel: in the sandbox, for every ordered pod pair, protocol and
// port, the verdict traced over each node's saved ruleset equals what real packets observed.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { parseIpsetSave } from '../../src/render/index.js';
import { createSandbox, probeMatrix, type Sandbox, type SandboxNode, type SandboxPod } from '../../sandbox/index.js';
import { loadRuleset, packetFor, tracePacket } from '../../src/trace/index.js';
import { describeKernel } from '../helpers/netns.js';

const PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;
const PORTS = [80, 81] as const;

function podManifest(p: SandboxPod): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: p.namespace, name: p.name, labels: { pod: p.name } },
    spec: {
      nodeName: p.node,
      containers: [
        {
          name: 'agent',
          ports: PORTS.flatMap((port) =>
            PROTOCOLS.map((proto) => ({ name: `serve-${port}-${proto}`, containerPort: port, protocol: proto.toUpperCase() })),
          ),
        },
      ],
    },
    status: { phase: 'Running', podIP: p.ip },
  };
}

// Policies that exercise ingress and egress, selectors, ipBlock except over a pod IP, named ports, UDP and SCTP.
const policies = (sb: Sandbox): object[] => {
  const xb = sb.pods().find((p) => p.key === 'x/b')!.ip;
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'x', name: 'deny-ingress' },
      spec: { podSelector: {} },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'x', name: 'a-from-y' },
      spec: {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }],
            ports: [{ port: 80 }, { protocol: 'SCTP', port: 81 }, { protocol: 'UDP', port: 'serve-81-udp' }],
          },
        ],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'y', name: 'b-egress' },
      spec: {
        podSelector: { matchLabels: { pod: 'b' } },
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ ipBlock: { cidr: '10.244.0.0/16', except: [`${xb}/32`] } }],
            ports: [{ protocol: 'UDP', port: 80 }, { port: 'serve-81-tcp' }],
          },
        ],
      },
    },
  ];
};

describeKernel('trace agrees with the kernel', () => {
  let sb: Sandbox;
  let dir: string;
  const io = { out: () => {}, err: () => {} };

  beforeAll(async () => {
    sb = await createSandbox({
      nodes: [
        { name: 'n1', podCidr: '10.244.1.0/24' },
        { name: 'n2', podCidr: '10.244.2.0/24' },
      ],
    });
    for (const [ns, name, node] of [
      ['x', 'a', 'n1'],
      ['x', 'b', 'n2'],
      ['y', 'a', 'n1'],
      ['y', 'b', 'n2'],
    ] as const) {
      await sb.addPod({ namespace: ns, name, node });
    }
    dir = mkdtempSync(join(tmpdir(), 'nft-trace-'));
    const docs = [
      ...sb.nodes().map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: n.name }, spec: { podCIDR: n.podCidr } })),
      ...['x', 'y'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ns: name } } })),
      ...sb.pods().map(podManifest),
      ...policies(sb),
    ];
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }));
    for (const node of sb.nodes()) {
      expect(await main(['apply', '--netns', node.netns, '--node-name', node.name, '--resources', dir], io)).toBe(0);
    }
  }, 60_000);

  afterAll(async () => {
    await sb?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function nodeView(node: SandboxNode) {
    const rules = (await run('iptables-nft-save', ['-t', 'filter'], { netns: node.netns })).stdout;
    const sets = parseIpsetSave((await run('ipset', ['save'], { netns: node.netns })).stdout);
    return { node, ruleset: loadRuleset(rules), ipsets: sets };
  }

  it.each(PROTOCOLS.flatMap((proto) => PORTS.map((port) => [proto, port] as const)))(
    '%s/%i: traced verdicts equal probed ones',
    async (proto, port) => {
      const views = await Promise.all(sb.nodes().map(nodeView));
      const observed = await probeMatrix(sb, { protocol: proto.toUpperCase() as 'TCP' | 'UDP' | 'SCTP', port, timeoutMs: 500 });
      const disagreements: string[] = [];
      let allowed = 0;
      for (const from of sb.pods()) {
        for (const to of sb.pods()) {
          // Every node the packet crosses must let it through: the sender's (egress) and the receiver's (ingress).
          const crossed = views.filter((v) => v.node.name === from.node || v.node.name === to.node);
          const traced = crossed.every((v) => {
            const packet = packetFor(
              { src: from.ip, dst: to.ip, proto, dport: port },
              { bridge: 'cni0', uplink: 'eth0', podCidrs: [v.node.podCidr] },
            );
            return tracePacket(v.ruleset, v.ipsets, packet).verdict !== 'DROP';
          });
          const probed = observed.cells[from.key]?.[to.key];
          if (probed) allowed++;
          if (traced !== probed)
            disagreements.push(`${from.key} -> ${to.key}: traced ${traced ? 'allow' : 'drop'}, probed ${probed ? 'allow' : 'drop'}`);
        }
      }
      expect(disagreements).toEqual([]);
      // The policies must leave both kinds of cell for this check to mean anything.
      expect(allowed).toBeGreaterThan(0);
      expect(allowed).toBeLessThan(sb.pods().length ** 2);
    },
    60_000,
  );
});
