// Two daemons watching one fake API server that serves the ClusterNetworkPolicy CRD: CNPs created,
// patched (action → Pass, rules reordered, priority changed) and deleted while the daemons run, and the
// TCP 80 matrix observed after each step within the upstream 10 s poke window, with a NetworkPolicy and a
// namespace relabel in between. Every blocked cell must time out (Deny is a silent DROP).

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatMatrix, matrixOf, waitForMatrix, type Matrix } from '../../sandbox/index.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  type Labels,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(60_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
const PODS = [
  { namespace: 'gryffindor', name: 'a', node: 'n1' },
  { namespace: 'gryffindor', name: 'b', node: 'n2' },
  { namespace: 'slytherin', name: 'a', node: 'n1' },
  { namespace: 'slytherin', name: 'b', node: 'n2' },
  { namespace: 'hufflepuff', name: 'a', node: 'n2' },
];
const house = (h: string) => ({ matchLabels: { house: h } });

function cnp(name: string, tier: 'Admin' | 'Baseline', priority: number, ingress: readonly Record<string, unknown>[]): KubeObject {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier, priority, subject: { namespaces: house('gryffindor') }, ingress },
  };
}
const fromHouse = (action: string, h: string, name = `${action.toLowerCase()}-${h}`) => ({
  name,
  action,
  from: [{ namespaces: house(h) }],
});

interface Step {
  readonly name: string;
  readonly act: (server: FakeApiServer) => void;
  /** Whether `from` reaches `to` on TCP 80 afterwards. */
  readonly reachable: (from: string, to: string) => boolean;
}

const intoG = (to: string) => to.startsWith('gryffindor/');
const STEPS: readonly Step[] = [
  { name: 'no ClusterNetworkPolicy: all open', act: () => undefined, reachable: () => true },
  {
    name: 'Admin CNP created: Deny slytherin into gryffindor',
    act: (s) => void s.create(cnp('guard', 'Admin', 20, [fromHouse('Deny', 'slytherin')])),
    reachable: (from, to) => !(intoG(to) && from.startsWith('slytherin/')),
  },
  {
    name: 'action changed to Pass (nothing below decides): open again',
    act: (s) => void s.update(cnp('guard', 'Admin', 20, [fromHouse('Pass', 'slytherin')])),
    reachable: () => true,
  },
  {
    name: 'Baseline CNP created: Deny hufflepuff and slytherin (Admin passes slytherin to it)',
    act: (s) => void s.create(cnp('baseline', 'Baseline', 1, [fromHouse('Deny', 'hufflepuff'), fromHouse('Deny', 'slytherin')])),
    reachable: (from, to) => !(intoG(to) && (from.startsWith('slytherin/') || from.startsWith('hufflepuff/'))),
  },
  {
    name: 'NetworkPolicy in gryffindor allows slytherin: Baseline no longer reached',
    act: (s) =>
      void s.create({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { namespace: 'gryffindor', name: 'from-slytherin' },
        spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: house('slytherin') }] }] },
      }),
    // Isolated by the NetworkPolicy: only slytherin (passed over by Admin) gets in; gryffindor's own pods too are shut out.
    reachable: (from, to) => !intoG(to) || from === to || from.startsWith('slytherin/'),
  },
  {
    name: 'Admin rules reordered: an Accept of gryffindor first, then the Pass',
    act: (s) => void s.update(cnp('guard', 'Admin', 20, [fromHouse('Accept', 'gryffindor'), fromHouse('Pass', 'slytherin')])),
    reachable: (from, to) => !intoG(to) || from.startsWith('gryffindor/') || from.startsWith('slytherin/'),
  },
  {
    name: 'a second Admin CNP at priority 30 denies slytherin; priority moved to 10 it wins over the Pass',
    act: (s) => {
      s.create(cnp('deny-slytherin', 'Admin', 30, [fromHouse('Deny', 'slytherin')]));
      s.update(cnp('deny-slytherin', 'Admin', 10, [fromHouse('Deny', 'slytherin')]));
    },
    reachable: (from, to) => !intoG(to) || from.startsWith('gryffindor/'),
  },
  {
    name: 'hufflepuff relabelled house=gryffindor: subject and Accept peer both take it in',
    act: (s) => void s.update(namespaceObject('hufflepuff', { house: 'gryffindor' })),
    // hufflepuff/a is now a subject (its ingress: Accept from house=gryffindor namespaces, Deny slytherin), and a peer.
    reachable: (from, to) =>
      !(intoG(to) || to.startsWith('hufflepuff/')) || from.startsWith('gryffindor/') || from.startsWith('hufflepuff/'),
  },
  {
    name: 'every CNP and the NetworkPolicy deleted: all open',
    act: (s) => {
      for (const name of ['guard', 'baseline', 'deny-slytherin']) s.delete({ kind: 'ClusterNetworkPolicy', metadata: { name } });
      s.delete({ kind: 'NetworkPolicy', metadata: { namespace: 'gryffindor', name: 'from-slytherin' } });
    },
    reachable: () => true,
  },
];

describeKernel('daemons enforce ClusterNetworkPolicy changes live', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  const daemons: NodeDaemon[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-daemon-cnp-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map((p) => sandbox.addPod(p)));
    server = new FakeApiServer({ clusterNetworkPolicyCrd: true });
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const h of ['gryffindor', 'slytherin', 'hufflepuff']) server.create(namespaceObject(h, { house: h } as Labels));
    for (const p of sandbox.pods()) server.create(podObject(p, { app: p.name }));
    const kubeconfig = server.writeKubeconfig(dir);
    for (const node of sandbox.nodes()) daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10' }));
    await Promise.all(daemons.map((d) => waitReady(d)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(STEPS.map((s) => [s.name, s] as const))('%s', async (_name, step) => {
    step.act(server);
    const keys = sandbox.pods().map((p) => p.key);
    const expected: Matrix = matrixOf(keys, keys, (from, to) => from === to || step.reachable(from, to));
    const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: 80, deadlineMs: 10_000, timeoutMs: 500 });
    const logs = () => daemons.map((d) => `--- ${d.node.name}\n${d.logs.slice(-20).join('\n')}`).join('\n');
    if (!result.ok)
      throw new Error(`not converged within 10 s (${result.rounds} rounds):\n${formatMatrix(result.observed, { expected })}\n${logs()}`);
    const refused = Object.entries(result.observed.errors).filter(([, e]) => !/timeout/i.test(e));
    expect(refused).toEqual([]);
  });
});
