// The daemon's per-change path: a change that only moves a pod in or out of a set (a label flip) is programmed
// over ipset netlink with no process at all (no `ipset`, no `iptables-restore`), proven by packets; with
// netlink turned off (the forced fallback) the same change goes through `ipset restore` and is enforced alike.
// A member added or removed by hand is still repaired by the next drift check.

import { jest } from '@jest/globals';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import {
  httpGet,
  metricSum,
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

jest.setTimeout(120_000);

const POLICY = JSON.stringify({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'peers-into-a', namespace: 'x' },
  spec: {
    podSelector: { matchLabels: { app: 'a' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { peer: 'on' } } }], ports: [{ protocol: 'TCP', port: 81 }] }],
  },
});

/** Tool runs by tool, from /metrics. */
async function toolRuns(d: NodeDaemon): Promise<Map<string, number>> {
  const text = (await httpGet(`${d.url}/metrics`)).body;
  return new Map(
    [...text.matchAll(/^netfence_tool_invocations_total\{tool="([^"]+)"\} (\S+)$/gm)].map(([, tool, n]) => [tool!, Number(n)]),
  );
}

function suite(mode: string, ipsetNetlink: 'true' | 'false'): void {
  let sandbox: Sandbox;
  let dir: string;
  let daemon: NodeDaemon;
  const labels = (peerB: boolean): Readonly<Record<string, Labels>> => ({ a: { app: 'a' }, b: { app: 'b', peer: peerB ? 'on' : 'off' } });

  const writeCluster = (peerB: boolean): void => {
    const items = [
      nodeObject(sandbox.nodes()[0]!),
      namespaceObject('x'),
      ...sandbox.pods().map((p) => podObject(p, labels(peerB)[p.name]!)),
    ];
    // Write then rename, as an editor saves: the watch sees one complete file.
    writeFileSync(join(dir, '.cluster.tmp'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    renameSync(join(dir, '.cluster.tmp'), join(dir, 'cluster.json'));
  };
  const reaches = async (): Promise<boolean> =>
    (await sandbox.probe('x/b', { protocol: 'TCP', ip: sandbox.addressOf('x/a'), port: 81, timeoutMs: 400 })).ok;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-ipnl-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    await Promise.all(['a', 'b'].map((name) => sandbox.addPod({ namespace: 'x', name, node: 'n1' })));
    writeCluster(false);
    writeFileSync(join(dir, 'policy.json'), POLICY);
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { resources: [dir] },
      // No drift check, hook check or content poll inside the test's window: every tool run counted is the change's.
      {
        'batch-window-ms': '10',
        'resync-interval-seconds': '600',
        'hook-check-interval-ms': '0',
        'manifest-check-interval-ms': '600000',
        'ipset-netlink': ipsetNetlink,
      },
    );
    await waitReady(daemon);
  });

  afterAll(async () => {
    await daemon?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('reports its writer mode', async () => {
    const text = (await httpGet(`${daemon.url}/metrics`)).body;
    expect(metricValue(text, `netfence_ipset_writer{mode="${ipsetNetlink === 'true' ? 'netlink' : 'restore'}"}`)).toBe(1);
  });

  it(`a label flip in and out of the peer set is enforced by packets; ${mode === 'netlink' ? 'no ipset or iptables process ran' : 'through ipset restore'}`, async () => {
    await waitUntil('x/b refused before the flip', async () => !(await reaches()), 15_000, 100);
    const before = await toolRuns(daemon);
    const writesBefore = metricSum((await httpGet(`${daemon.url}/metrics`)).body, 'netfence_ipset_netlink_writes_total');
    writeCluster(true);
    await waitUntil('x/b admitted after joining the peer set', reaches, 15_000, 100);
    writeCluster(false);
    await waitUntil('x/b refused after leaving it', async () => !(await reaches()), 15_000, 100);
    const after = await toolRuns(daemon);
    const ran = [...after].map(([tool, n]) => [tool, n - (before.get(tool) ?? 0)] as const).filter(([, n]) => n > 0);
    const writes = metricSum((await httpGet(`${daemon.url}/metrics`)).body, 'netfence_ipset_netlink_writes_total') - writesBefore;
    if (ipsetNetlink === 'true') {
      expect(ran).toEqual([]);
      expect(writes).toBeGreaterThanOrEqual(2);
    } else {
      expect(ran.filter(([tool]) => tool === 'ipset').map(([, n]) => n >= 2)).toEqual([true]);
      expect(ran.filter(([tool]) => tool.includes('iptables'))).toEqual([]);
      expect(writes).toBe(0);
    }
  });

  it('a member added or removed by hand is repaired by the next drift check (drift detection unchanged)', async () => {
    const netns = sandbox.nodes()[0]!.netns;
    const { stdout } = await run('ipset', ['list', '-n'], { netns });
    const peerSet = stdout.split('\n').find((n) => n.startsWith('nf4s:'))!;
    await run('ipset', ['add', peerSet, sandbox.addressOf('x/b')], { netns });
    await waitUntil('the hand-added member lets x/b in', reaches, 15_000, 100);
    daemon.daemon.reconciler.resyncNow();
    await waitUntil('the drift check took it out again', async () => !(await reaches()), 15_000, 100);
    writeCluster(true);
    await waitUntil('x/b admitted as a peer', reaches, 15_000, 100);
    await run('ipset', ['del', peerSet, sandbox.addressOf('x/b')], { netns });
    await waitUntil('the hand-removed member shuts x/b out', async () => !(await reaches()), 15_000, 100);
    daemon.daemon.reconciler.resyncNow();
    await waitUntil('the drift check put it back', reaches, 15_000, 100);
  });
}

describeKernel('daemon: a set-only change, ipset writer netlink', () => suite('netlink', 'true'));
describeKernel('daemon: a set-only change, ipset writer restore (forced fallback)', () => suite('restore', 'false'));
