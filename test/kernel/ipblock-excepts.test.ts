// "Egress to the internet except a blocklist", at scale, on both families, proven with packets: one policy
// allows in from 0.0.0.0/0 and ::/0 each except 10,000 random host addresses plus x/a's. The excepts are a
// set of their own, so the kernel holds what the policy wrote (10,001 members per family), not the
// ~320,000 CIDRs cidr-minus-excepts leaves. Then the node budget: with room for that policy and little
// more, an older small policy is enforced, a newer big one fails closed (its pod isolated, nothing it
// allows allowed) with a problem, and a newer small one that still fits is enforced.
//
// Expectations from the API: "IPBlock describes a particular CIDR ... that is allowed ... with the except
// entries excluded"; a pod selected by a policy is isolated and only what some policy allows gets in.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox, type SandboxFamily } from '../../sandbox/index.js';

jest.setTimeout(180_000);

const PODS = ['a', 'b', 'c', 'd', 'e'] as const;

/** `n` random host addresses of one family, as /32 or /128 CIDRs (deterministic). */
function randomHosts(n: number, seed: number, family: SandboxFamily): string[] {
  let x = seed;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  return Array.from({ length: n }, () => {
    if (family === 4) {
      const v = next();
      // Kept out of the sandbox's own ranges (10.x): the pods' neighbours must stay allowed.
      return `${11 + ((v >>> 24) % 200)}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/32`;
    }
    return `2001:db8:${Array.from({ length: 6 }, () => (next() >>> 16).toString(16)).join(':')}/128`;
  });
}

function netpol(name: string, createdAt: string, app: string, from: object[]): object {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace: 'x', name, creationTimestamp: createdAt },
    spec: { podSelector: { matchLabels: { app } }, policyTypes: ['Ingress'], ingress: [{ from }] },
  };
}

describe('ipBlock excepts at scale and the node budget, proven by packets on both families', () => {
  let sandbox: Sandbox;
  let dir: string;
  let applyErr = '';
  const ip = (pod: string, family: SandboxFamily) => sandbox.addressOf(`x/${pod}`, family);
  const reaches = async (from: string, to: string, family: SandboxFamily): Promise<boolean> =>
    (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: ip(to, family), port: 80, timeoutMs: 500 })).ok;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-excepts-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }], ipv6: {} });
    for (const name of PODS) await sandbox.addPod({ namespace: 'x', name, node: 'n1' });
    const pods = sandbox.pods().map((p) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: 'x', name: p.name, labels: { app: p.name } },
      spec: { nodeName: p.node, containers: [{ name: 'agent' }] },
      status: { phase: 'Running', podIP: p.ip, podIPs: p.ips.map((i) => ({ ip: i })) },
    }));
    const policies = [
      // c: everyone except 10,000 random addresses and x/a, on each family.
      netpol('blocklist', '2026-01-01T00:00:00Z', 'c', [
        { ipBlock: { cidr: '0.0.0.0/0', except: [...randomHosts(10_000, 1, 4), `${ip('a', 4)}/32`] } },
        { ipBlock: { cidr: '::/0', except: [...randomHosts(10_000, 2, 6), `${ip('a', 6)}/128`] } },
      ]),
      // d: newer and 5,001 members more than the budget has left: refused, fails closed.
      netpol('too-late', '2026-01-02T00:00:00Z', 'd', [
        { ipBlock: { cidr: '0.0.0.0/0', except: randomHosts(5_000, 3, 4) } },
        { ipBlock: { cidr: '::/0', except: randomHosts(5_000, 4, 6) } },
      ]),
      // e: newest, one member: still fits, enforced (x/a in, everyone else out).
      netpol('small', '2026-01-03T00:00:00Z', 'e', [{ ipBlock: { cidr: `${ip('a', 4)}/32` } }]),
    ];
    const file = join(dir, 'cluster.json');
    const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } };
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [namespace, ...pods, ...policies] }));
    const node = sandbox.nodes()[0]!;
    // blocklist writes 2 × 10,001 members; small 1. 25,000 leaves too-late's 10,000 no room.
    const argv = ['apply', '--netns', node.netns, '--node-name', node.name, '--pod-cidr', node.podCidr, '--pod-cidr', node.ipv6!.podCidr];
    const code = await main([...argv, '--budget-set-members', '25000', '--log-level', 'error', '--resources', file], {
      out: () => undefined,
      err: (t) => (applyErr += t),
    });
    if (code !== 0) throw new Error(`netfence apply exited ${code}:\n${applyErr}`);
  });

  afterAll(async () => {
    try {
      for (const node of sandbox?.nodes() ?? [])
        await main(['cleanup', '--netns', node.netns, '--log-level', 'error'], { out: () => undefined, err: () => undefined });
    } finally {
      await sandbox?.destroy();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the kernel holds the excepts as written: 10,001 members per family, not their complement', async () => {
    const saved = (await run('ipset', ['save'], { netns: sandbox.nodes()[0]!.netns })).stdout;
    const sizes = new Map<string, number>();
    for (const line of saved.split('\n')) {
      const m = /^add (nf[46]x:\S+) /.exec(line);
      if (m) sizes.set(m[1]!, (sizes.get(m[1]!) ?? 0) + 1);
    }
    const byFamily = (f: 4 | 6) => [...sizes].filter(([name]) => name.startsWith(`nf${f}x:`)).map(([, n]) => n);
    expect(byFamily(4)).toEqual([new Set([...randomHosts(10_000, 1, 4), `${ip('a', 4)}/32`]).size]);
    expect(byFamily(6)).toEqual([new Set([...randomHosts(10_000, 2, 6), `${ip('a', 6)}/128`]).size]);
  });

  it.each([4, 6] as const)('IPv%s: the excepted address is blocked, its neighbours are let in', async (family) => {
    expect(await reaches('a', 'c', family)).toBe(false);
    expect(await reaches('b', 'c', family)).toBe(true);
    expect(await reaches('e', 'c', family)).toBe(true);
  });

  it('the policy past the node budget is refused with a problem that says so', () => {
    expect(applyErr).toMatch(/NetworkPolicy x\/too-late: spec: .*node's budget of 25000/);
    expect(applyErr).not.toMatch(/x\/(blocklist|small): .*budget/);
  });

  it.each([4, 6] as const)('IPv%s: the refused policy fails closed: its pod takes nothing in', async (family) => {
    for (const from of ['a', 'b', 'c']) expect(await reaches(from, 'd', family)).toBe(false);
  });

  it('the newer small policy that still fits is enforced', async () => {
    expect(await reaches('a', 'e', 4)).toBe(true);
    expect(await reaches('b', 'e', 4)).toBe(false);
  });
});
