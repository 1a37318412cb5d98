// ClusterNetworkPolicy egress `domainNames` on real packets, with the DNS agent's part played by hand: the
// apply path programs a node whose pods x/a and x/c are subjects of an Admin Accept of good.example above
// a Deny of everything, and x/b serves. Before anything is learned, a's connection to b is dropped; after
// `ipset add <a's set> <b> timeout N comment "…"` (what the agent writes when a's lookup of good.example
// answers with b's address) a connects and c, another subject, still does not; a drift check and a resync
// leave the learned member alone; when the entry expires new connections are dropped again while an
// established one survives (NPEP-133: "When the TTL for a DNS record expires, the implementor should stop
// allowing new connections to that IP. Existing connection will still be allowed").
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand -- test/kernel/dns-learned-sets.test.ts

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { compile } from '../../src/compile/index.js';
import { loadManifests } from '../../src/cluster/manifests.js';
import { run } from '../../src/dataplane/exec.js';
import { defaultNodeSettings, learnedComment } from '../../src/model/index.js';
import { NODE } from '../helpers/builders.js';
import { createPolicyNode, POD_CIDR, type PolicyNode } from '../helpers/bridge-node.js';
import { waitUntil } from '../helpers/daemon-harness.js';
import { startFlowPeer, type FlowPeer } from '../helpers/flow-peer.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(90_000);

const FLOW_PORT = 7010;

function manifest(node: PolicyNode): string {
  const pod = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'x', labels },
    spec: { nodeName: NODE },
    status: { phase: 'Running', podIP: node.ip(name as 'a' | 'b' | 'c') },
  });
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { podCIDR: POD_CIDR }, status: { addresses: [] } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
      pod('a', { role: 'client' }),
      pod('b', { app: 'server' }),
      pod('c', { role: 'client' }),
      {
        apiVersion: 'policy.networking.k8s.io/v1alpha2',
        kind: 'ClusterNetworkPolicy',
        metadata: { name: 'by-name' },
        spec: {
          tier: 'Admin',
          priority: 1,
          subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } } },
          egress: [
            { name: 'good', action: 'Accept', to: [{ domainNames: ['good.example'] }] },
            { name: 'nothing-else', action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] },
          ],
        },
      },
    ],
  });
}

describeKernel('domainNames: a learned address opens the way for its own pod only, until it expires', () => {
  let node: PolicyNode | undefined;
  let dir = '';
  let file = '';
  let server: FlowPeer | undefined;
  let client: FlowPeer | undefined;
  const n = () => node!;
  const nodeArgs = () => ['--netns', n().netns, '--node-name', NODE, '--pod-cidr', POD_CIDR, '--log-level', 'error', '--resources', file];
  const netfence = async (argv: readonly string[]): Promise<{ code: number; text: string }> => {
    let text = '';
    const code = await main(argv, { out: (t) => void (text += t), err: (t) => void (text += t) });
    return { code, text };
  };
  /** a's learned set: the compiler names it (the DNS agent reads the name from the compile's plan). */
  const learnedSetOf = (pod: string): string => {
    const { desired } = compile(loadManifests([file]).snapshot, defaultNodeSettings(NODE, [POD_CIDR]));
    const set = desired.dns?.sets.find((s) => s.pod === pod && s.family === 4);
    if (!set) throw new Error(`no learned set for ${pod}`);
    return set.setName;
  };
  const ipset = (...args: string[]) => run('ipset', args, { netns: n().netns });
  const members = async (set: string): Promise<string[]> => {
    const lines = (await ipset('list', set)).stdout.split('\n');
    return lines.slice(lines.indexOf('Members:') + 1).filter((l) => l.trim() !== '');
  };

  beforeAll(async () => {
    if (!isRoot()) return;
    node = await createPolicyNode();
    dir = mkdtempSync(join(tmpdir(), 'nft-dns-'));
    file = join(dir, 'cluster.json');
    writeFileSync(file, manifest(node));
    server = await startFlowPeer(node.sandbox.podNetns('x/b'));
    await server.listen('TCP', FLOW_PORT);
    client = await startFlowPeer(node.sandbox.podNetns('x/a'));
  }, 60_000);
  afterAll(async () => {
    await client?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await node?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('nothing learned: the subject is dropped by the Deny; learned by hand for a: a connects, c still does not', async () => {
    expect(await n().reachesServer('a')).toBe(true);
    const applied = await netfence(['apply', ...nodeArgs()]);
    expect(applied).toMatchObject({ code: 0 });
    expect(await n().reachesServer('a')).toBe(false);
    expect(await n().reachesServer('c')).toBe(false);

    const set = learnedSetOf('x/a');
    const comment = learnedComment({ name: 'good.example', learnedAt: Math.floor(Date.now() / 1000) });
    await ipset('add', set, n().ip('b'), 'timeout', '600', 'comment', comment);
    await waitUntil('a reaches b once b is learned for a', () => n().reachesServer('a'), 10_000);
    expect(await n().reachesServer('c')).toBe(false);

    // trace reads the member, its comment and its remaining timeout from the live kernel.
    const trace = (from: string) =>
      netfence([
        'trace',
        '--netns',
        n().netns,
        '--node-name',
        NODE,
        '--log-level',
        'error',
        '--resources',
        file,
        '--src',
        from,
        '--dst',
        n().ip('b'),
        '--proto',
        'tcp',
        '--port',
        '80',
      ]);
    const allowed = await trace('x/a');
    expect(allowed.code).toBe(0);
    expect(allowed.text.replace(/\s+/g, ' ')).toMatch(
      new RegExp(
        `allowed: ${n().ip('b').replace(/\./g, '\\.')} learned for good\\.example from x/a's lookup at \\d\\d:\\d\\d:\\d\\d, until \\d\\d:\\d\\d:\\d\\d`,
      ),
    );
    const refused = await trace('x/c');
    expect(refused.code).toBe(1);
    expect(refused.text.replace(/\s+/g, ' ')).toContain(
      'would be allowed by ClusterNetworkPolicy by-name rule egress:0 good Accept, after x/c looks up good.example',
    );
  });

  it('the learned member is no drift: diff is in sync, a second apply keeps it, a still connects', async () => {
    const set = learnedSetOf('x/a');
    const diff = await netfence(['diff', ...nodeArgs()]);
    expect(diff).toMatchObject({ code: 0 });
    expect(await netfence(['apply', ...nodeArgs()])).toMatchObject({ code: 0 });
    expect(await members(set)).toEqual([
      expect.stringMatching(new RegExp(`^${n().ip('b').replace(/\./g, '\\.')} timeout \\d+ comment "\\d+ good\\.example"$`)),
    ]);
    expect(await n().reachesServer('a')).toBe(true);
    // inspect lists what a learned, per rule and pod, from the live kernel.
    const inspect = await netfence(['inspect', '--netns', n().netns, '--log-level', 'error', '--pod', 'x/a']);
    expect(inspect.text.replace(/\s+/g, ' ')).toMatch(
      new RegExp(`learned by x/a for good\\.example: ${n().ip('b').replace(/\./g, '\\.')} \\(good\\.example, \\d+ s left\\)`),
    );
  });

  it('expiry: new connections are dropped again, an established one keeps flowing both ways', async () => {
    await client!.connect('TCP', n().ip('b'), FLOW_PORT, 'kept');
    await ipset('add', '-exist', learnedSetOf('x/a'), n().ip('b'), 'timeout', '1', 'comment', 'expiring');
    await waitUntil('a no longer reaches b once the entry expired', async () => !(await n().reachesServer('a')), 15_000);
    await client!.send('kept', 'after-expiry-c');
    await waitUntil('b receives on the established flow', async () => (await server!.received('kept')).includes('after-expiry-c'), 8000);
    await server!.send('kept', 'after-expiry-s');
    await waitUntil('a receives on the established flow', async () => (await client!.received('kept')).includes('after-expiry-s'), 8000);
  });
});
