// Anti-spoofing for IPv6 with real frames, on a dual-stack sandbox node: the CNI gives pods x/a, x/b,
// x/c an IPv4 and an IPv6 address each and its libcni result cache entry lists both, as a dual-stack
// bridge/host-local ADD writes it; the API lists both podIPs. The issue's bar: "A pod
// that sends with another pod's IPv4 or IPv6 source ... is refused and counted; normal traffic ...
// still work[s]". IPv6's ARP is ND, so the same bar applies to a Neighbour Advertisement naming
// another pod's address as its target, and a pod announcing itself as a router.
//
// Before netfence runs each attack works (so the checks below can tell): a's datagram with b's source
// reaches c as b's, a's NA for b's address makes c send b's traffic to a's MAC, a's RA gives c a
// default route via a. With the daemon running all three are refused and counted, while a's own
// global and link-local traffic (and the ND under it) flows.

import { jest } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
import { describeKernel } from '../helpers/netns.js';
import { startV6Peer, type V6Peer } from '../helpers/v6-peer.js';

jest.setTimeout(120_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
/** Each pod's IPv6 address, as the sandbox's CNI gave it. */
const V6: Record<string, string> = {};
const SINK = 7300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeKernel('anti-spoofing on the pod bridge, IPv6', () => {
  let dir: string;
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let daemon: NodeDaemon | undefined;
  let gateway6: string;
  const peers: Record<string, V6Peer> = {};
  const linkLocal: Record<string, string> = {};
  const pod = (name: string): SandboxPod => sandbox.pods().find((p) => p.key === `x/${name}`)!;
  const netns = () => sandbox.nodeNetns(NODE.name);
  const counter = async (comment: string) => (await readNftCounters('bridge', 'netfence', netns())).get(comment) ?? 0;
  const macOf = async (p: SandboxPod): Promise<string> =>
    (JSON.parse((await run('ip', ['-n', p.netns, '-j', 'link', 'show', 'eth0'])).stdout) as { address: string }[])[0]!.address;
  const macSeenBy = async (viewer: SandboxPod, ip: string): Promise<string | undefined> =>
    (JSON.parse((await run('ip', ['-n', viewer.netns, '-j', '-6', 'neigh', 'show', ip])).stdout) as { lladdr?: string }[])[0]?.lladdr;
  const raRoutes = async (p: SandboxPod): Promise<string> =>
    (await run('ip', ['-n', p.netns, '-6', 'route', 'show', 'proto', 'ra'])).stdout.trim();

  /** Polls `read` until `done` holds or `ms` passed; the last value (a refusal is only known by waiting). */
  async function settle<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 2000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await read();
      if (done(v) || Date.now() >= deadline) return v;
      await sleep(100);
    }
  }

  /** `from` sends a datagram to c from `src`; what c heard of it. */
  async function sendToC(from: string, src: string, tag: string, dst = V6['c']!): Promise<{ src: string; text: string }[]> {
    await peers[from]!.sendFrom(src, dst, SINK, tag);
    return settle(
      async () => (await peers['c']!.sunk()).filter((d) => d.text === tag),
      (got) => got.length > 0,
    );
  }

  /** c talks to b (its neighbour entry for b is fresh and b's), then a advertises b's address as its own. */
  async function ndPoisonAttempt(): Promise<string | undefined> {
    await run('ip', ['-n', pod('c').netns, '-6', 'neigh', 'flush', 'dev', 'eth0']);
    const tag = `c-to-b-${Date.now()}`;
    await peers['c']!.sendFrom(V6['c']!, V6['b']!, SINK, tag);
    await waitUntil('b hears c', async () => (await peers['b']!.sunk()).some((d) => d.text === tag));
    expect(await macSeenBy(pod('c'), V6['b']!)).toBe(await macOf(pod('b')));
    await sleep(1200);
    await peers['a']!.advertise(V6['b']!);
    const bMac = await macOf(pod('b'));
    return settle(
      () => macSeenBy(pod('c'), V6['b']!),
      (mac) => mac !== bMac,
    );
  }

  /** The addresses `p`'s libcni result cache entry lists (what the daemon binds the port to). */
  function cachedAddresses(p: SandboxPod): string[] {
    const results = join(nodeCacheDir(dir, NODE.name), 'results');
    const file = join(
      results,
      readdirSync(results).find((f) => f.includes(p.hostVeth))!,
    );
    return (JSON.parse(readFileSync(file, 'utf8')) as { result: { ips: { address: string }[] } }).result.ips.map(
      (i) => i.address.split('/')[0]!,
    );
  }
  /** The pod's objects in the API, both podIPs as the CNI gave them. */
  const podInApi = (p: SandboxPod) => ({
    ...podObject(p, { app: p.name }),
    status: { phase: 'Running', podIP: p.ip, podIPs: p.ips.map((ip) => ({ ip })) },
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-antispoof6-'));
    sandbox = await createSandbox({ nodes: [NODE], ipv6: {} }, { cniCacheDir: dir });
    gateway6 = sandbox.nodes()[0]!.ipv6!.gatewayIp;
    for (const name of ['a', 'b', 'c']) {
      const p = await sandbox.addPod({ namespace: 'x', name, node: NODE.name });
      V6[name] = p.ipv6!;
      // Dual-stack from the CNI: both families on the pod and in its cache entry, nothing added by hand.
      expect(cachedAddresses(p)).toEqual([p.ipv4, p.ipv6]);
      peers[name] = await startV6Peer(p.netns);
      await peers[name]!.sink(SINK);
    }
    // Each pod's link-local address, once its DAD finished (the kernel picks it from the MAC).
    for (const name of ['a', 'b', 'c']) {
      await waitUntil(`${name} has a usable link-local address`, async () => {
        const out = JSON.parse(
          (await run('ip', ['-n', pod(name).netns, '-j', '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'link', '-tentative'])).stdout,
        ) as { addr_info?: { local?: string }[] }[];
        const ll = out[0]?.addr_info?.find((a) => a.local !== undefined)?.local;
        if (ll !== undefined) linkLocal[name] = ll;
        return ll !== undefined;
      });
    }
    server = new FakeApiServer();
    await server.start();
    // The API knows the node and its pods as dual-stack.
    const node = nodeObject(sandbox.nodes()[0]!);
    server.create({ ...node, spec: { podCIDR: NODE.podCidr, podCIDRs: [NODE.podCidr, sandbox.nodes()[0]!.ipv6!.podCidr] } });
    server.create(namespaceObject('x'));
    for (const name of ['a', 'b', 'c']) server.create(podInApi(pod(name)));
  });

  afterAll(async () => {
    for (const p of Object.values(peers)) await p.stop().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('without netfence, forged sources, forged NAs and rogue RAs all work (the checks can tell)', async () => {
    expect(await sendToC('a', V6['b']!, 'forged-before')).toEqual([{ src: V6['b'], text: 'forged-before' }]);
    expect(await ndPoisonAttempt()).toBe(await macOf(pod('a')));
    expect(await raRoutes(pod('c'))).toBe('');
    await peers['a']!.routerAdvert();
    await waitUntil('c takes a as its router', async () => (await raRoutes(pod('c'))).includes(linkLocal['a']!));
    // Undo both, so what follows starts from honest neighbour and routing tables.
    await run('ip', ['-n', pod('c').netns, '-6', 'route', 'flush', 'proto', 'ra']);
    await run('ip', ['-n', pod('c').netns, '-6', 'neigh', 'flush', 'dev', 'eth0']);
  });

  it('binds every pod port to its IPv6 address once the daemon runs; global and link-local traffic flows', async () => {
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      { 'cni-cache-dir': nodeCacheDir(dir, NODE.name), 'pod-cidr': [NODE.podCidr, sandbox.nodes()[0]!.ipv6!.podCidr] },
    );
    await waitReady(daemon);
    const guard = daemon.daemon.antiSpoof!;
    await waitUntil('three pod ports bound', () => guard.state?.bindings.length === 3);
    expect(guard.state?.bindings.map((b) => b.ipv6).sort()).toEqual([[V6['a']], [V6['b']], [V6['c']]]);
    // The same table judges bridged traffic no pod address explains for every port until the first sync
    // says which pods are isolated (none here): only then is link-local between open pods let through.
    await waitUntil('the bridge table judges no port', async () => {
      const table = (await run('nft', ['list', 'chain', 'bridge', 'netfence', 'to-pods'], { netns: netns() })).stdout;
      return !/nf:bridged to veth/.test(table);
    });
    // Fresh neighbour entries, so the datagrams below need ND (from global and from link-local sources) to cross.
    for (const name of ['a', 'c']) await run('ip', ['-n', pod(name).netns, '-6', 'neigh', 'flush', 'dev', 'eth0']);
    expect(await sendToC('a', V6['a']!, 'global')).toEqual([{ src: V6['a'], text: 'global' }]);
    expect(await sendToC('a', linkLocal['a']!, 'link-local', linkLocal['c']!)).toEqual([{ src: linkLocal['a'], text: 'link-local' }]);
    // The node's own address on cni0 (the pods' IPv6 gateway) is reached too.
    await peers['a']!.sendFrom(V6['a']!, gateway6, SINK, 'to-gateway');
    await waitUntil('a resolved the gateway', async () => (await macSeenBy(pod('a'), gateway6)) !== undefined);
  });

  it("refuses and counts a datagram with another pod's IPv6 source", async () => {
    const before = await counter(`nf:spoof ipv6 ${pod('a').hostVeth}`);
    expect(await sendToC('a', V6['b']!, 'forged-after')).toEqual([]);
    expect(await counter(`nf:spoof ipv6 ${pod('a').hostVeth}`)).toBeGreaterThan(before);
  });

  it("refuses and counts a Neighbour Advertisement for another pod's address; the victim keeps its traffic", async () => {
    const before = await counter(`nf:spoof nd ${pod('a').hostVeth}`);
    expect(await ndPoisonAttempt()).toBe(await macOf(pod('b')));
    expect(await counter(`nf:spoof nd ${pod('a').hostVeth}`)).toBeGreaterThan(before);
    // An advertisement for its own address is a pod's right: not counted.
    const own = await counter(`nf:spoof nd ${pod('a').hostVeth}`);
    await peers['a']!.advertise(V6['a']!);
    await sleep(300);
    expect(await counter(`nf:spoof nd ${pod('a').hostVeth}`)).toBe(own);
    expect(await macSeenBy(pod('c'), V6['b']!)).toBe(await macOf(pod('b')));
  });

  it('refuses and counts a Router Advertisement from a pod', async () => {
    const before = await counter(`nf:spoof router ${pod('a').hostVeth}`);
    await peers['a']!.routerAdvert();
    expect(
      await settle(
        () => counter(`nf:spoof router ${pod('a').hostVeth}`),
        (n) => n > before,
      ),
    ).toBeGreaterThan(before);
    expect(
      await settle(
        () => raRoutes(pod('c')),
        (r) => r !== '',
      ),
    ).toBe('');
  });

  it('duplicate address detection still works: a taken address is refused, a free one becomes usable', async () => {
    // DAD (RFC 4862) is how an IPv6 pod starts without DHCP: an NS from `::` for the address, which
    // whoever holds it answers. Both must cross the table for a duplicate to be noticed.
    const c = pod('c');
    // The sandbox starts pods with DAD off (accept_dad=0, addresses added nodad); c runs it from here on.
    await run('sysctl', ['-q', '-w', 'net.ipv6.conf.eth0.accept_dad=1'], { netns: c.netns });
    const flags = async (address: string): Promise<string[] | undefined> => {
      const out = JSON.parse((await run('ip', ['-n', c.netns, '-j', '-6', 'addr', 'show', 'dev', 'eth0'])).stdout) as {
        addr_info: { local?: string; dadfailed?: boolean; tentative?: boolean }[];
      }[];
      const info = out[0]?.addr_info.find((a) => a.local === address);
      return info ? [...(info.dadfailed ? ['dadfailed'] : []), ...(info.tentative ? ['tentative'] : [])] : undefined;
    };
    await run('ip', ['-n', c.netns, '-6', 'addr', 'add', `${V6['b']}/64`, 'dev', 'eth0']);
    await run('ip', ['-n', c.netns, '-6', 'addr', 'add', 'fd00:10:244:1::d/64', 'dev', 'eth0']);
    try {
      await waitUntil("c's DAD for b's address fails", async () => (await flags(V6['b']!))?.includes('dadfailed') === true, 10_000);
      await waitUntil("c's DAD for a free address succeeds", async () => (await flags('fd00:10:244:1::d'))?.length === 0, 10_000);
    } finally {
      await run('ip', ['-n', c.netns, '-6', 'addr', 'del', `${V6['b']}/64`, 'dev', 'eth0']).catch(() => undefined);
      await run('ip', ['-n', c.netns, '-6', 'addr', 'del', 'fd00:10:244:1::d/64', 'dev', 'eth0']).catch(() => undefined);
      await run('sysctl', ['-q', '-w', 'net.ipv6.conf.eth0.accept_dad=0'], { netns: c.netns }).catch(() => undefined);
    }
  });

  it("a new pod's IPv6 address works once the CNI's cache entry names it, and works again for the next pod after a delete", async () => {
    const guard = daemon!.daemon.antiSpoof!;
    const startPod = async (name: string, ip?: string): Promise<SandboxPod> => {
      const p = await sandbox.addPod({ namespace: 'x', name, node: NODE.name, ...(ip !== undefined ? { ip } : {}) });
      expect(cachedAddresses(p)).toEqual([p.ipv4, p.ipv6]);
      server.create(podInApi(p));
      peers[name] = await startV6Peer(p.netns);
      await waitUntil(
        `${name} bound to ${p.ipv6}`,
        () => guard.state?.bindings.some((b) => b.port === p.hostVeth && b.ipv6.includes(p.ipv6!)) === true,
      );
      await waitUntil(`c hears ${name}`, async () => (await sendToC(name, p.ipv6!, `from-${name}`)).length > 0, 15_000);
      return p;
    };
    // Each pod that comes or goes rewrites the table; what a was caught doing so far stays counted.
    const counted = await counter(`nf:spoof nd ${pod('a').hostVeth}`);
    expect(counted).toBeGreaterThan(0);
    const d = await startPod('d');
    await peers['d']!.stop();
    delete peers['d'];
    await sandbox.removePod('x/d');
    server.delete({ kind: 'Pod', metadata: { name: 'd', namespace: 'x' } });
    // The next pod takes d's addresses, both families (IP reuse after a delete).
    const e = await startPod('e', d.ipv4);
    expect(e.ips).toEqual(d.ips);
    expect(e.hostVeth).not.toBe(d.hostVeth);
    expect(guard.state?.bindings.find((b) => b.port === d.hostVeth)).toBeUndefined();
    expect(guard.writes).toBeGreaterThanOrEqual(3);
    expect(await counter(`nf:spoof nd ${pod('a').hostVeth}`)).toBe(counted);
  });

  it('trace --in-iface judges IPv6 sources; inspect lists the IPv6 binding and its drops', async () => {
    const cli = async (...argv: string[]) => {
      let out = '';
      const code = await main([...argv, '--netns', netns()], { out: (t) => void (out += t), err: (t) => void (out += t) });
      return { code, out };
    };
    const a = pod('a');
    const forged = await cli(
      'trace',
      '--src',
      V6['b']!,
      '--dst',
      V6['c']!,
      '--proto',
      'udp',
      '--port',
      '80',
      '--in-iface',
      a.hostVeth,
      '--json',
    );
    expect(JSON.parse(forged.out).antiSpoof).toMatchObject({ verdict: 'drop' });
    const honest = await cli('trace', '--src', V6['a']!, '--dst', V6['c']!, '--proto', 'udp', '--port', '80', '--in-iface', a.hostVeth);
    expect(honest.out).toMatch(/anti-spoofing on veth\w+: ACCEPT/);
    const view = JSON.parse((await cli('inspect', '--json')).out).antiSpoofing as {
      ports: { port: string; addresses: string[]; drops: number }[];
    };
    const port = view.ports.find((p) => p.port === a.hostVeth)!;
    expect(port.addresses).toEqual([a.ip, V6['a']]);
    expect(port.drops).toBeGreaterThanOrEqual(3);
  });

  it('/metrics shows the drops by kind and by pod, read from the kernel counters', async () => {
    const text = await daemon!.daemon.metrics.render();
    const value = (series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const a = pod('a').hostVeth;
    const kernel = async (kind: string) => counter(`nf:spoof ${kind} ${a}`);
    for (const kind of ['ipv6', 'nd', 'router']) {
      // What the kernel counted for a's port, under a's name; the kind total holds at least that.
      expect(value(`netfence_spoof_pod_drops_total{namespace="x",pod="a",kind="${kind}"}`)).toBe(await kernel(kind));
      expect(value(`netfence_spoof_pod_drops_total{namespace="x",pod="a",kind="${kind}"}`)).toBeGreaterThan(0);
      expect(value(`netfence_spoof_drops_total{kind="${kind}"}`)).toBeGreaterThanOrEqual(await kernel(kind));
    }
    // Honest pods have no series; every kind has one at node level.
    expect(text).not.toMatch(/netfence_spoof_pod_drops_total\{namespace="x",pod="b"/);
    expect(value('netfence_spoof_drops_total{kind="arp"}')).toBe(0);
  });
});
