// The dual-stack sandbox itself, proven with plain ip6tables rules before netfence is involved: the
// flannel-like address plan on both families, full IPv6 reachability (TCP, UDP, SCTP; same node and
// cross node) with neighbour caches flushed first, neighbour discovery visibly happening, and exactly
// the expected cells blocked by one ip6tables DROP. IPv4-only and IPv6-only pods live in the same cluster.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { findLeftovers } from '../../sandbox/leftovers.js';
import { formatMatrix, matrixOf, type Matrix } from '../../sandbox/matrix.js';
import { probeMatrix, waitForMatrix } from '../../sandbox/prober.js';
import { createSandbox, type Sandbox } from '../../sandbox/topology.js';

jest.setTimeout(60_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
const TIMEOUT_MS = 400;

function expectMatrix(observed: Matrix, expected: Matrix): void {
  expect(formatMatrix(observed)).toEqual(formatMatrix(expected));
}

/** Forget every neighbour in every pod, so the next probe has to resolve its peer with ND again. */
async function coldNeighbours(sandbox: Sandbox): Promise<void> {
  await Promise.all(sandbox.pods().map((p) => run('ip', ['-6', 'neigh', 'flush', 'all'], { netns: p.netns })));
}

describe('dual-stack sandbox', () => {
  let sandbox: Sandbox;
  const V6 = ['x/a', 'x/b', 'x/c', 'x/six'];

  beforeAll(async () => {
    sandbox = await createSandbox({ nodes: NODES, ipv6: {} });
    await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    await sandbox.addPod({ namespace: 'x', name: 'b', node: 'n1', families: [6, 4] });
    await sandbox.addPod({ namespace: 'x', name: 'c', node: 'n2' });
    await sandbox.addPod({ namespace: 'x', name: 'six', node: 'n1', families: [6] });
    await sandbox.addPod({ namespace: 'x', name: 'four', node: 'n2', families: [4] });
  });
  afterAll(async () => {
    await sandbox?.destroy();
  });

  it('plans addresses like flannel: a /64 per node out of the /56, cni0 with both gateways, podIPs in the order asked', async () => {
    expect(sandbox.nodes().map((n) => [n.name, n.ipv6?.podCidr, n.ipv6?.gatewayIp])).toEqual([
      ['n1', 'fd00:10:244:1::/64', 'fd00:10:244:1::1'],
      ['n2', 'fd00:10:244:2::/64', 'fd00:10:244:2::1'],
    ]);
    expect(sandbox.pods().map((p) => [p.key, p.ip, p.ips])).toEqual([
      ['x/a', '10.244.1.2', ['10.244.1.2', 'fd00:10:244:1::2']],
      ['x/b', 'fd00:10:244:1::3', ['fd00:10:244:1::3', '10.244.1.3']],
      ['x/c', '10.244.2.2', ['10.244.2.2', 'fd00:10:244:2::2']],
      ['x/six', 'fd00:10:244:1::4', ['fd00:10:244:1::4']],
      ['x/four', '10.244.2.3', ['10.244.2.3']],
    ]);
    const cni0 = (await run('ip', ['addr', 'show', 'cni0'], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(cni0).toContain('inet 10.244.1.1/24');
    expect(cni0).toContain('inet6 fd00:10:244:1::1/64');
    const routes = (await run('ip', ['-6', 'route'], { netns: sandbox.nodeNetns('n1') })).stdout;
    expect(routes).toContain('fd00:10:244:2::/64 via fd00:99::2 dev eth0');
    expect(sandbox.nodes()[1]?.subnetEnv).toContain('FLANNEL_IPV6_SUBNET=fd00:10:244:2::1/64');
    // No address of a pod is tentative: DAD is off, so nothing races it.
    const six = (await run('ip', ['-6', 'addr', 'show', 'dev', 'eth0'], { netns: sandbox.podNetns('x/six') })).stdout;
    expect(six).toContain('fd00:10:244:1::4/64');
    expect(six).not.toContain('tentative');
    expect((await run('ip', ['-4', 'addr', 'show', 'dev', 'eth0'], { netns: sandbox.podNetns('x/six') })).stdout).toBe('');
    expect(() => sandbox.addressOf('x/six', 4)).toThrow(/no IPv4 address/);
    expect(() => sandbox.addressOf('x/four', 6)).toThrow(/no IPv6 address/);
  });

  it.each(['TCP', 'UDP', 'SCTP'] as const)(
    'every IPv6 pod reaches every IPv6 pod on %s/80 with cold neighbour caches',
    async (protocol) => {
      await coldNeighbours(sandbox);
      const observed = await probeMatrix(sandbox, { from: V6, to: V6, protocol, port: 80, family: 6, timeoutMs: TIMEOUT_MS });
      expectMatrix(observed, matrixOf(V6, V6, true));
    },
  );

  it('the probes resolved their same-node peer with neighbour discovery (no cache was pre-filled)', async () => {
    await coldNeighbours(sandbox);
    const before = (await run('ip', ['-6', 'neigh', 'show', 'fd00:10:244:1::3'], { netns: sandbox.podNetns('x/a') })).stdout;
    expect(before.trim()).toBe('');
    await probeMatrix(sandbox, { from: ['x/a'], to: ['x/b'], protocol: 'TCP', port: 80, family: 6, timeoutMs: TIMEOUT_MS });
    const after = (await run('ip', ['-6', 'neigh', 'show', 'fd00:10:244:1::3'], { netns: sandbox.podNetns('x/a') })).stdout;
    expect(after).toMatch(/lladdr [0-9a-f:]{17} (REACHABLE|STALE|DELAY|PROBE)/);
  });

  it('IPv4 still works beside it, IPv4-only pod included', async () => {
    const V4 = ['x/a', 'x/b', 'x/c', 'x/four'];
    const observed = await probeMatrix(sandbox, { from: V4, to: V4, protocol: 'TCP', port: 80, family: 4, timeoutMs: TIMEOUT_MS });
    expectMatrix(observed, matrixOf(V4, V4, true));
  });

  it('one ip6tables DROP of new connections to x/b blocks exactly those cells, and no IPv4 cell', async () => {
    const netns = sandbox.nodeNetns('n1');
    const rule = ['FORWARD', '-d', 'fd00:10:244:1::3/128', '-m', 'conntrack', '--ctstate', 'NEW', '-j', 'DROP'];
    await run('ip6tables', ['-I', 'FORWARD', '1', ...rule.slice(1)], { netns });
    try {
      const expected = matrixOf(V6, V6, (from, to) => to !== 'x/b' || from === 'x/b');
      const result = await waitForMatrix(sandbox, expected, {
        protocol: 'TCP',
        port: 80,
        family: 6,
        deadlineMs: 2000,
        timeoutMs: TIMEOUT_MS,
      });
      if (!result.ok) console.log(formatMatrix(result.observed, { expected }));
      expect(result.ok).toBe(true);
      const v4 = await probeMatrix(sandbox, {
        from: ['x/a', 'x/c'],
        to: ['x/b'],
        protocol: 'TCP',
        port: 80,
        family: 4,
        timeoutMs: TIMEOUT_MS,
      });
      expectMatrix(v4, matrixOf(['x/a', 'x/c'], ['x/b'], true));
    } finally {
      await run('ip6tables', ['-D', ...rule], { netns });
    }
  });

  it('destroy() leaves nothing behind', async () => {
    const other = await createSandbox({ nodes: NODES.slice(0, 1), ipv6: {} });
    await other.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    await other.destroy();
    expect(await findLeftovers(other.prefix)).toEqual({ netns: [], pids: [] });
  });
});

describe('IPv6-only sandbox (flannel with EnableIPv4 false)', () => {
  let sandbox: Sandbox;
  const PODS = ['x/a', 'x/b', 'x/c'];

  beforeAll(async () => {
    sandbox = await createSandbox({ nodes: NODES, ipv6: { only: true } });
    await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
    await sandbox.addPod({ namespace: 'x', name: 'b', node: 'n1' });
    await sandbox.addPod({ namespace: 'x', name: 'c', node: 'n2' });
  });
  afterAll(async () => {
    await sandbox?.destroy();
  });

  it('has no IPv4 anywhere: nodes and pods carry only IPv6, the lease file only the IPv6 lines', async () => {
    expect(sandbox.nodes().map((n) => [n.name, n.podCidr, n.gatewayIp, n.underlayIp])).toEqual([
      ['n1', 'fd00:10:244:1::/64', 'fd00:10:244:1::1', 'fd00:99::1'],
      ['n2', 'fd00:10:244:2::/64', 'fd00:10:244:2::1', 'fd00:99::2'],
    ]);
    expect(sandbox.pods().map((p) => [p.key, p.ips])).toEqual([
      ['x/a', ['fd00:10:244:1::2']],
      ['x/b', ['fd00:10:244:1::3']],
      ['x/c', ['fd00:10:244:2::2']],
    ]);
    expect(sandbox.nodes()[0]?.subnetEnv).toBe(
      'FLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:1::1/64\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n',
    );
    for (const netns of [sandbox.nodeNetns('n1'), sandbox.podNetns('x/a')]) {
      expect((await run('ip', ['-4', 'addr', 'show', 'scope', 'global'], { netns })).stdout).toBe('');
    }
    await expect(sandbox.addPod({ namespace: 'x', name: 'd', node: 'n1', families: [4, 6] })).rejects.toThrow(/IPv6-only/);
  });

  it.each(['TCP', 'UDP', 'SCTP'] as const)('every pod reaches every pod on %s/80 with cold neighbour caches', async (protocol) => {
    await coldNeighbours(sandbox);
    expectMatrix(await probeMatrix(sandbox, { protocol, port: 80, timeoutMs: TIMEOUT_MS }), matrixOf(PODS, PODS, true));
  });

  it('netfence enforces a default-deny plus an allow there, ND included (same-node a->b, cross-node c->b)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nft-v6only-'));
    try {
      const pods = sandbox.pods().map((p) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace: p.namespace, name: p.name, labels: { app: p.name } },
        spec: { nodeName: p.node, containers: [{ name: 'agent' }] },
        status: { phase: 'Running', podIP: p.ip, podIPs: [{ ip: p.ip }] },
      }));
      const spec = (podSelector: object, ingress?: object[]) => ({
        podSelector,
        policyTypes: ['Ingress'],
        ...(ingress ? { ingress } : {}),
      });
      const policies = [
        { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { namespace: 'x', name: 'deny' }, spec: spec({}) },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { namespace: 'x', name: 'b-from-a-c' },
          spec: spec({ matchLabels: { app: 'b' } }, [
            { from: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['a', 'c'] }] } }] },
          ]),
        },
      ];
      const file = join(dir, 'cluster.json');
      const items = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }, ...pods, ...policies];
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      for (const node of sandbox.nodes()) {
        let err = '';
        const code = await main(
          [
            'apply',
            '--netns',
            node.netns,
            '--node-name',
            node.name,
            '--pod-cidr',
            node.podCidr,
            '--log-level',
            'error',
            '--resources',
            file,
          ],
          {
            out: () => undefined,
            err: (t) => (err += t),
          },
        );
        expect({ node: node.name, code, err: err.split('\n').filter((l) => l && !/^(applied|in sync):/.test(l)) }).toEqual({
          node: node.name,
          code: 0,
          err: [],
        });
      }
      // "isolated for ingress" + "allowed from app in (a, c)"; a pod always reaches itself.
      const expected = matrixOf(PODS, PODS, (from, to) => from === to || (to === 'x/b' && from !== 'x/b'));
      for (const protocol of ['TCP', 'UDP', 'SCTP'] as const) {
        const result = await waitForMatrix(sandbox, expected, {
          protocol,
          port: 80,
          deadlineMs: 3000,
          timeoutMs: TIMEOUT_MS,
          beforeRound: () => coldNeighbours(sandbox),
        });
        if (!result.ok) console.log(protocol, formatMatrix(result.observed, { expected }));
        expect(result.ok).toBe(true);
      }
    } finally {
      for (const node of sandbox.nodes())
        await main(['cleanup', '--netns', node.netns, '--log-level', 'error'], { out: () => undefined, err: () => undefined });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
