// net.bridge.bridge-nf-call-ip6tables on a node with IPv6 pods: at 0, bridged IPv6 traffic between pods
// of one node never reaches ip6tables, so no policy applies to it. The daemon re-reads it on every resync
// like the IPv4 one: not ready, `netfence_kernel_precondition{check="bridge-nf-call-ip6tables"} 0`, logged;
// ready again at 1. The sysctl is per network namespace (checked here first): only the node's is touched.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSysctl, writeSysctl } from '../../src/dataplane/sysctl.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import {
  httpGet,
  metricValue,
  namespaceObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const SYSCTL = 'net.bridge.bridge-nf-call-ip6tables';
const METRIC = 'netfence_kernel_precondition{check="bridge-nf-call-ip6tables"}';

const podObject = (pod: SandboxPod) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: pod.name, namespace: pod.namespace, labels: { app: pod.name } },
  spec: { nodeName: pod.node, containers: [{ name: 'agent', image: 'sandbox-agent' }] },
  status: { phase: 'Running', podIP: pod.ips[0], podIPs: pod.ips.map((ip) => ({ ip })) },
});

/** x/a accepts TCP 80 from app=b only. */
const onlyBIntoA = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'only-b-into-a', namespace: 'x' },
  spec: {
    podSelector: { matchLabels: { app: 'a' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'b' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
  },
};

describeKernel('bridge-nf-call-ip6tables on a node with IPv6 pods', () => {
  let sandbox: Sandbox;
  let dir: string;
  let daemon: NodeDaemon;
  let netns: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-brnf6-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }], ipv6: {} });
    await Promise.all(['a', 'b', 'c'].map((name) => sandbox.addPod({ namespace: 'x', name, node: 'n1' })));
    const node = sandbox.nodes()[0]!;
    netns = node.netns;
    // The Node names only its IPv4 CIDR, as does the daemon's --pod-cidr: the pods' IPv6 addresses are
    // what make the IPv6 sysctl matter here.
    const objects = [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: node.name }, spec: { podCIDR: node.podCidr, podCIDRs: [node.podCidr] } },
      namespaceObject('x'),
      ...sandbox.pods().map(podObject),
      onlyBIntoA,
    ];
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    daemon = await startNodeDaemon(node, { resources: [dir] }, { 'resync-interval-seconds': '1', 'batch-window-ms': '10' });
    await waitReady(daemon, 30_000);
  });

  afterAll(async () => {
    if (netns) await writeSysctl(SYSCTL, 1, { netns }).catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const v6Of = (name: string): string =>
    sandbox
      .pods()
      .find((p) => p.name === name)!
      .ips.find((ip) => ip.includes(':'))!;
  const reachesOverV6 = async (from: string): Promise<boolean> =>
    (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: v6Of('a'), port: 80, timeoutMs: 400 })).ok;
  const metric = async (): Promise<number | undefined> => metricValue((await httpGet(`${daemon.url}/metrics`)).body, METRIC);
  const logged = (text: string): boolean => daemon.logs.some((l) => l.includes(text));

  it('the sysctl is per network namespace here: the node namespace has its own copy', async () => {
    // Read-only look at the root namespace: the test writes the node's copy only.
    const root = await readSysctl(SYSCTL);
    await writeSysctl(SYSCTL, 0, { netns });
    try {
      expect(await readSysctl(SYSCTL, { netns })).toBe('0');
      expect(await readSysctl(SYSCTL)).toBe(root);
    } finally {
      await writeSysctl(SYSCTL, 1, { netns });
    }
    await waitReady(daemon, 10_000);
  });

  it('switched off: not ready within a resync, metric 0, logged (IPv6 policy bypassed); switched on: ready, enforced again', async () => {
    await waitUntil(
      'x/c → x/a over IPv6 blocked, x/b allowed',
      async () => !(await reachesOverV6('c')) && (await reachesOverV6('b')),
      15_000,
    );
    expect(await metric()).toBe(1);
    try {
      const off = performance.now();
      await writeSysctl(SYSCTL, 0, { netns });
      await waitUntil(
        '/readyz 503 after bridge-nf-call-ip6tables=0',
        async () => (await httpGet(`${daemon.url}/readyz`)).status === 503,
        10_000,
      );
      console.log(`not ready ${Math.round(performance.now() - off)} ms after the sysctl went to 0 (resync interval 1 s)`);
      expect((await httpGet(`${daemon.url}/readyz`)).body).toContain('net.bridge.bridge-nf-call-ip6tables is 0');
      expect(await metric()).toBe(0);
      expect(logged('net.bridge.bridge-nf-call-ip6tables is not 1')).toBe(true);
      // Why it matters: the same-node IPv6 connection the policy forbids now goes through.
      await waitUntil('x/c → x/a over IPv6 open while the sysctl is 0', () => reachesOverV6('c'), 10_000);
    } finally {
      await writeSysctl(SYSCTL, 1, { netns });
    }
    await waitReady(daemon, 10_000);
    expect(await metric()).toBe(1);
    expect(logged('net.bridge.bridge-nf-call-ip6tables is 1 again')).toBe(true);
    await waitUntil('x/c → x/a over IPv6 blocked again', async () => !(await reachesOverV6('c')), 10_000);
  });
});
