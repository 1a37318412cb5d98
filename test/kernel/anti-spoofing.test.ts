// Anti-spoofing with real frames: pods x/a, x/b, x/c on one sandbox node whose pods have a libcni-style
// result cache. Before netfence runs, the attacks work (so the checks below can tell): pod a sends UDP
// with b's source address and c takes it for b's, and a's gratuitous ARP makes c send b's traffic to a's
// MAC. With the daemon running, both are refused and counted, normal traffic still flows, a new pod
// works once its cache entry exists, a port whose pod is not known sends nothing, and an address freed
// by a deleted pod works for the next pod that gets it.

import { jest } from '@jest/globals';
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { readNftCounters } from '../../src/dataplane/nft.js';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, nodeCacheDir, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { FakeApiServer } from '../fakes/fake-apiserver.js';
import {
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { startFlowPeer, type FlowPeer } from '../helpers/flow-peer.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const SINK = 7200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeKernel('anti-spoofing on the pod bridge', () => {
  let dir: string;
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let daemon: NodeDaemon | undefined;
  const peers: Record<string, FlowPeer> = {};
  const pod = (name: string): SandboxPod => sandbox.pods().find((p) => p.key === `x/${name}`)!;
  const netns = () => sandbox.nodeNetns(NODE.name);
  const counters = async () => readNftCounters('bridge', 'netfence', netns());
  const counter = async (comment: string) => (await counters()).get(comment) ?? 0;

  /** c's neighbour entry for `ip`: the MAC it would send to. */
  const macSeenBy = async (viewer: SandboxPod, ip: string): Promise<string | undefined> => {
    const out = JSON.parse((await run('ip', ['-n', viewer.netns, '-j', 'neigh', 'show', ip])).stdout) as { lladdr?: string }[];
    return out[0]?.lladdr;
  };
  const macOf = async (p: SandboxPod): Promise<string> =>
    (JSON.parse((await run('ip', ['-n', p.netns, '-j', 'link', 'show', 'eth0'])).stdout) as { address: string }[])[0]!.address;

  /** c talks to b (its neighbour entry for b is fresh), then a claims b's address once the entry's locktime passed. */
  async function poisonAttempt(): Promise<string | undefined> {
    await run('ip', ['-n', pod('c').netns, 'neigh', 'flush', 'dev', 'eth0']);
    expect((await sandbox.probe('x/c', { protocol: 'TCP', ip: pod('b').ip, port: 80, timeoutMs: 2000 })).ok).toBe(true);
    // Neighbour locktime (1 s by default): a claim sooner than that is ignored whatever netfence does.
    await sleep(1200);
    await peers['a']!.garp(pod('b').ip);
    await sleep(300);
    return macSeenBy(pod('c'), pod('b').ip);
  }

  async function spoofAttempt(tag: string): Promise<{ src: string; text: string }[]> {
    await peers['a']!.sendFrom(pod('b').ip, pod('c').ip, SINK, tag);
    await sleep(500);
    return (await peers['c']!.sunk()).filter((d) => d.text === tag);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-antispoof-'));
    sandbox = await createSandbox({ nodes: [NODE] }, { cniCacheDir: dir });
    for (const name of ['a', 'b', 'c']) await sandbox.addPod({ namespace: 'x', name, node: NODE.name });
    for (const name of ['a', 'c']) peers[name] = await startFlowPeer(pod(name).netns);
    await peers['c']!.sink(SINK);
    server = new FakeApiServer();
    await server.start();
    server.create(nodeObject(sandbox.nodes()[0]!));
    server.create(namespaceObject('x'));
    for (const name of ['a', 'b', 'c']) server.create(podObject(pod(name), { app: name }));
  });

  afterAll(async () => {
    for (const p of Object.values(peers)) await p.stop().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('without netfence, both attacks work (the checks can tell)', async () => {
    expect(await spoofAttempt('forged-before')).toEqual([{ src: pod('b').ip, text: 'forged-before' }]);
    expect(await poisonAttempt()).toBe(await macOf(pod('a')));
    // Undo the poisoning, so what follows starts from honest neighbour tables.
    await run('ip', ['-n', pod('c').netns, 'neigh', 'flush', 'dev', 'eth0']);
  });

  it('binds every pod port once the daemon runs, and normal traffic flows', async () => {
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      { 'cni-cache-dir': nodeCacheDir(dir, NODE.name) },
    );
    await waitReady(daemon);
    const guard = daemon.daemon.antiSpoof!;
    await waitUntil('three pod ports bound', () => guard.state?.bindings.length === 3);
    expect(guard.state?.bindings.map((b) => b.ipv4[0]).sort()).toEqual(['a', 'b', 'c'].map((n) => pod(n).ip).sort());
    for (const [from, to] of [
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'a'],
    ] as const) {
      for (const protocol of ['TCP', 'UDP'] as const) {
        expect({
          from,
          to,
          protocol,
          ok: (await sandbox.probe(`x/${from}`, { protocol, ip: pod(to).ip, port: 80, timeoutMs: 2000 })).ok,
        }).toEqual({ from, to, protocol, ok: true });
      }
    }
    // The node itself still reaches its pods through cni0 (its ARP and the pod's answers cross the bridge).
    expect((await sandbox.probe(sandbox.nodes()[0]!.key, { protocol: 'TCP', ip: pod('a').ip, port: 80, timeoutMs: 2000 })).ok).toBe(true);
  });

  it("refuses and counts a datagram with another pod's source address", async () => {
    const before = await counter(`nf:spoof ipv4 ${pod('a').hostVeth}`);
    expect(await spoofAttempt('forged-after')).toEqual([]);
    // Counted once the frame has crossed the bridge: under load a's neighbour lookup for c can outlast the
    // attempt's half second, or fail, and then the kernel drops the datagram before it is sent. So wait for the
    // count (with a deadline), sending the same forged datagram again each second until it is counted.
    let sentAt = Date.now();
    await waitUntil(
      'the forged datagram counted',
      async () => {
        if ((await counter(`nf:spoof ipv4 ${pod('a').hostVeth}`)) > before) return true;
        if (Date.now() - sentAt >= 1000) {
          await peers['a']!.sendFrom(pod('b').ip, pod('c').ip, SINK, 'forged-after');
          sentAt = Date.now();
        }
        return false;
      },
      10_000,
    );
    expect((await peers['c']!.sunk()).filter((d) => d.text === 'forged-after')).toEqual([]);
    // The same pod with its own address is heard: the sink was listening all along.
    await peers['a']!.sendFrom(pod('a').ip, pod('c').ip, SINK, 'honest');
    await waitUntil('c hears a', async () => (await peers['c']!.sunk()).some((d) => d.text === 'honest' && d.src === pod('a').ip));
  });

  it("refuses and counts ARP claiming another pod's address; the victim keeps its traffic", async () => {
    const before = await counter(`nf:spoof arp ${pod('a').hostVeth}`);
    expect(await poisonAttempt()).toBe(await macOf(pod('b')));
    expect(await counter(`nf:spoof arp ${pod('a').hostVeth}`)).toBeGreaterThan(before);
    expect((await sandbox.probe('x/c', { protocol: 'TCP', ip: pod('b').ip, port: 80, timeoutMs: 2000 })).ok).toBe(true);
  });

  it('trace --in-iface gives the anti-spoofing verdict; inspect lists the bound ports and their drops', async () => {
    const cli = async (...argv: string[]) => {
      let out = '';
      const code = await main([...argv, '--netns', netns()], { out: (t) => void (out += t), err: (t) => void (out += t) });
      return { code, out };
    };
    const a = pod('a');
    const forged = await cli(
      'trace',
      '--src',
      pod('b').ip,
      '--dst',
      pod('c').ip,
      '--proto',
      'udp',
      '--port',
      '80',
      '--in-iface',
      a.hostVeth,
      '--json',
    );
    expect(forged.code).toBe(0);
    expect(JSON.parse(forged.out).antiSpoof).toMatchObject({ verdict: 'drop' });
    const honest = await cli('trace', '--src', a.ip, '--dst', pod('c').ip, '--proto', 'udp', '--port', '80', '--in-iface', a.hostVeth);
    expect(honest.out).toMatch(/anti-spoofing on veth\w+: ACCEPT/);
    const inspected = await cli('inspect', '--json');
    const view = JSON.parse(inspected.out).antiSpoofing as {
      programmed: boolean;
      ports: { port: string; addresses: string[]; drops: number }[];
    };
    expect(view.programmed).toBe(true);
    expect(view.ports.find((p) => p.port === a.hostVeth)).toMatchObject({ addresses: [a.ip] });
    expect(view.ports.find((p) => p.port === a.hostVeth)!.drops).toBeGreaterThan(0);
  });

  it('trace --in-iface with an IPv6 source on this IPv4-only node still gives the anti-spoofing verdict', async () => {
    const cli = async (...argv: string[]) => {
      let out = '';
      let err = '';
      const code = await main([...argv, '--netns', netns()], { out: (t) => void (out += t), err: (t) => void (err += t) });
      return { code, out, err };
    };
    const a = pod('a');
    // No IPv6 chains here: without --in-iface the trace stops at the ruleset (exit 2), as before.
    const plain = await cli('trace', '--src', 'fd00::b', '--dst', 'fd00::c', '--proto', 'udp', '--port', '80');
    expect(plain).toMatchObject({ code: 2, out: '' });
    expect(plain.err).toMatch(/no netfence IPv6 chains/);
    // a's port is bound to IPv4 only: a global IPv6 source from it is dropped by the bridge table.
    const forged = await cli('trace', '--src', 'fd00::b', '--dst', 'fd00::c', '--proto', 'udp', '--port', '80', '--in-iface', a.hostVeth);
    expect(forged.code).toBe(1);
    expect(forged.out.replace(/\s+/g, ' ')).toMatch(
      new RegExp(`anti-spoofing on ${a.hostVeth}: DROP \\(the packet never reaches FORWARD\\)`),
    );
    expect(forged.out.replace(/\s+/g, ' ')).toMatch(/ruleset live kernel \(IPv6, netns \S+\): no netfence IPv6 chains/);
    const json = await cli(
      'trace',
      '--src',
      'fd00::b',
      '--dst',
      'fd00::c',
      '--proto',
      'udp',
      '--port',
      '80',
      '--in-iface',
      a.hostVeth,
      '--json',
    );
    expect(JSON.parse(json.out)).toMatchObject({ family: 6, antiSpoof: { verdict: 'drop' } });
    // A link-local source is let through by the bridge table; what FORWARD does is then not known (exit 2).
    const linkLocal = await cli(
      'trace',
      '--src',
      'fe80::1',
      '--dst',
      'fe80::2',
      '--proto',
      'udp',
      '--port',
      '80',
      '--in-iface',
      a.hostVeth,
    );
    expect(linkLocal.code).toBe(2);
    expect(linkLocal.out).toMatch(new RegExp(`anti-spoofing on ${a.hostVeth}: ACCEPT`));
    expect(linkLocal.err).toMatch(/no netfence IPv6 chains/);
  });

  it('a new pod works once the runtime has recorded it; a port whose pod is not known sends nothing', async () => {
    const d = await sandbox.addPod({ namespace: 'x', name: 'd', node: NODE.name });
    server.create(podObject(d, { app: 'd' }));
    await waitUntil(
      'd reaches a',
      async () => (await sandbox.probe('x/d', { protocol: 'TCP', ip: pod('a').ip, port: 80, timeoutMs: 500 })).ok,
      15_000,
    );
    // Take d's cache entry away (as if the runtime had not written it yet): d's port is unknown.
    const results = join(nodeCacheDir(dir, NODE.name), 'results');
    const file = readdirSync(results).find((f) => f.includes(d.hostVeth))!;
    renameSync(join(results, file), join(dir, 'parked'));
    const guard = daemon!.daemon.antiSpoof!;
    await waitUntil('d unknown', () => guard.state?.unknownPorts.includes(d.hostVeth) === true);
    const before = await counter('nf:spoof unknown-port');
    expect((await sandbox.probe('x/d', { protocol: 'TCP', ip: pod('a').ip, port: 80, timeoutMs: 700 })).ok).toBe(false);
    expect(await counter('nf:spoof unknown-port')).toBeGreaterThan(before);
    renameSync(join(dir, 'parked'), join(results, file));
    await waitUntil(
      'd reaches a again',
      async () => (await sandbox.probe('x/d', { protocol: 'TCP', ip: pod('a').ip, port: 80, timeoutMs: 500 })).ok,
      15_000,
    );
  });

  it('an address freed by a deleted pod works for the next pod that gets it', async () => {
    const d = pod('d');
    await sandbox.removePod('x/d');
    server.delete({ kind: 'Pod', metadata: { name: 'd', namespace: 'x' } });
    const e = await sandbox.addPod({ namespace: 'x', name: 'e', node: NODE.name, ip: d.ip });
    server.create(podObject(e, { app: 'e' }));
    expect(e.hostVeth).not.toBe(d.hostVeth);
    await waitUntil(
      'e reaches a',
      async () => (await sandbox.probe('x/e', { protocol: 'TCP', ip: pod('a').ip, port: 80, timeoutMs: 500 })).ok,
      15_000,
    );
    const guard = daemon!.daemon.antiSpoof!;
    expect(guard.state?.bindings.find((b) => b.port === d.hostVeth)).toBeUndefined();
    expect(guard.state?.bindings.find((b) => b.port === e.hostVeth)?.ipv4).toEqual([d.ip]);
    expect(existsSync(join(nodeCacheDir(dir, NODE.name), 'results'))).toBe(true);
  });

  it('cleanup removes the table (after the daemon stopped), and only then are pods unbound', async () => {
    await daemon!.stop();
    let out = '';
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t) };
    expect(await main(['cleanup', '--netns', netns()], io)).toBe(0);
    expect(out).toMatch(/the anti-spoofing table/);
    expect(await counters()).toEqual(new Map());
  });
});
