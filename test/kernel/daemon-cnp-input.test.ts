// The daemon and the INPUT side of ClusterNetworkPolicy (egress to the pod's own node), on real packets:
// it adds the INPUT jump when a CNP appears in its manifests, repairs the jump when someone deletes it (the
// drift check, resync interval 1 s here), and removes it with the last CNP. harry-potter-0 (gryffindor) lives
// on n1; `node:n1` is n1's own agent on its InternalIP. A Deny must time out (silent DROP).
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns daemon-cnp-input

import { jest } from '@jest/globals';
import { HouseCluster, ns, pod, type CnpDoc } from '../helpers/conformance-cnp/houses.js';
import { startNodeDaemon, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { iptables, iptablesSave } from '../helpers/kernel-asserts.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const DENY_NODES: CnpDoc = {
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'deny-nodes' },
  spec: {
    tier: 'Admin',
    priority: 10,
    subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': ns('gryffindor') } } },
    egress: [{ name: 'no-nodes', action: 'Deny', to: [{ nodes: {} }] }],
  },
};

describeKernel('daemon: ClusterNetworkPolicy egress to the own node (INPUT)', () => {
  let cluster: HouseCluster | undefined;
  let daemon: NodeDaemon | undefined;
  const c = (): HouseCluster => cluster!;
  // HouseCluster's manifest writer is private: the List file it would apply.
  const writeManifest = (): string => (c() as unknown as { write(): string }).write();
  const n1 = () =>
    c()
      .sandbox.nodes()
      .find((n) => n.name === 'n1')!;
  const hookPresent = async () => /^-A INPUT .*-j nf-INPUT$/m.test(await iptablesSave(n1().netns, 'nft', 'filter'));
  const expectCells = async (cells: readonly (readonly [string, string, boolean])[]) => {
    const wrong = await c().expect('TCP', 80, cells);
    if (wrong) throw new Error(`${wrong}\n${daemon?.logs.slice(-15).join('\n') ?? ''}`);
  };

  beforeAll(async () => {
    cluster = await HouseCluster.create();
    c().setClusterPolicies([DENY_NODES]);
    const file = writeManifest();
    daemon = await startNodeDaemon(
      n1(),
      { resources: [file] },
      { 'resync-interval-seconds': '1', backend: 'nft', 'batch-window-ms': '10' },
    );
  }, 120_000);
  afterAll(async () => {
    await daemon?.stop().catch(() => undefined);
    await cluster?.destroy();
  }, 120_000);

  it('a CNP in the manifests: the INPUT jump is programmed and the subject times out to its own node', async () => {
    await waitUntil('INPUT jump programmed', hookPresent, 15_000);
    await expectCells([
      [pod('harry-potter-0'), 'node:n1', false],
      [pod('draco-malfoy-0'), 'node:n1', true],
    ]);
  });

  it('the INPUT jump deleted by someone else: the drift check puts it back and the Deny holds again', async () => {
    const ours = (await iptables(n1().netns, 'nft', ['-S', 'INPUT'])).split('\n').find((l) => /-j nf-INPUT$/.test(l))!;
    const started = Date.now();
    await iptables(n1().netns, 'nft', ['-D', 'INPUT', '1']);
    expect(await hookPresent()).toBe(false);
    await waitUntil('INPUT jump repaired', hookPresent, 10_000);
    const repairedMs = Date.now() - started;
    expect((await iptables(n1().netns, 'nft', ['-S', 'INPUT'])).split('\n')).toContain(ours);
    await expectCells([[pod('harry-potter-0'), 'node:n1', false]]);
    // A figure, not an assertion: bounded by the resync interval (1 s) plus one sync.
    process.stdout.write(`INPUT jump repaired ${repairedMs} ms after its deletion (resync interval 1 s)\n`);
  });

  it('the last CNP removed from the manifests: the INPUT jump and chains go, the node is reachable again', async () => {
    c().setClusterPolicies([]);
    writeManifest();
    await waitUntil('INPUT jump removed', async () => !(await hookPresent()), 15_000);
    expect(await iptablesSave(n1().netns, 'nft', 'filter')).not.toMatch(/nf-INPUT|nf-to-host|nf-fh-/);
    await expectCells([[pod('harry-potter-0'), 'node:n1', true]]);
  });
});
