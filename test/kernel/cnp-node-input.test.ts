// ClusterNetworkPolicy egress to the pod's OWN node, on real packets. A pod's packet to an address of its
// own node is delivered through INPUT, never FORWARD; netfence hooks INPUT while ClusterNetworkPolicies
// exist and runs the pod's CNP egress tiers there (NetworkPolicy keeps "traffic to and from the node where
// a Pod is running is always allowed"). The node's own agent (`node:n1`, on the node's InternalIP) plays
// the hostNetwork "centaur" pod of the upstream suite; harry-potter-0 / draco-malfoy-0 live on n1, the -1
// replicas on n2. A Deny must time out (a silent DROP), as upstream's prober demands.
//
// Expectations from the API: `nodes` "selects the nodeIPs … by matching on the IPs present in the
// node.Status.Addresses field" (an empty selector: every node); `networks` "cluster-internal traffic will
// be checked against the rule as well"; rules in order, "the first match wins"; Admin before NetworkPolicy.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns cnp-node-input

import { jest } from '@jest/globals';
import { main } from '../../src/cli/main.js';
import { HouseCluster, ns, pod, type CnpDoc } from '../helpers/conformance-cnp/houses.js';
import { iptables, iptablesSave } from '../helpers/kernel-asserts.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(180_000);

const GRYFFINDOR = { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': ns('gryffindor') } } };
const ALL_NODES = { nodes: {} };
const nodeNamed = (n: string) => ({ nodes: { matchLabels: { 'kubernetes.io/hostname': n } } });

function adminEgress(name: string, priority: number, egress: readonly Record<string, unknown>[]): CnpDoc {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier: 'Admin', priority, subject: GRYFFINDOR, egress },
  };
}

const audited = (doc: CnpDoc): CnpDoc => ({ ...doc, metadata: { ...doc.metadata, annotations: { 'netfence.io/mode': 'audit' } } });

/** Runs a netfence command in-process: its exit code and everything it printed. */
async function netfence(argv: readonly string[]): Promise<{ code: number; text: string }> {
  let text = '';
  const code = await main(argv, { out: (t) => void (text += t), err: (t) => void (text += t) });
  return { code, text };
}

describeKernel('ClusterNetworkPolicy egress to the local node goes through INPUT', () => {
  let cluster: HouseCluster | undefined;
  const c = (): HouseCluster => cluster!;
  const n1 = () =>
    c()
      .sandbox.nodes()
      .find((n) => n.name === 'n1')!;
  /** The backend netfence chose on n1 (it follows the foreign rules the sandbox wrote: nft here). */
  const save = () => iptablesSave(n1().netns, 'nft', 'filter');
  // The List manifest HouseCluster applies (its writer is private to that helper).
  const manifest = (): string => (c() as unknown as { write(): string }).write();
  const nodeArgs = () => ['--netns', n1().netns, '--node-name', 'n1', '--pod-cidr', n1().podCidr, '--log-level', 'error'];
  // trace reads no --pod-cidr setting (it refuses settings it does not read): the node's comes from its Node object.
  const traceArgs = () => ['--netns', n1().netns, '--node-name', 'n1', '--log-level', 'error'];

  beforeAll(async () => {
    cluster = await HouseCluster.create();
    await cluster.reset();
  }, 120_000);
  afterAll(async () => {
    await cluster?.destroy();
  }, 120_000);

  const expectCells = async (proto: 'TCP' | 'UDP', port: number, cells: readonly (readonly [string, string, boolean])[]) => {
    const wrong = await c().expect(proto, port, cells);
    if (wrong) throw new Error(`${wrong}\napply log:\n${c().applyLog.join('\n')}`);
  };

  it('no ClusterNetworkPolicy: nothing of netfence in INPUT, every pod reaches both nodes', async () => {
    expect(await save()).not.toMatch(/nf-INPUT/);
    await expectCells('TCP', 80, [
      [pod('harry-potter-0'), 'node:n1', true],
      [pod('harry-potter-0'), 'node:n2', true],
    ]);
  });

  it('Admin Deny of every node: the subject times out to its own node (INPUT) and the other node (FORWARD); others pass', async () => {
    c().setClusterPolicies([adminEgress('deny-nodes', 10, [{ name: 'no-nodes', action: 'Deny', to: [ALL_NODES] }])]);
    await c().apply();
    expect(await save()).toMatch(/^-A INPUT .*-j nf-INPUT$/m);
    const cells = [
      [pod('harry-potter-0'), 'node:n1', false],
      [pod('harry-potter-0'), 'node:n2', false],
      [pod('harry-potter-1'), 'node:n2', false],
      [pod('harry-potter-1'), 'node:n1', false],
      [pod('draco-malfoy-0'), 'node:n1', true],
      [pod('draco-malfoy-1'), 'node:n2', true],
    ] as const;
    await expectCells('TCP', 80, cells);
    await expectCells('TCP', 8080, cells);
    // UDP only across nodes: the sandbox's node agent answers UDP from the address its route picks (the
    // cni0 gateway, not the InternalIP asked), so a pod never gets a UDP answer from its own node at all.
    await expectCells('UDP', 53, [
      [pod('harry-potter-0'), 'node:n2', false],
      [pod('draco-malfoy-0'), 'node:n2', true],
    ]);
    // Pod to pod is untouched by a nodes peer.
    await expectCells('TCP', 80, [[pod('harry-potter-0'), pod('draco-malfoy-0'), true]]);

    // The kernel holds exactly what was compiled (the INPUT chains read back without a difference).
    const diff = await netfence(['diff', ...nodeArgs(), '--resources', manifest()]);
    expect({ code: diff.code, text: diff.text }).toMatchObject({ code: 0 });

    // trace walks INPUT for the node's own address and names the CNP rule; inspect shows the pod's chain.
    const node1 = n1().underlayIp;
    const trace = await netfence([
      'trace',
      ...traceArgs(),
      '--resources',
      manifest(),
      '--src',
      pod('harry-potter-0'),
      '--dst',
      node1,
      '--proto',
      'tcp',
      '--port',
      '80',
    ]);
    expect(trace.code).toBe(1);
    expect(trace.text).toMatch(/enters INPUT in cni0/);
    expect(trace.text).toMatch(/verdict DROP: denied by ClusterNetworkPolicy deny-nodes rule egress:0 no-nodes\s+Deny/);
    const allowedTrace = await netfence([
      'trace',
      ...traceArgs(),
      '--to-node',
      '--src',
      pod('draco-malfoy-0'),
      '--dst',
      node1,
      '--proto',
      'tcp',
      '--port',
      '80',
      '--resources',
      manifest(),
    ]);
    expect(allowedTrace.code).toBe(0);
    const inspect = await netfence(['inspect', '--netns', n1().netns, '--log-level', 'error', '--pod', pod('harry-potter-0')]);
    expect(inspect.text).toMatch(/to node {2}ClusterNetworkPolicy egress \(1 chain/);
  });

  // A kubelet probe: the node opens the connection (from its cni0 address, the route's source towards a local
  // pod), so the pod's replies belong to a flow the pod did not initiate. A Deny of all the subject's egress
  // covers that address ("networks": cluster-internal traffic is checked too), yet a reply opens no
  // connection and must pass INPUT: nf-INPUT returns ESTABLISHED before any tier is walked.
  it("Admin Deny of all egress: the node still reaches the subject (a kubelet probe), the pod's replies pass INPUT", async () => {
    // Every pod, node and cni0 address of the sandbox is in 10.0.0.0/8.
    c().setClusterPolicies([adminEgress('deny-all-egress', 10, [{ name: 'nothing', action: 'Deny', to: [{ networks: ['10.0.0.0/8'] }] }])]);
    await c().apply();
    try {
      // The Deny holds for the pod's own connections, to its node and to another pod.
      await expectCells('TCP', 80, [
        [pod('harry-potter-0'), 'node:n1', false],
        [pod('harry-potter-0'), pod('draco-malfoy-0'), false],
      ]);
      await expectCells('TCP', 80, [
        ['node:n1', pod('harry-potter-0'), true],
        ['node:n2', pod('harry-potter-1'), true],
      ]);
      await expectCells('TCP', 8080, [['node:n1', pod('harry-potter-0'), true]]);
    } finally {
      c().setClusterPolicies([adminEgress('deny-nodes', 10, [{ name: 'no-nodes', action: 'Deny', to: [ALL_NODES] }])]);
      await c().apply();
    }
  });

  it('drift: the INPUT jump deleted by someone else opens the node, diff reports it, the next apply restores it', async () => {
    const rules = (await iptables(n1().netns, 'nft', ['-S', 'INPUT'])).split('\n');
    const ours = rules.find((l) => /-j nf-INPUT$/.test(l));
    expect(ours).toBeDefined();
    await iptables(n1().netns, 'nft', ['-D', ...splitRule(ours!).slice(1)]);
    await expectCells('TCP', 80, [[pod('harry-potter-0'), 'node:n1', true]]);
    const diff = await netfence(['diff', ...nodeArgs(), '--resources', manifest()]);
    expect(diff.code).toBe(1);
    expect(diff.text).toMatch(/INPUT/);
    await c().apply();
    await expectCells('TCP', 80, [[pod('harry-potter-0'), 'node:n1', false]]);
  });

  it('rule order: an Accept of n1 first wins over the Deny of every node; priority: a later CNP cannot undo it', async () => {
    c().setClusterPolicies([
      adminEgress('deny-nodes', 10, [
        { name: 'accept-n1', action: 'Accept', to: [nodeNamed('n1')] },
        { name: 'no-nodes', action: 'Deny', to: [ALL_NODES] },
      ]),
      adminEgress('deny-underlay', 20, [{ name: 'no-underlay', action: 'Deny', to: [{ networks: ['10.99.0.0/24'] }] }]),
    ]);
    await c().apply();
    await expectCells('TCP', 80, [
      [pod('harry-potter-0'), 'node:n1', true],
      [pod('harry-potter-0'), 'node:n2', false],
      [pod('harry-potter-1'), 'node:n1', true],
      [pod('harry-potter-1'), 'node:n2', false],
    ]);
  });

  it('a networks peer covering the node address, on one port: that port times out, another passes', async () => {
    c().setClusterPolicies([
      adminEgress('deny-underlay-80', 5, [
        {
          name: 'no-underlay-80',
          action: 'Deny',
          to: [{ networks: ['10.99.0.0/24'] }],
          protocols: [{ tcp: { destinationPort: { number: 80 } } }],
        },
      ]),
    ]);
    await c().apply();
    await expectCells('TCP', 80, [[pod('harry-potter-0'), 'node:n1', false]]);
    await expectCells('TCP', 8080, [[pod('harry-potter-0'), 'node:n1', true]]);
  });

  // Audit mode (docs/audit.md): an audited CNP is programmed but not enforced, on the way to the own node
  // too. An audited Deny drops nothing; an audited Accept above an enforced Deny lets nothing through it.
  it('audit mode: an audited Deny of every node drops nothing; an audited Accept of n1 above an enforced Deny opens nothing', async () => {
    c().setClusterPolicies([audited(adminEgress('audit-deny-nodes', 10, [{ name: 'no-nodes', action: 'Deny', to: [ALL_NODES] }]))]);
    await c().apply();
    expect(await save()).toMatch(/^-A INPUT .*-j nf-INPUT$/m);
    await expectCells('TCP', 80, [
      [pod('harry-potter-0'), 'node:n1', true],
      [pod('harry-potter-1'), 'node:n1', true],
    ]);
    c().setClusterPolicies([
      audited(adminEgress('audit-accept-n1', 5, [{ name: 'n1', action: 'Accept', to: [nodeNamed('n1')] }])),
      adminEgress('deny-nodes', 10, [{ name: 'no-nodes', action: 'Deny', to: [ALL_NODES] }]),
    ]);
    await c().apply();
    await expectCells('TCP', 80, [
      [pod('harry-potter-0'), 'node:n1', false],
      [pod('harry-potter-1'), 'node:n1', false],
      [pod('draco-malfoy-0'), 'node:n1', true],
    ]);
  });

  it('every CNP deleted: the INPUT jump and chains are removed in the same apply, and the node is open again', async () => {
    c().setClusterPolicies([]);
    await c().apply();
    expect(await save()).not.toMatch(/nf-INPUT|nf-to-host|nf-fh-/);
    await expectCells('TCP', 80, [[pod('harry-potter-0'), 'node:n1', true]]);
  });

  it('cleanup removes the INPUT jump and chains with the rest', async () => {
    c().setClusterPolicies([adminEgress('deny-nodes', 10, [{ name: 'no-nodes', action: 'Deny', to: [ALL_NODES] }])]);
    await c().apply();
    expect(await save()).toMatch(/nf-INPUT/);
    const cleanup = await netfence(['cleanup', '--netns', n1().netns, '--log-level', 'error']);
    expect(cleanup.code).toBe(0);
    expect(await save()).not.toMatch(/nf-/);
    await expectCells('TCP', 80, [[pod('harry-potter-0'), 'node:n1', true]]);
  });
});

/** `-A INPUT -m comment --comment "nf:… text" -j nf-INPUT` → argv, honouring the quoted comment. */
function splitRule(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1] : m[2]!));
}
