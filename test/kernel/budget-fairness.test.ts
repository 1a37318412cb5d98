// The node budget is shared fairly between namespaces, proven with packets: namespace `big`, older, has one pod
// on the node and a policy whose 100 excepts fill the whole budget (100 set members); namespace `tiny`, newer,
// has a one-member policy. Admitted oldest first across the node, `big` took everything and `tiny`'s policy
// failed closed (its pod took nothing in). With fair shares (docs/hostile-input.md, "The node budget") tiny's
// demand is within budget/2, so it is enforced; big's policy, past its share, fails closed instead.
//
// Expectations from the API: "IPBlock describes a particular CIDR ... that is allowed ... with the except
// entries excluded"; a pod selected by a policy is isolated and only what some policy allows gets in; a policy
// netfence cannot enforce fails closed (docs/hostile-input.md).

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const PODS = [
  { namespace: 'big', name: 'a' },
  { namespace: 'tiny', name: 'a' },
  { namespace: 'tiny', name: 'b' },
  { namespace: 'tiny', name: 'c' },
] as const;

/** `n` distinct host addresses outside the sandbox's ranges, as /32 CIDRs. */
const hosts = (n: number): string[] => Array.from({ length: n }, (_, i) => `198.18.${Math.floor(i / 256)}.${i % 256}/32`);

function netpol(namespace: string, name: string, createdAt: string, from: object[]): object {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace, name, creationTimestamp: createdAt },
    spec: { podSelector: { matchLabels: { app: 'a' } }, policyTypes: ['Ingress'], ingress: [{ from }] },
  };
}

describeKernel('node budget: one namespace cannot fail another within its fair share (packets)', () => {
  let sandbox: Sandbox;
  let dir: string;
  let applyErr = '';
  const reaches = async (from: string, to: string): Promise<boolean> =>
    (await sandbox.probe(from, { protocol: 'TCP', ip: sandbox.addressOf(to), port: 80, timeoutMs: 500 })).ok;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-fairness-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    for (const p of PODS) await sandbox.addPod({ ...p, node: 'n1' });
    const pods = sandbox.pods().map((p) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: p.namespace, name: p.name, labels: { app: p.name } },
      spec: { nodeName: p.node, containers: [{ name: 'agent' }] },
      status: { phase: 'Running', podIP: p.ip, podIPs: [{ ip: p.ip }] },
    }));
    const namespaces = ['big', 'tiny'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }));
    const policies = [
      // Everyone except 100 addresses: 100 set members (a /0 needs no cidr set), the whole budget.
      netpol('big', 'blocklist', '2026-01-01T00:00:00Z', [{ ipBlock: { cidr: '0.0.0.0/0', except: hosts(100) } }]),
      // Only tiny/b: one member.
      netpol('tiny', 'only-b', '2026-03-01T00:00:00Z', [{ ipBlock: { cidr: `${sandbox.addressOf('tiny/b')}/32` } }]),
    ];
    const file = join(dir, 'cluster.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...namespaces, ...pods, ...policies] }));
    const node = sandbox.nodes()[0]!;
    const argv = ['apply', '--netns', node.netns, '--node-name', node.name, '--pod-cidr', node.podCidr, '--budget-set-members', '100'];
    const code = await main([...argv, '--log-level', 'error', '--resources', file], { out: () => undefined, err: (t) => (applyErr += t) });
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

  it("tiny's one-member policy is enforced: tiny/b gets in, tiny/c does not", async () => {
    expect(await reaches('tiny/b', 'tiny/a')).toBe(true);
    expect(await reaches('tiny/c', 'tiny/a')).toBe(false);
  });

  it("big's policy, past its share, fails closed with a problem naming the share: its pod takes nothing in", async () => {
    expect(applyErr).toMatch(/NetworkPolicy big\/blocklist: spec: .*node's budget of 100.*namespace big's fair share is 99 set members/);
    expect(applyErr).not.toMatch(/tiny\/only-b: .*budget/);
    for (const from of ['tiny/b', 'tiny/c']) expect(await reaches(from, 'big/a')).toBe(false);
  });
});
