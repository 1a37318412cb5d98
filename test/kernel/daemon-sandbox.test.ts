// Two netfence daemons, one per sandbox node, watching one (fake) API server: conformance-style steps
// that change the cluster while the daemons run (create a policy, relabel a pod, edit the policy, add a
// pod) and check the TCP 80 reachability matrix after each, with no restart in between. Also: nothing
// reaches the kernel before the first full list, /readyz and /metrics tell the truth, and stopping a
// daemon leaves its rules enforcing.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatMatrix, matrixOf, probeMatrix, waitForMatrix, type Matrix } from '../../sandbox/index.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  httpGet,
  metricSum,
  metricValue,
  namespaceObject,
  nodeObject,
  ownedChains,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type Labels,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(60_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
// Same node and cross node, same namespace and cross namespace.
const PODS: readonly { namespace: string; name: string; node: string; labels: Labels }[] = [
  { namespace: 'x', name: 'a', node: 'n1', labels: { app: 'a' } },
  { namespace: 'x', name: 'b', node: 'n1', labels: { app: 'b' } },
  { namespace: 'y', name: 'a', node: 'n2', labels: { app: 'a' } },
  { namespace: 'y', name: 'b', node: 'n2', labels: { app: 'b' } },
  { namespace: 'z', name: 'c', node: 'n1', labels: { app: 'c' } },
];
const NAMESPACES: Readonly<Record<string, Labels>> = { x: { team: 'x' }, y: { team: 'y' }, z: { team: 'z' } };

/** x/a accepts TCP 80 from the pods `from` selects; the policy under test, created then edited. */
function allowToA(from: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'allow-to-a', namespace: 'x' },
    spec: {
      podSelector: { matchLabels: { app: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [from], ports: [{ protocol: 'TCP', port: 80 }] }],
    },
  };
}

interface Step {
  readonly name: string;
  /** Changes the cluster (API objects, and the sandbox when a pod is added). */
  readonly act: (ctx: Ctx) => Promise<void>;
  /** Whether `from` reaches `to` on TCP 80 afterwards; every pod reaches itself. */
  readonly reachable: (from: string, to: string) => boolean;
}

interface Ctx {
  readonly server: FakeApiServer;
  readonly sandbox: Sandbox;
}

const podOf = (ctx: Ctx, key: string): SandboxPod => {
  const pod = ctx.sandbox.pods().find((p) => p.key === key);
  if (!pod) throw new Error(`no sandbox pod ${key}`);
  return pod;
};

const relabel = async (ctx: Ctx, key: string, labels: Labels): Promise<void> => {
  ctx.server.update(podObject(podOf(ctx, key), labels));
};

const STEPS: readonly Step[] = [
  {
    name: 'no policies: every pod reaches every pod',
    act: async () => undefined,
    reachable: () => true,
  },
  {
    name: 'policy created: x/a only from app=b pods of its namespace',
    act: async ({ server }) => void server.create(allowToA({ podSelector: { matchLabels: { app: 'b' } } })),
    reachable: (from, to) => to !== 'x/a' || from === to || from === 'x/b',
  },
  {
    name: 'pod relabelled: x/b loses app=b, so x/a is closed to it',
    act: (ctx) => relabel(ctx, 'x/b', { app: 'c' }),
    reachable: (from, to) => to !== 'x/a' || from === to,
  },
  {
    name: 'policy edited: x/a from every pod of namespaces labelled team=y',
    act: async ({ server }) => void server.update(allowToA({ namespaceSelector: { matchLabels: { team: 'y' } } })),
    reachable: (from, to) => to !== 'x/a' || from === to || from.startsWith('y/'),
  },
  {
    name: 'pod added on n2 with app=a in x: the policy isolates it at once',
    act: async (ctx) => {
      const pod = await ctx.sandbox.addPod({ namespace: 'x', name: 'd', node: 'n2' });
      ctx.server.create(podObject(pod, { app: 'a' }));
    },
    reachable: (from, to) => !(to === 'x/a' || to === 'x/d') || from === to || from.startsWith('y/'),
  },
  {
    name: 'policy deleted: everything open again',
    act: async ({ server }) => server.delete({ kind: 'NetworkPolicy', metadata: { name: 'allow-to-a', namespace: 'x' } }),
    reachable: () => true,
  },
];

function expectedMatrix(sandbox: Sandbox, step: Step): Matrix {
  const keys = sandbox.pods().map((p) => p.key);
  return matrixOf(keys, keys, (from, to) => from === to || step.reachable(from, to));
}

describeKernel('daemons in the sandbox, one per node, watching one API server', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  const daemons: NodeDaemon[] = [];
  let release: (() => void) | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-daemon-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map(({ labels: _l, ...p }) => sandbox.addPod(p)));
    server = new FakeApiServer();
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const [name, l] of Object.entries(NAMESPACES)) server.create(namespaceObject(name, l));
    for (const p of PODS)
      server.create(
        podObject(
          sandbox.pods().find((s) => s.key === `${p.namespace}/${p.name}`)!,
          p.labels,
        ),
      );
    // Hold the Node list: neither daemon may write anything until it has every kind listed once.
    release = server.holdLists('nodes');
    const kubeconfig = server.writeKubeconfig(dir);
    for (const node of sandbox.nodes()) daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10' }));
  });

  afterAll(async () => {
    release?.();
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const dumpLogs = (): string => daemons.map((d) => `--- ${d.node.name}\n${d.logs.slice(-30).join('\n')}`).join('\n');

  it('writes nothing to the kernel and is not ready before the first full list', async () => {
    // The other kinds are listed and watched; only the held Node list is missing.
    await waitUntil('both daemons watching pods, namespaces and policies', () =>
      (['pods', 'namespaces', 'networkpolicies'] as const).every((r) => server.watchCount(r) >= 2),
    );
    for (const d of daemons) {
      expect(await ownedChains(d.node.netns)).toEqual([]);
      const ready = await httpGet(`${d.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(metricValue((await httpGet(`${d.url}/metrics`)).body, 'netfence_ready')).toBe(0);
    }
    release?.();
    release = undefined;
    await Promise.all(daemons.map((d) => waitReady(d)));
    for (const d of daemons) expect(await ownedChains(d.node.netns)).toContain('nf-FORWARD');
  });

  it.each(STEPS.map((s) => [s.name, s] as const))('%s', async (_name, step) => {
    await step.act({ server, sandbox });
    const expected = expectedMatrix(sandbox, step);
    const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: 80, deadlineMs: 15_000 });
    if (!result.ok) {
      throw new Error(
        `matrix did not converge after ${result.rounds} rounds:\n${formatMatrix(result.observed, { expected })}\n${dumpLogs()}`,
      );
    }
    expect(formatMatrix(result.observed)).toEqual(formatMatrix(expected));
  });

  it('serves /healthz and /metrics: ready, with syncs and events counted', async () => {
    for (const d of daemons) {
      expect((await httpGet(`${d.url}/healthz`)).status).toBe(200);
      const metrics = (await httpGet(`${d.url}/metrics`)).body;
      expect(metricValue(metrics, 'netfence_ready')).toBe(1);
      // The first sync plus at least one per step that changed the cluster, on each node. (Summed over
      // both kinds: the daemon labels a sync by what woke it, so the first full sync counts as incremental.)
      expect(metricSum(metrics, 'netfence_sync_duration_seconds_count')).toBeGreaterThanOrEqual(STEPS.length);
      expect(metricValue(metrics, 'netfence_events_total{kind="pod"}')).toBeGreaterThanOrEqual(2);
      expect(metricValue(metrics, 'netfence_events_total{kind="networkpolicy"}')).toBeGreaterThanOrEqual(3);
      expect(metricSum(metrics, 'netfence_apply_failures_total')).toBe(0);
      expect(metricValue(metrics, 'netfence_rules_programmed')).toBeGreaterThan(0);
    }
  });

  it('leaves the rules enforcing when the daemons stop', async () => {
    // Close the app=a pods again so "rules stay" is visible as blocked cells, not only as chains in a dump.
    server.create(allowToA({ podSelector: { matchLabels: { app: 'nothing' } } }));
    const keys = sandbox.pods().map((p) => p.key);
    const closed = matrixOf(keys, keys, (from, to) => from === to || (to !== 'x/a' && to !== 'x/d'));
    const converged = await waitForMatrix(sandbox, closed, { protocol: 'TCP', port: 80, deadlineMs: 15_000 });
    expect(formatMatrix(converged.observed)).toEqual(formatMatrix(closed));

    const before = await Promise.all(daemons.map((d) => ownedChains(d.node.netns)));
    await Promise.all(daemons.map((d) => d.stop()));
    // A change after the stop must not be picked up, and the old rules must keep enforcing.
    server.update(allowToA({ namespaceSelector: { matchLabels: { team: 'y' } } }));
    expect(await Promise.all(daemons.map((d) => ownedChains(d.node.netns)))).toEqual(before);
    const after = await probeMatrix(sandbox, { protocol: 'TCP', port: 80 });
    expect(formatMatrix(after)).toEqual(formatMatrix(closed));
    await expect(httpGet(`${daemons[0]!.url}/healthz`)).rejects.toThrow();
  });

  it('after a restart, enforces the policies it finds in its first list', async () => {
    // The policy edited while the daemons were down now reaches them through a list, not a watch event.
    const kubeconfig = server.writeKubeconfig(dir);
    const restarted = await Promise.all(sandbox.nodes().map((node) => startNodeDaemon(node, { kubeconfig })));
    daemons.push(...restarted);
    await Promise.all(restarted.map((d) => waitReady(d)));
    const keys = sandbox.pods().map((p) => p.key);
    const expected = matrixOf(keys, keys, (from, to) => from === to || !(to === 'x/a' || to === 'x/d') || from.startsWith('y/'));
    const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: 80, deadlineMs: 10_000 });
    if (!result.ok) throw new Error(`matrix after restart:\n${formatMatrix(result.observed, { expected })}`);
  });
});
