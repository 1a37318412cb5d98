// Faults while the daemon runs, on a 1-node sandbox with real packets:
// - our chains flushed, or a foreign ACCEPT put above our FORWARD hook: both open the isolated pod; the
//   drift check puts our state back. The time from the edit until the kernel holds our state again (and
//   the pod is closed again) is measured and printed — bounded by the resync interval, 1 s here;
// - the daemon SIGKILLed in the middle of an apply (its iptables-restore killed with it, as a container
//   kill does), then restarted: it adopts what it finds and finishes the change. A watchman probes the
//   isolated pod without pause from the kill until after the restart: nothing may connect.

import { jest } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, formatMatrix, matrixOf, waitForMatrix, type Sandbox } from '../../sandbox/index.js';
import type { KubeObject } from '../fakes/fake-apiserver.js';
import {
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

jest.setTimeout(180_000);

const MAIN = join(process.cwd(), 'dist', 'cli', 'main.js');
const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const PODS: readonly { namespace: string; name: string; labels: Labels }[] = [
  { namespace: 'x', name: 'a', labels: { app: 'a' } },
  { namespace: 'x', name: 'b', labels: { app: 'b' } },
  { namespace: 'y', name: 'a', labels: { app: 'a' } },
];
const policy = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace },
  spec,
});
/** x/a accepts only x/b. */
const A_FROM_B = policy('x', 'a-from-b', {
  podSelector: { matchLabels: { app: 'a' } },
  policyTypes: ['Ingress'],
  ingress: [{ from: [{ podSelector: { matchLabels: { app: 'b' } } }] }],
});
/** y/a accepts nothing: the change the killed apply was making. */
const Y_ISOLATED = policy('y', 'isolated', { podSelector: {}, policyTypes: ['Ingress'] });
const FORBIDDEN = [['y/a', 'x/a']] as const;
const figures: string[] = [];

afterAll(() => {
  if (figures.length > 0) console.log(`daemon faults (measured on a shared, loaded machine):\n${figures.join('\n')}`);
});

/** Probes the forbidden pairs without pause until stopped; remembers any that connected. */
function watchman(sandbox: Sandbox): { stop(): Promise<string[]>; rounds(): number } {
  const breaches: string[] = [];
  let running = true;
  let rounds = 0;
  const done = (async () => {
    while (running) {
      for (const [from, to] of FORBIDDEN) {
        const r = await sandbox.probe(from, { protocol: 'TCP', ip: sandbox.addressOf(to), port: 80, timeoutMs: 300 });
        if (r.ok) breaches.push(`${from} -> ${to}`);
      }
      rounds++;
    }
  })();
  return {
    rounds: () => rounds,
    async stop() {
      running = false;
      await done;
      return breaches;
    },
  };
}

describeKernel('faults while the daemon runs (1-node sandbox)', () => {
  let sandbox: Sandbox;
  let dir: string;
  let netns: string;
  const children: ChildProcess[] = [];

  const writeCluster = (policies: readonly KubeObject[]): void => {
    const node = sandbox.nodes()[0]!;
    const items = [
      nodeObject(node),
      namespaceObject('x'),
      namespaceObject('y'),
      ...PODS.map((p) =>
        podObject(
          sandbox.pods().find((s) => s.key === `${p.namespace}/${p.name}`)!,
          p.labels,
        ),
      ),
      ...policies,
    ];
    // Written whole and renamed into place, as the README asks.
    writeFileSync(join(dir, '.cluster.json.tmp'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    rmSync(join(dir, 'rules', 'cluster.json'), { force: true });
    writeFileSync(join(dir, 'rules', 'cluster.json'), readFileSync(join(dir, '.cluster.json.tmp')));
  };
  const keys = () => sandbox.pods().map((p) => p.key);
  const expectMatrix = async (reachable: (from: string, to: string) => boolean, what: string): Promise<void> => {
    const expected = matrixOf(keys(), keys(), (f, t) => f === t || reachable(f, t));
    const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: 80, deadlineMs: 20_000 });
    if (!result.ok) throw new Error(`${what}: matrix did not converge\n${formatMatrix(result.observed, { expected })}`);
  };
  const inSync = async (): Promise<boolean> =>
    (await main(
      [
        'diff',
        '--netns',
        netns,
        '--node-name',
        NODE.name,
        '--pod-cidr',
        NODE.podCidr,
        '--backend',
        'nft',
        '--resources',
        join(dir, 'rules'),
      ],
      { out: () => {}, err: () => {} },
    )) === 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-dfault-'));
    await run('mkdir', ['-p', join(dir, 'rules')]);
    sandbox = await createSandbox({ nodes: [NODE] });
    await Promise.all(PODS.map(({ labels: _l, ...p }) => sandbox.addPod({ ...p, node: NODE.name })));
    netns = sandbox.nodes()[0]!.netns;
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null && c.pid !== undefined) process.kill(c.pid, 'SIGKILL');
    await sandbox?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('drift while running: repaired by the next drift check (resync interval 1 s)', () => {
    let daemon: NodeDaemon;
    beforeAll(async () => {
      writeCluster([A_FROM_B]);
      daemon = await startNodeDaemon(
        sandbox.nodes()[0]!,
        { resources: [join(dir, 'rules')] },
        { 'resync-interval-seconds': '1', backend: 'nft' },
      );
      await waitReady(daemon);
      await expectMatrix((f, t) => t !== 'x/a' || f === 'x/b', 'programmed');
    });
    afterAll(() => daemon?.stop());

    const ipt = (...args: string[]) => run('iptables-nft', ['-w', ...args], { netns });
    const ourChainNames = async () =>
      (await run('iptables-nft-save', ['-t', 'filter'], { netns })).stdout
        .split('\n')
        .filter((l) => l.startsWith(':nf-'))
        .map((l) => l.slice(1).split(' ')[0]!);

    it.each<{ name: string; fault: () => Promise<void> }>([
      {
        name: 'every chain of ours flushed',
        fault: async () => {
          for (const chain of await ourChainNames()) await ipt('-F', chain);
        },
      },
      {
        name: 'a foreign ACCEPT inserted above our FORWARD hook',
        fault: () => ipt('-I', 'FORWARD', '1', '-j', 'ACCEPT').then(() => undefined),
      },
    ])('$name: opens x/a, and is put back', async ({ name, fault }) => {
      expect(await inSync()).toBe(true);
      const t0 = performance.now();
      await fault();
      // The fault really opens the isolated pod (checked at once, before a drift check can run).
      const probe = await sandbox.probe('y/a', { protocol: 'TCP', ip: sandbox.addressOf('x/a'), port: 80, timeoutMs: 300 });
      await waitUntil('the kernel holds our state again', inSync, 15_000, 20);
      const repairedMs = performance.now() - t0;
      await expectMatrix((f, t) => t !== 'x/a' || f === 'x/b', `after repairing "${name}"`);
      if (name.includes('foreign ACCEPT')) {
        const forward = (await run('iptables-nft-save', ['-t', 'filter'], { netns })).stdout
          .split('\n')
          .filter((l) => l.startsWith('-A FORWARD '));
        expect(forward[0]).toContain('-j nf-FORWARD');
        expect(forward).toContain('-A FORWARD -j ACCEPT'); // theirs stays, below ours
        await ipt('-D', 'FORWARD', '-j', 'ACCEPT');
      }
      figures.push(
        `  ${name}: enforcement degraded ${Math.round(repairedMs)} ms (edit → kernel back in sync; resync interval 1 s)${probe.ok ? ', y/a→x/a connected meanwhile' : ''}`,
      );
    });
  });

  it('SIGKILL in the middle of an apply, then a restart: no allow window, the change is finished', async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (npm test does)`);
    writeCluster([A_FROM_B]);
    // iptables-nft-restore, slowed down while `slow` exists so the kill lands inside the apply.
    const shim = join(dir, 'shim');
    await run('mkdir', ['-p', shim]);
    const slow = join(dir, 'slow');
    const started = join(dir, 'restore-started');
    writeFileSync(
      join(shim, 'iptables-nft-restore'),
      `#!/bin/sh\nif [ -e '${slow}' ]; then echo $$ > '${started}'; sleep 2; fi\nexec /usr/sbin/iptables-nft-restore "$@"\n`,
    );
    chmodSync(join(shim, 'iptables-nft-restore'), 0o755);
    const env = { ...process.env, PATH: `${shim}:${process.env['PATH'] ?? ''}` };
    const start = (): ChildProcess => {
      const args = [
        MAIN,
        'daemon',
        '--netns',
        netns,
        '--node-name',
        NODE.name,
        '--pod-cidr',
        NODE.podCidr,
        '--resources',
        join(dir, 'rules'),
        '--backend',
        'nft',
        '--listen-address',
        '127.0.0.1:0',
        '--flannel-subnet-env',
        '/nonexistent/netfence-test/subnet.env',
        '--batch-window-ms',
        '10',
        '--log-format',
        'json',
      ];
      const child = spawn(process.execPath, args, { stdio: 'ignore', env });
      children.push(child);
      return child;
    };
    const first = start();
    await waitUntil('first daemon programmed', inSync, 30_000);
    await expectMatrix((f, t) => t !== 'x/a' || f === 'x/b', 'first daemon');

    const guard = watchman(sandbox);
    writeFileSync(slow, '');
    writeCluster([A_FROM_B, Y_ISOLATED]);
    await waitUntil('the apply reached iptables-nft-restore', () => existsSync(started), 15_000, 10);
    // A container kill takes every process of the container: the daemon and its in-flight restore.
    const restorePid = Number(readFileSync(started, 'utf8'));
    const killedAt = performance.now();
    process.kill(first.pid!, 'SIGKILL');
    process.kill(restorePid, 'SIGKILL');
    rmSync(slow);
    expect(await inSync()).toBe(false); // the change was not applied
    const roundsBefore = guard.rounds();
    await waitUntil('probed while no daemon runs', () => guard.rounds() >= roundsBefore + 2, 15_000);

    const restartedAt = performance.now();
    const second = start();
    await waitUntil('the restarted daemon finished the change', inSync, 30_000, 20);
    const finishedMs = performance.now() - restartedAt;
    await expectMatrix((f, t) => (t === 'x/a' ? f === 'x/b' : t !== 'y/a'), 'after the restart');
    expect(await guard.stop()).toEqual([]);
    const exited = new Promise((resolve) => second.once('exit', resolve));
    process.kill(second.pid!, 'SIGTERM');
    await exited;
    figures.push(
      `  SIGKILL mid-apply: x/a stayed isolated throughout (${Math.round(performance.now() - killedAt)} ms probed); the restarted daemon (node start-up included) had finished the interrupted change ${Math.round(finishedMs)} ms after it was started`,
    );
  });
});
