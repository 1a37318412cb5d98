// Two CNI cache entries claiming one address, with real frames. A stale sandbox (its veth still on the
// bridge, its cache entry still naming the address it held) and the pod that got that address next
// both claim it: the stale one must not be able to send as the new pod. Pods s (stale), n (new) and c
// (the receiver) on one sandbox node; the anti-spoofing guard runs with the node's real links, cache
// directory and nft.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { UNKNOWN_POLICING } from '../../src/antispoof/bridged.js';
import { AntiSpoofGuard } from '../../src/antispoof/guard.js';
import { ANTISPOOF_TABLE } from '../../src/antispoof/render.js';
import { readCniCache } from '../../src/dataplane/cni-cache.js';
import { run } from '../../src/dataplane/exec.js';
import { listLinks } from '../../src/dataplane/links.js';
import { applyNftScript, readNftCounts } from '../../src/dataplane/nft.js';
import { nullLogger } from '../../src/log.js';
import { removeCniResult, writeCniResult, type CachedPod } from '../../sandbox/cni-cache.js';
import { createSandbox, nodeCacheDir, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { waitUntil } from '../helpers/daemon-harness.js';
import { startFlowPeer, type FlowPeer } from '../helpers/flow-peer.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const SINK = 7201;

describeKernel('anti-spoofing with two cache entries claiming one address', () => {
  let dir: string;
  let sandbox: Sandbox;
  let guard: AntiSpoofGuard | undefined;
  const peers: Record<string, FlowPeer> = {};
  const pod = (name: string): SandboxPod => sandbox.pods().find((p) => p.key === `x/${name}`)!;
  const netns = () => sandbox.nodeNetns(NODE.name);
  /** The cache entry the sandbox wrote for a pod (same shape and name as sandbox/topology.ts writes). */
  const entryOf = (p: SandboxPod, ips: readonly string[]): CachedPod => ({
    node: NODE.name,
    netns: p.netns,
    hostVeth: p.hostVeth,
    ips: ips.map((address) => ({ address, prefix: 24 })),
    containerId: `${p.netns}-${p.hostVeth}`,
  });
  let tag = 0;
  /** Whether c hears one datagram `from` sends with source `src` within 2 s (a generous bound for one veth hop under load). */
  async function heard(from: string, src: string): Promise<boolean> {
    const text = `t${++tag}`;
    await peers[from]!.sendFrom(src, pod('c').ip, SINK, text);
    const deadline = Date.now() + 2000;
    for (;;) {
      if ((await peers['c']!.sunk()).some((d) => d.text === text && d.src === src)) return true;
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-antispoof-conflict-'));
    sandbox = await createSandbox({ nodes: [NODE] }, { cniCacheDir: dir });
    for (const name of ['s', 'n', 'c']) await sandbox.addPod({ namespace: 'x', name, node: NODE.name });
    for (const name of ['s', 'n', 'c']) peers[name] = await startFlowPeer(pod(name).netns);
    await peers['c']!.sink(SINK);
    // s and n know c's MAC for good: what is tested is the source address of their datagrams, not whether
    // their ARP for c (whose sender is refused too while the address is contested) got through in time.
    const cMac = (JSON.parse((await run('ip', ['-n', pod('c').netns, '-j', 'link', 'show', 'eth0'])).stdout) as { address: string }[])[0]!
      .address;
    for (const name of ['s', 'n'])
      await run('ip', ['-n', pod(name).netns, 'neigh', 'replace', pod('c').ip, 'lladdr', cMac, 'dev', 'eth0', 'nud', 'permanent']);
    // s is the sandbox that held n's address before: its entry names that address, not its own.
    removeCniResult(dir, entryOf(pod('s'), [pod('s').ip]));
    writeCniResult(dir, entryOf(pod('s'), [pod('n').ip]));
  });

  afterAll(async () => {
    for (const p of Object.values(peers)) await p.stop().catch(() => undefined);
    await guard?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('without the table, s can send as n (the check can tell)', async () => {
    expect(await heard('s', pod('n').ip)).toBe(true);
  });

  it('with the table, neither s nor n may send as the contested address; the refusals are counted', async () => {
    guard = new AntiSpoofGuard({
      bridge: 'cni0',
      readLinks: () => listLinks({ netns: netns() }),
      readCache: () => readCniCache(nodeCacheDir(dir, NODE.name), 'cni0'),
      apply: (script) => applyNftScript(script, netns()),
      antiSpoofing: true,
      policing: () => UNKNOWN_POLICING,
      logger: nullLogger,
      pollMs: 200,
    });
    guard.start();
    await waitUntil('the table written', () => guard!.writes > 0);
    const drops = async () => [...(await readNftCounts('bridge', ANTISPOOF_TABLE, netns())).values()].reduce((n, c) => n + c.packets, 0);
    const before = await drops();
    expect(await heard('s', pod('n').ip)).toBe(false);
    expect(await heard('n', pod('n').ip)).toBe(false);
    expect(await drops()).toBeGreaterThanOrEqual(before + 2);
  });

  it('once the stale entry is gone, n sends as itself again and s still cannot', async () => {
    removeCniResult(dir, entryOf(pod('s'), [pod('n').ip]));
    const holders = () => (guard!.state?.bindings ?? []).filter((b) => b.ipv4.includes(pod('n').ip)).map((b) => b.port);
    await waitUntil("n's address bound to n's port alone", () => holders().join() === pod('n').hostVeth);
    expect(await heard('n', pod('n').ip)).toBe(true);
    expect(await heard('s', pod('n').ip)).toBe(false);
  });
});
