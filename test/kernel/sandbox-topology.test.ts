// The sandbox cluster itself, proven with plain iptables rules: full reachability with no rules,
// exactly the expected cells blocked by one DROP rule, foreign flannel state in place, and nothing
// left behind after destroy() (also when creation fails half-way).

import { jest } from '@jest/globals';
import { run } from '../../src/dataplane/exec.js';
import type { Protocol } from '../../src/model/index.js';
import { findLeftovers } from '../../sandbox/leftovers.js';
import { formatMatrix, matrixOf, type Matrix } from '../../sandbox/matrix.js';
import { probeMatrix, waitForMatrix } from '../../sandbox/prober.js';
import { createSandbox, type Sandbox } from '../../sandbox/topology.js';

jest.setTimeout(30_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
// Same node and cross node, same namespace and cross namespace.
const PODS = [
  { namespace: 'x', name: 'a', node: 'n1' },
  { namespace: 'x', name: 'b', node: 'n1' },
  { namespace: 'y', name: 'a', node: 'n1' },
  { namespace: 'x', name: 'c', node: 'n2' },
  { namespace: 'y', name: 'b', node: 'n2' },
  { namespace: 'y', name: 'c', node: 'n2' },
];
const POD_KEYS = PODS.map((p) => `${p.namespace}/${p.name}`);
const CASES: readonly { protocol: Protocol; port: number }[] = (['TCP', 'UDP', 'SCTP'] as const).flatMap((protocol) =>
  [80, 81].map((port) => ({ protocol, port })),
);
const TIMEOUT_MS = 400;

async function netnsNames(): Promise<string[]> {
  return (await run('ip', ['netns', 'list'])).stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter(Boolean);
}

/** Compares the printed tables, so a failure shows the e2e-style matrices side by side. */
function expectMatrix(observed: Matrix, expected: Matrix): void {
  expect(formatMatrix(observed)).toEqual(formatMatrix(expected));
}

describe('sandbox topology', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map((p) => sandbox.addPod(p)));
  });
  afterAll(async () => {
    await sandbox?.destroy();
  });

  it('lays out nodes and pods as flannel would', async () => {
    expect(sandbox.prefix).toMatch(/^nfs[0-9a-f]{4}-$/);
    expect(sandbox.pods().map((p) => [p.key, p.node, p.ip])).toEqual([
      ['x/a', 'n1', '10.244.1.2'],
      ['x/b', 'n1', '10.244.1.3'],
      ['y/a', 'n1', '10.244.1.4'],
      ['x/c', 'n2', '10.244.2.2'],
      ['y/b', 'n2', '10.244.2.3'],
      ['y/c', 'n2', '10.244.2.4'],
    ]);
    const pod = sandbox.pods()[0];
    expect(pod?.hostVeth).toMatch(/^veth[0-9a-f]{8}$/);
    const link = (await run('ip', ['-d', 'link', 'show', pod?.hostVeth ?? ''], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(link).toContain('master cni0');
    expect(link).toContain('hairpin on');
    const routes = (await run('ip', ['route'], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(routes).toContain('10.244.2.0/24 via 10.99.0.2 dev eth0');
    const sysctl = (
      await run('sysctl', ['-n', 'net.bridge.bridge-nf-call-iptables', 'net.ipv4.ip_forward'], { netns: sandbox.nodeNetns('n2') })
    ).stdout;
    expect(sysctl.split('\n').slice(0, 2)).toEqual(['1', '1']);
  });

  it('installs flannel-like foreign chains in each node', async () => {
    const filter = (await run('iptables-save', ['-t', 'filter'], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(filter).toContain('-A FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD');
    expect(filter).toContain('-A FLANNEL-FWD -s 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT');
    const nat = (await run('iptables-save', ['-t', 'nat'], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(nat).toMatch(/-A FLANNEL-POSTRTG -s 10\.244\.0\.0\/16 ! -d 224\.0\.0\.0\/4 .*-j MASQUERADE/);
  });

  it.each(CASES)('with no rules every pod reaches every pod (and itself) on $protocol/$port', async ({ protocol, port }) => {
    const observed = await probeMatrix(sandbox, { protocol, port, timeoutMs: TIMEOUT_MS });
    expectMatrix(observed, matrixOf(POD_KEYS, POD_KEYS, true));
  });

  it.each(CASES)('each node reaches every pod on $protocol/$port', async ({ protocol, port }) => {
    const observed = await probeMatrix(sandbox, { from: ['node:n1', 'node:n2'], protocol, port, timeoutMs: TIMEOUT_MS });
    expectMatrix(observed, matrixOf(['node:n1', 'node:n2'], POD_KEYS, true));
  });

  it('a port nobody serves is unreachable', async () => {
    const observed = await probeMatrix(sandbox, { from: ['x/a'], to: ['x/b', 'x/c'], protocol: 'TCP', port: 82, timeoutMs: TIMEOUT_MS });
    expectMatrix(observed, matrixOf(['x/a'], ['x/b', 'x/c'], false));
  });

  describe('with a DROP rule for new connections to x/b in n1 FORWARD', () => {
    const froms = [...POD_KEYS, 'node:n1', 'node:n2'];
    // Stateful, like a NetworkPolicy ingress rule: x/b's own connections still get their replies.
    // New forwarded connections to x/b die: bridged from its node's pods (br_netfilter) and routed from
    // n2. x/b reaching itself never leaves its namespace, and n1's own traffic is OUTPUT, not FORWARD.
    const expected = matrixOf(froms, POD_KEYS, (from, to) => to !== 'x/b' || from === 'x/b' || from === 'node:n1');
    let rule: string[];

    beforeAll(async () => {
      const xb = sandbox.pods().find((p) => p.key === 'x/b');
      rule = ['FORWARD', '-d', `${xb?.ip}/32`, '-m', 'conntrack', '--ctstate', 'NEW', '-j', 'DROP'];
      await run('iptables', ['-I', ...rule.slice(0, 1), '1', ...rule.slice(1)], { netns: sandbox.nodeNetns('n1') });
    });
    afterAll(async () => {
      await run('iptables', ['-D', ...rule], { netns: sandbox.nodeNetns('n1') });
    });

    it.each(['TCP', 'UDP', 'SCTP'] as const)('blocks exactly the cells into x/b on %s/80', async (protocol) => {
      const result = await waitForMatrix(sandbox, expected, { protocol, port: 80, deadlineMs: 2000, timeoutMs: TIMEOUT_MS });
      if (!result.ok) console.log(formatMatrix(result.observed, { expected }));
      expect(result.ok).toBe(true);
      expect(result.observed.errors['x/a -> x/b']).toBe('timeout');
    });
  });

  it('reuses a removed pod IP for a new pod', async () => {
    const old = sandbox.pods().find((p) => p.key === 'y/c');
    await sandbox.removePod('y/c');
    expect(await netnsNames()).not.toContain(old?.netns);
    const fresh = await sandbox.addPod({ namespace: 'z', name: 'a', node: 'n2', ip: old?.ip ?? '' });
    expect(fresh.ip).toBe(old?.ip);
    const observed = await probeMatrix(sandbox, { from: ['x/a', 'y/b'], to: ['z/a'], protocol: 'TCP', port: 80, timeoutMs: TIMEOUT_MS });
    expectMatrix(observed, matrixOf(['x/a', 'y/b'], ['z/a'], true));
    await sandbox.removePod('z/a');
    await sandbox.addPod({ namespace: 'y', name: 'c', node: 'n2' });
  });

  it('removes a pod that fails to start, keeping its IP free', async () => {
    // Two servers on one port: the agent cannot bind, so addPod fails after creating the namespace.
    await expect(sandbox.addPod({ namespace: 'z', name: 'broken', node: 'n1', ports: [80, 80] })).rejects.toThrow();
    expect((await netnsNames()).filter((n) => n.startsWith(sandbox.prefix) && n.includes('broken'))).toEqual([]);
    expect(sandbox.pods().map((p) => p.key)).not.toContain('z/broken');
    const next = await sandbox.addPod({ namespace: 'z', name: 'ok', node: 'n1' });
    expect(next.ip).toBe('10.244.1.5');
    await sandbox.removePod('z/ok');
  });
});

describe('sandbox iptables backend', () => {
  it.each([
    { backend: 'legacy', save: 'iptables-legacy-save', other: 'iptables-nft-save' },
    { backend: 'nft', save: 'iptables-nft-save', other: 'iptables-legacy-save' },
  ] as const)('puts flannel rules into the $backend backend only', async ({ backend, save, other }) => {
    const sandbox = await createSandbox({ nodes: NODES.slice(0, 1) }, { iptables: backend });
    try {
      const netns = sandbox.nodeNetns('n1');
      expect((await run(save, ['-t', 'filter'], { netns })).stdout).toContain('FLANNEL-FWD');
      expect((await run(other, ['-t', 'filter'], { netns })).stdout).not.toContain('FLANNEL-FWD');
    } finally {
      await sandbox.destroy();
    }
  });
});

describe('sandbox destroy', () => {
  it('destroy() leaves no namespace and no agent behind', async () => {
    const sandbox = await createSandbox({ nodes: NODES.slice(0, 1) });
    await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    const before = await findLeftovers(sandbox.prefix);
    expect(before.netns).toHaveLength(3); // underlay, node, pod
    expect(before.pids).toHaveLength(2); // node agent, pod agent
    await sandbox.destroy();
    expect(await findLeftovers(sandbox.prefix)).toEqual({ netns: [], pids: [] });
  });
});
