// One client must not starve the kubelet's probes. With the metrics port on every address (the
// Prometheus-friendly setting), 80 slow half-sent requests from one pod used to take every connection slot:
// 25 of 25 probes failed and the kubelet restarted the daemon in a loop. Here a pod of the sandbox holds 100
// such requests open against the daemon, which runs as its own process inside the node's namespace
// (listening on 0.0.0.0 there), while the kubelet's probes come from the node's loopback (deploy/daemonset.yaml
// probes 127.0.0.1) and must all be answered.

import { jest } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { metricValue, namespaceObject, podObject, waitUntil } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(180_000);

const PORT = 9476;
const FLOOD = 100;
const PROBES = 25;

describeKernel('probes are answered while one pod floods the metrics port with slow requests', () => {
  let sandbox: Sandbox;
  let dir: string;
  let daemon: ChildProcess | undefined;
  let flooder: ChildProcess | undefined;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const output: string[] = [];
  const floodOpen: number[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-probe-flood-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    const pods = await Promise.all([
      sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' }),
      sandbox.addPod({ namespace: 'x', name: 'b', node: 'n1' }),
    ]);
    const objects = [namespaceObject('x'), ...pods.map((p) => podObject(p, { app: p.name }))];
    writeFileSync(join(dir, 'cluster.yaml'), objects.map((o) => stringify(o)).join('---\n'));
    const node = sandbox.nodes()[0]!;
    // Inside the node's namespace (not --netns): its listener on 0.0.0.0 is the node's, reachable from pods.
    daemon = spawn(
      'ip',
      [
        ...['netns', 'exec', node.netns, process.execPath, join(process.cwd(), 'dist/cli/main.js'), 'daemon'],
        ...['--node-name', 'n1', '--resources', dir, '--listen-address', `0.0.0.0:${PORT}`, '--pod-cidr', node.podCidr],
        ...['--flannel-subnet-env', '/nonexistent/netfence-test/subnet.env', '--batch-window-ms', '10'],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    daemon.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    daemon.once('exit', (code, signal) => (exited = { code, signal }));
    await waitUntil('daemon ready', async () => (await kubeletProbe('/readyz')).status === 200, 60_000, 200);
  });

  afterAll(async () => {
    if (flooder?.pid !== undefined && flooder.exitCode === null) flooder.kill('SIGKILL');
    if (daemon?.pid !== undefined && exited === undefined) {
      daemon.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      if (exited === undefined) daemon.kill('SIGKILL');
    }
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** GET from the node's loopback, as the kubelet's httpGet probe with `host: 127.0.0.1` does; 5 s as its timeoutSeconds. */
  async function kubeletProbe(path: string): Promise<{ status: number; body: string }> {
    const node = sandbox.nodes()[0]!;
    let stdout: string;
    try {
      stdout = (await run('curl', ['-s', '-m', '5', '-w', '\n%{http_code}', `http://127.0.0.1:${PORT}${path}`], { netns: node.netns }))
        .stdout;
    } catch (err) {
      return { status: 0, body: (err as Error).message.split('\n')[0] ?? '' }; // refused, reset or timed out
    }
    const lines = stdout.split('\n');
    return { status: Number(lines.pop()), body: lines.join('\n') };
  }

  it(`${PROBES} /healthz and ${PROBES} /readyz probes all answered under a flood of ${FLOOD} slow connections from one pod`, async () => {
    const node = sandbox.nodes()[0]!;
    flooder = spawn(
      'ip',
      [
        'netns',
        'exec',
        sandbox.podNetns('x/b'),
        'python3',
        join(process.cwd(), 'test/helpers/slow-flood.py'),
        node.underlayIp,
        String(PORT),
        String(FLOOD),
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    flooder.stdout!.on('data', (d: Buffer) =>
      floodOpen.push(
        ...d
          .toString()
          .split('\n')
          .filter((l) => l !== '')
          .map(Number),
      ),
    );
    // Three rounds of the flooder (one a second): its connections have all been opened, and refused ones reopened.
    await waitUntil('the flood running', () => floodOpen.length >= 3, 30_000, 100);
    const failed: string[] = [];
    for (let i = 0; i < PROBES; i++) {
      for (const path of ['/healthz', '/readyz']) {
        const probe = await kubeletProbe(path);
        if (probe.status !== 200) failed.push(`${path} → ${probe.status} ${probe.body.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    expect({ failed, exited }).toEqual({ failed: [], exited: undefined });
    // It was a flood: the daemon refused connections past the pod's share.
    const refused = metricValue((await kubeletProbe('/metrics')).body, 'netfence_http_connections_refused_total{reason="per-peer"}');
    expect(refused).toBeGreaterThan(0);
    console.log(
      `flood of ${FLOOD} slow connections from x/b: ${2 * PROBES} probes, ${failed.length} failed; ${refused} connections refused past the pod's share`,
    );
  });
});
