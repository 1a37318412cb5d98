// 20,000 idle connections to the metrics port must not take the node's enforcement down. They
// used to stay open forever: at the daemon's file-descriptor limit the next iptables-restore could not be
// spawned. The daemon runs as its own process here (`netfence daemon --netns …`), started under a low
// descriptor limit (prlimit --nofile=1024) so the limit is reached cheaply; the connections go to its
// loopback listener only, and the policy change after them is proven with real packets in the sandbox.

import { jest } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { httpGet, namespaceObject, podObject, waitUntil } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';
import { freePort } from '../helpers/free-port.js';

jest.setTimeout(180_000);

const CONNECTIONS = 20_000;
// Node itself needs a few hundred descriptors to load its modules; 1024 is the common default soft limit.
const FD_LIMIT = 1024;

/**
 * Opens `total` connections, `wave` at a time, and leaves each idle: it is closed only by the server, or by
 * us once four more waves have been opened (so this process never holds more than ~5 waves of descriptors).
 */
async function idleFlood(port: number, total: number, wave: number): Promise<{ connected: number; refused: number }> {
  const held: Socket[][] = [];
  let connected = 0;
  let refused = 0;
  for (let opened = 0; opened < total; opened += wave) {
    const batch = await Promise.all(
      Array.from(
        { length: Math.min(wave, total - opened) },
        () =>
          new Promise<Socket | undefined>((resolve) => {
            const socket = connect({ host: '127.0.0.1', port });
            socket.once('connect', () => {
              connected++;
              resolve(socket);
            });
            socket.on('error', () => {
              refused++;
              resolve(undefined);
            });
          }),
      ),
    );
    held.push(batch.filter((s): s is Socket => s !== undefined));
    if (held.length > 4) for (const s of held.shift()!) s.destroy();
  }
  for (const batch of held) for (const s of batch) s.destroy();
  return { connected, refused };
}

describeKernel('the daemon survives 20,000 idle connections to its metrics port', () => {
  let sandbox: Sandbox;
  let dir: string;
  let daemon: ChildProcess | undefined;
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const output: string[] = [];
  let url = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-idle-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    const [a, b] = await Promise.all([
      sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' }),
      sandbox.addPod({ namespace: 'x', name: 'b', node: 'n1' }),
    ]);
    const objects = [namespaceObject('x'), podObject(a!, { app: 'a' }), podObject(b!, { app: 'b' })];
    writeFileSync(join(dir, 'cluster.yaml'), objects.map((o) => stringify(o)).join('---\n'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const node = sandbox.nodes()[0]!;
    daemon = spawn(
      'prlimit',
      [
        `--nofile=${FD_LIMIT}:${FD_LIMIT}`,
        process.execPath,
        join(process.cwd(), 'dist/cli/main.js'),
        'daemon',
        '--node-name',
        'n1',
        '--resources',
        dir,
        '--netns',
        node.netns,
        '--listen-address',
        `127.0.0.1:${port}`,
        '--pod-cidr',
        node.podCidr,
        '--flannel-subnet-env',
        '/nonexistent/netfence-test/subnet.env',
        '--batch-window-ms',
        '10',
        '--resync-interval-seconds',
        '2',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    daemon.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    daemon.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    daemon.once('exit', (code, signal) => (exited = { code, signal }));
    await waitUntil('daemon ready', async () => (await httpGet(`${url}/readyz`)).status === 200, 30_000, 200);
  });

  afterAll(async () => {
    if (daemon?.pid !== undefined && exited === undefined) {
      daemon.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 1000));
      if (exited === undefined) daemon.kill('SIGKILL');
    }
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tail = (): string => output.join('').split('\n').slice(-30).join('\n');

  it('stays up, keeps answering, and applies a policy change made after the flood', async () => {
    const flood = await idleFlood(Number(new URL(url).port), CONNECTIONS, 1_000);
    expect(flood.connected + flood.refused).toBe(CONNECTIONS);
    expect({ exited, tail: exited ? tail() : '' }).toEqual({ exited: undefined, tail: '' });

    // Enforcement still follows the cluster: isolating x/a needs new iptables-restore/ipset processes.
    expect((await sandbox.probe('x/b', { protocol: 'TCP', ip: sandbox.addressOf('x/a'), port: 80, timeoutMs: 400 })).ok).toBe(true);
    const deny = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'isolate-a', namespace: 'x' },
      spec: { podSelector: { matchLabels: { app: 'a' } }, policyTypes: ['Ingress'] },
    };
    writeFileSync(join(dir, 'policy.yaml'), stringify(deny));
    await waitUntil(
      'x/b → x/a blocked after the flood',
      async () => !(await sandbox.probe('x/b', { protocol: 'TCP', ip: sandbox.addressOf('x/a'), port: 80, timeoutMs: 400 })).ok,
      20_000,
      200,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nexited: ${JSON.stringify(exited)}\n${tail()}`);
    });
    expect(exited).toBeUndefined();
    await waitUntil('/healthz 200 after the flood', async () => (await httpGet(`${url}/healthz`)).status === 200, 20_000, 200);
    expect((await httpGet(`${url}/readyz`)).status).toBe(200);
  });
});
