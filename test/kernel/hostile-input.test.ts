// Hostile and broken inputs against a running daemon, with real packets. One sandbox node, one
// daemon watching a fake API server; each case feeds something an attacker or a careless operator could,
// then proves with TCP probes that the node neither opened traffic nor stopped following later changes.
// The daemon's pod CIDR comes from the Node object (no --pod-cidr), as it would in a cluster.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSysctl } from '../../src/dataplane/sysctl.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  httpGet,
  metricValue,
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type Labels,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(90_000);

const POD_LABELS: Readonly<Record<string, Labels>> = {
  a: { app: 'a' },
  b: { app: 'b' },
  c: { app: 'c' },
  d: { app: 'd' },
  e: { app: 'e' },
  f: { app: 'f', tier: 'a' },
  g: { app: 'g' },
};

const policy = (name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'x' },
  spec,
});

/** Selects app=<target> for ingress and allows nothing. */
const isolate = (name: string, target: string): KubeObject =>
  policy(name, { podSelector: { matchLabels: { app: target } }, policyTypes: ['Ingress'] });

/** A Pod object on n1 that no sandbox pod backs (an imposter, a broken object). */
const fakePod = (name: string, ip: string, labels: Labels, ports: readonly Record<string, unknown>[] = []): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'x', labels: { ...labels } },
  spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'none', ports }] },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});

/** Every 2nd address from 10.200.0.0: /32 excepts that cannot merge into larger blocks. */
const strideExcepts = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `10.200.${Math.floor((2 * i) / 256)}.${(2 * i) % 256}/32`);

/** `n` /32 excepts spread over the whole address space (deterministic), past the per-policy CIDR limit. */
function spreadExcepts(n: number): string[] {
  let x = 99;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return `${(x >>> 24) & 255}.${(x >>> 16) & 255}.${(x >>> 8) & 255}.${x & 255}/32`;
  });
}

describeKernel('hostile and broken inputs against a running daemon', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  let daemon: NodeDaemon;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-hostile-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    await Promise.all(Object.keys(POD_LABELS).map((name) => sandbox.addPod({ namespace: 'x', name, node: 'n1' })));
    server = new FakeApiServer();
    await server.start();
    server.create(nodeObject(sandbox.nodes()[0]!));
    server.create(namespaceObject('x'));
    for (const pod of sandbox.pods()) server.create(podObject(pod, POD_LABELS[pod.name]!));
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      {
        'batch-window-ms': '10',
        'resync-interval-seconds': '1',
        'pod-cidr': [],
      },
    );
    await waitReady(daemon);
  });

  afterAll(async () => {
    await daemon?.stop().catch(() => undefined);
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const ipOf = (name: string): string => sandbox.addressOf(`x/${name}`);
  const reaches = async (from: string, to: string): Promise<boolean> =>
    (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: ipOf(to), port: 80, timeoutMs: 400 })).ok;
  const logTail = (): string => daemon.logs.slice(-25).join('\n');
  const logged = (text: string): boolean => daemon.logs.some((l) => l.includes(text));

  /** Waits until a TCP probe from `from` to `to` gives `want`. */
  async function expectReach(from: string, to: string, want: boolean, timeoutMs = 10_000): Promise<void> {
    try {
      await waitUntil(`x/${from} → x/${to} ${want ? 'open' : 'blocked'}`, async () => (await reaches(from, to)) === want, timeoutMs, 100);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- daemon log tail\n${logTail()}`, { cause: err });
    }
  }

  it('a Node podCIDR of 10.244.1.0/33 is refused as a problem and later changes are still applied', async () => {
    await expectReach('b', 'a', true);
    server.update({ ...nodeObject(sandbox.nodes()[0]!), spec: { podCIDR: '10.244.1.0/33', podCIDRs: ['10.244.1.0/33'] } });
    server.create(isolate('isolate-a', 'a'));
    await expectReach('b', 'a', false);
    expect(logged('10.244.1.0/33')).toBe(true);
    expect(logged('is not a CIDR; ignored')).toBe(true);
    server.update(nodeObject(sandbox.nodes()[0]!));
    await waitReady(daemon);
  });

  it('bridge-nf-call-iptables switched off at runtime: not ready, metric 0, logged; switched on: ready again', async () => {
    const netns = sandbox.nodes()[0]!.netns;
    const precondition = 'netfence_kernel_precondition{check="bridge-nf-call-iptables"}';
    try {
      await writeSysctl('net.bridge.bridge-nf-call-iptables', 0, { netns });
      await waitUntil(
        '/readyz 503 after bridge-nf-call-iptables=0',
        async () => (await httpGet(`${daemon.url}/readyz`)).status === 503,
        10_000,
      );
      expect((await httpGet(`${daemon.url}/readyz`)).body).toContain('bridge-nf-call-iptables is 0');
      expect(metricValue((await httpGet(`${daemon.url}/metrics`)).body, precondition)).toBe(0);
      expect(logged('bridge-nf-call-iptables is not 1')).toBe(true);
    } finally {
      await writeSysctl('net.bridge.bridge-nf-call-iptables', 1, { netns });
    }
    await waitReady(daemon, 10_000);
    expect(metricValue((await httpGet(`${daemon.url}/metrics`)).body, precondition)).toBe(1);
  });

  it('two pods claiming one address: its traffic is dropped, not opened by the first pod by name', async () => {
    server.create(isolate('isolate-b', 'b'));
    await expectReach('c', 'b', false);
    await expectReach('b', 'c', true);
    // x/aaa sorts before x/b, is selected by no policy, and claims b's address.
    server.create(fakePod('aaa', ipOf('b'), { app: 'imposter' }));
    // Egress from the shared address is dropped too: proof the daemon took the imposter in.
    await expectReach('b', 'c', false);
    expect(await reaches('c', 'b')).toBe(false);
    expect(logged('also claimed by another pod')).toBe(true);
    server.delete({ kind: 'Pod', metadata: { name: 'aaa', namespace: 'x' } });
    await expectReach('b', 'c', true);
    expect(await reaches('c', 'b')).toBe(false);
  });

  it('a pod IP 0.0.0.0 and a containerPort 70000 are refused one by one; later changes still apply', async () => {
    server.create(fakePod('zero', '0.0.0.0', { app: 'd-client' }));
    server.create(fakePod('bigport', '10.244.1.250', { app: 'd' }, [{ name: 'web', containerPort: 70000, protocol: 'TCP' }]));
    // Puts the zero pod in a selector set and the big port in a named-port set.
    server.create(
      policy('d-from-client', {
        podSelector: { matchLabels: { app: 'd' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'd-client' } } }], ports: [{ port: 'web' }] }],
      }),
    );
    server.create(isolate('isolate-e', 'e'));
    await expectReach('f', 'e', false);
    await expectReach('f', 'd', false);
    expect(logged('unspecified address')).toBe(true);
    expect(logged('70000 is not a port number')).toBe(true);
    expect((await httpGet(`${daemon.url}/readyz`)).status).toBe(200);
  });

  it('a watch line that is not an event forces a relist: the event it carried is applied', async () => {
    await expectReach('f', 'c', true);
    server.corruptNextEvent('networkpolicies');
    server.create(isolate('isolate-c', 'c'));
    await expectReach('f', 'c', false);
    expect(logged('undecodable line in the watch stream')).toBe(true);
  });

  it('selector values "a,c" and [a, c] do not share a set: the invalid one allows nothing', async () => {
    // p1 is valid and allows tier in {a, c} (x/f) to g; p2 spells one value "a,c", which the API server
    // would reject, and must not borrow p1's set to let x/f into x/a.
    server.create(
      policy('p1-split', {
        podSelector: { matchLabels: { app: 'g' } },
        ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'c'] }] } }] }],
      }),
    );
    server.create(
      policy('p2-joined', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['a,c'] }] } }] }],
      }),
    );
    await expectReach('b', 'g', false);
    await expectReach('f', 'g', true);
    expect(await reaches('f', 'a')).toBe(false);
    expect(logged('is not a valid label value')).toBe(true);
  });

  it('10,000-except policies are enforced (stride and random), one past the size limit fails closed, and a change right after applies', async () => {
    // e: allowed from everywhere except 10,000 addresses, b's among them.
    const excepts = [...strideExcepts(9_999), `${ipOf('b')}/32`];
    server.create(
      policy('big-except', {
        podSelector: { matchLabels: { app: 'e' } },
        ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: excepts } }] }],
      }),
    );
    // g: everywhere except 10,000 random addresses and a's. Subtracting them left ~320,000 CIDRs, past the
    // per-policy limit, so this policy used to fail closed; the excepts are now a set of their own.
    server.create(
      policy('random-except', {
        podSelector: { matchLabels: { app: 'g' } },
        ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: [...spreadExcepts(9_999), `${ipOf('a')}/32`] } }] }],
      }),
    );
    // f: 70,000 excepts, past the per-policy limit: refused, fails closed (f was open until now).
    const changedAt = Date.now();
    server.create(
      policy('too-many-excepts', {
        podSelector: { matchLabels: { app: 'f' } },
        ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: spreadExcepts(70_000) } }] }],
      }),
    );
    await expectReach('c', 'f', false);
    const appliedMs = Date.now() - changedAt;
    expect(logged('per-policy limit')).toBe(true);
    await expectReach('a', 'e', true);
    expect(await reaches('b', 'e')).toBe(false);
    // The excepted address is blocked, its neighbours are let in.
    await expectReach('b', 'g', true);
    expect(await reaches('a', 'g')).toBe(false);
    expect(await reaches('c', 'g')).toBe(true);
    expect((await httpGet(`${daemon.url}/healthz`)).status).toBe(200);
    // Informational, for the README table (not asserted: tests check behaviour, not time).
    process.stdout.write(`hostile-input: change after the 10,000-except policies enforced after ${appliedMs} ms\n`);
  });
});
