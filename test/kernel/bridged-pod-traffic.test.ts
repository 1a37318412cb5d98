// Bridged pod-to-pod traffic to addresses outside the pod CIDRs, with real frames on one dual-stack node.
// iptables finds a packet's policy by pod address, so c reached b, which a policy isolates, over IPv6
// link-local TCP, and b heard c's datagrams to 255.255.255.255, 224.0.0.1 and ff02::1. The bridge
// table's forward hook judges such frames by port (src/antispoof/bridged.ts): an isolated pod hears from
// its neighbours only what is addressed to its own pod addresses (its policies judge that) plus the
// link's ND/MLD; a pod no policy selects keeps all of it. The same with anti-spoofing off, and on a
// node where netfence programs no IPv6 although the bridge carries it (`--no-ipv6`).

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, nodeCacheDir, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { startKubeProxy, type KubeProxy } from '../../sandbox/kube-proxy/index.js';
import { namespaceObject, startNodeDaemon, waitReady, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';
import { startV6Peer, type V6Peer } from '../helpers/v6-peer.js';

jest.setTimeout(120_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
/** Another node (no netfence on it): its pod r reaches n1's pods over the flannel-like routed path. */
const OTHER = { name: 'n2', podCidr: '10.244.2.0/24' };
const SVC_B = '10.96.0.11';
const SINK = 7400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const podObject = (pod: SandboxPod) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: pod.name, namespace: pod.namespace, labels: { app: pod.name } },
  spec: { nodeName: pod.node, containers: [{ name: 'agent', image: 'sandbox-agent' }] },
  status: { phase: 'Running', podIP: pod.ips[0], podIPs: pod.ips.map((ip) => ({ ip })) },
});

/** e is isolated for egress: TCP 80 to app=d only. */
const eOnlyToD = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'e-only-to-d', namespace: 'x' },
  spec: {
    podSelector: { matchLabels: { app: 'e' } },
    policyTypes: ['Egress'],
    egress: [{ to: [{ podSelector: { matchLabels: { app: 'd' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
  },
};

/** b is isolated for ingress: TCP 80 from app=d only. c and d are selected by nothing. */
const onlyDIntoB = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'only-d-into-b', namespace: 'x' },
  spec: {
    podSelector: { matchLabels: { app: 'b' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'd' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
  },
};

describeKernel('bridged pod traffic no pod address explains', () => {
  let dir: string;
  let sandbox: Sandbox;
  let daemon: NodeDaemon | undefined;
  let proxy: KubeProxy | undefined;
  const peers: Record<string, V6Peer> = {};
  const linkLocal: Record<string, string> = {};
  const pod = (name: string): SandboxPod => sandbox.pods().find((p) => p.key === `x/${name}`)!;
  const netns = () => sandbox.nodeNetns(NODE.name);

  const tcp = async (from: string, ip: string): Promise<boolean> =>
    (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip, port: 80, timeoutMs: 600 })).ok;
  const ll = (name: string) => `${linkLocal[name]}%eth0`;

  /** c sends one datagram to `dst`; who of b and d heard it. d (selected by nothing) must, within a deadline. */
  async function heardFromC(dst: string): Promise<{ b: boolean; d: boolean }> {
    const tag = `${dst}-${Date.now()}`;
    await peers['c']!.send(dst, SINK, tag);
    const heard = async (name: string) => (await peers[name]!.sunk()).some((x) => x.text === tag);
    await waitUntil(`d hears c's datagram to ${dst}`, () => heard('d'), 5000);
    // b's copy left the bridge in the same flood as d's: a short grace, then it is either there or dropped.
    await sleep(200);
    return { b: await heard('b'), d: true };
  }

  const macOf = async (name: string): Promise<string> =>
    (JSON.parse((await run('ip', ['-n', pod(name).netns, '-j', 'link', 'show', 'eth0'])).stdout) as { address: string }[])[0]!.address;

  /** c sends a UDP datagram to `name`'s pod IPv4 address in a frame with a VLAN 0 priority tag: did it arrive? */
  async function taggedHeard(name: string, wait: boolean): Promise<boolean> {
    const tag = `tagged-${name}-${Date.now()}`;
    await peers['c']!.sendTagged(await macOf(name), pod('c').ipv4!, pod(name).ipv4!, SINK, tag);
    const heard = async () => (await peers[name]!.sunk()).some((x) => x.text === tag);
    if (wait) await waitUntil(`${name} hears c's tagged frame`, heard, 5000);
    else await sleep(300);
    return heard();
  }

  async function startDaemon(flags: Record<string, string> = {}): Promise<void> {
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { resources: [join(dir, 'manifests')] },
      {
        'cni-cache-dir': nodeCacheDir(dir, NODE.name),
        'pod-cidr': [NODE.podCidr, sandbox.nodes()[0]!.ipv6!.podCidr],
        'resync-interval-seconds': '5',
        ...flags,
      },
    );
    await waitReady(daemon, 30_000);
    // The bridge table follows the first sync: b's port judged, c's and d's open.
    await waitUntil('the bridge table knows b is isolated', async () => {
      const out = (await run('nft', ['list', 'chain', 'bridge', 'netfence', 'to-pods'], { netns: netns() }).catch(() => ({ stdout: '' })))
        .stdout;
      return out.includes(`nf:bridged to ${pod('b').hostVeth}`) && out.includes(pod('d').hostVeth);
    });
  }

  /** Stops the daemon and removes what it programmed (with the backend it used), as a fresh install would start. */
  async function stopDaemon(backend = 'auto'): Promise<void> {
    await daemon?.stop();
    daemon = undefined;
    expect(await main(['cleanup', '--netns', netns(), '--backend', backend], { out: () => undefined, err: () => undefined })).toBe(0);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-bridged-'));
    sandbox = await createSandbox({ nodes: [NODE, OTHER], ipv6: {} }, { cniCacheDir: dir });
    for (const name of ['b', 'c', 'd', 'e']) {
      await sandbox.addPod({ namespace: 'x', name, node: NODE.name });
      if (name === 'e') continue;
      peers[name] = await startV6Peer(pod(name).netns);
      await peers[name]!.sink(SINK);
    }
    await sandbox.addPod({ namespace: 'x', name: 'r', node: OTHER.name });
    // kube-proxy (iptables mode) on both nodes: a ClusterIP whose one endpoint is b, the isolated pod.
    proxy = await startKubeProxy(
      sandbox.nodes(),
      [
        {
          namespace: 'x',
          name: 'svc-b',
          clusterIp: SVC_B,
          ports: [{ name: 'p80-tcp', protocol: 'TCP', port: 80, targetPort: 80 }],
          endpoints: [{ ip: pod('b').ipv4!, node: NODE.name }],
        },
      ],
      { mode: 'iptables', clusterCidr: sandbox.clusterCidr },
    );
    for (const name of ['b', 'd']) {
      const out = JSON.parse(
        (await run('ip', ['-n', pod(name).netns, '-j', '-6', 'addr', 'show', 'dev', 'eth0', 'scope', 'link'])).stdout,
      ) as {
        addr_info?: { local?: string }[];
      }[];
      linkLocal[name] = out[0]!.addr_info!.find((a) => a.local !== undefined)!.local!;
    }
    const node = sandbox.nodes()[0]!;
    const objects = [
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: node.name },
        spec: { podCIDR: node.podCidr, podCIDRs: [node.podCidr, node.ipv6!.podCidr] },
      },
      namespaceObject('x'),
      ...sandbox.pods().map(podObject),
      onlyDIntoB,
      eOnlyToD,
    ];
    const manifests = join(dir, 'manifests');
    await run('mkdir', ['-p', manifests]);
    writeFileSync(join(manifests, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  });

  afterAll(async () => {
    for (const p of Object.values(peers)) await p.stop().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await proxy?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('without netfence, c reaches b over link-local TCP and b hears broadcast and multicast (the checks can tell)', async () => {
    expect(await tcp('c', ll('b'))).toBe(true);
    expect(await heardFromC('255.255.255.255')).toEqual({ b: true, d: true });
  });

  it("with netfence: b's pod addresses, link-local, broadcast and multicast are all closed to c; d keeps them", async () => {
    await startDaemon();
    // One object, so a failure shows every path that is open.
    expect({
      // Unicast to b's pod addresses: judged by b's policy, as before.
      podIpv4: await tcp('c', pod('b').ipv4!),
      podIpv6: await tcp('c', pod('b').ipv6!),
      // Not a pod address: judged by port now.
      linkLocal: await tcp('c', ll('b')),
      broadcast: (await heardFromC('255.255.255.255')).b,
      allHosts: (await heardFromC('224.0.0.1')).b,
      allNodes: (await heardFromC('ff02::1')).b,
    }).toEqual({ podIpv4: false, podIpv6: false, linkLocal: false, broadcast: false, allHosts: false, allNodes: false });
    // A pod no policy selects keeps today's behaviour (heardFromC waited for d each time).
    expect(await tcp('c', ll('d'))).toBe(true);
    expect(await tcp('c', pod('d').ipv6!)).toBe(true);
  });

  it('what must keep working does: pod to its own node, pods of another node, a Service whose endpoint is the isolated pod', async () => {
    const node = sandbox.nodes()[0]!;
    expect({
      // The node itself (delivered to the bridge, never forwarded between ports).
      cToNode: await tcp('c', node.gatewayIp),
      bToNode6: await tcp('b', node.ipv6!.gatewayIp),
      // The routed path to and from another node, both families.
      rToD: await tcp('r', pod('d').ipv4!),
      rToD6: await tcp('r', pod('d').ipv6!),
      bToR: await tcp('b', pod('r').ipv4!),
      bToR6: await tcp('b', pod('r').ipv6!),
      rToB: await tcp('r', pod('b').ipv4!),
      // A ClusterIP DNATed to b on b's node: br_netfilter bridges it between the two pods' ports.
      dToSvcB: await tcp('d', SVC_B),
      cToSvcB: await tcp('c', SVC_B),
    }).toEqual({
      cToNode: true,
      bToNode6: true,
      rToD: true,
      rToD6: true,
      bToR: true,
      bToR6: true,
      rToB: false,
      dToSvcB: true,
      cToSvcB: false,
    });
  });

  it('a pod isolated for egress reaches what its policy allows from its pod address, nothing from its link-local one', async () => {
    expect({ fromPodAddress: await tcp('e', pod('d').ipv6!), fromLinkLocal: await tcp('e', ll('d')) }).toEqual({
      fromPodAddress: true,
      fromLinkLocal: false,
    });
  });

  it("neighbour discovery to the isolated pod still works: d, which b's policy allows, reaches b's IPv6 from a cold cache", async () => {
    for (const name of ['b', 'd']) await run('ip', ['-n', pod(name).netns, '-6', 'neigh', 'flush', 'dev', 'eth0']);
    expect(await tcp('d', pod('b').ipv6!)).toBe(true);
    expect(await tcp('d', pod('b').ipv4!)).toBe(true);
  });

  it('with anti-spoofing off, link-local TCP and VLAN-tagged frames to b stay closed; d keeps both', async () => {
    await stopDaemon();
    // iptables-legacy here (nft elsewhere): the bridge table is nft whichever backend iptables uses.
    await startDaemon({ 'anti-spoofing': 'false', backend: 'legacy' });
    expect((await run('iptables-legacy-save', [], { netns: netns() })).stdout).toContain('nf-FORWARD');
    const table = (await run('nft', ['list', 'table', 'bridge', 'netfence'], { netns: netns() })).stdout;
    expect(table).not.toContain('chain prerouting');
    expect(await tcp('c', ll('b'))).toBe(false);
    expect(await tcp('c', ll('d'))).toBe(true);
    // A VLAN 0 (priority) tag: br_netfilter hands tagged frames to no iptables (bridge-nf-filter-vlan-tagged
    // is 0 by default) and the receiver reads them as untagged. Anti-spoofing drops them as "other"; without
    // it, the bridge table must, for a judged port. d, selected by nothing, still gets one.
    expect(await taggedHeard('d', true)).toBe(true);
    expect(await taggedHeard('b', false)).toBe(false);
  });

  it('with netfence programming IPv4 only (--no-ipv6) on a bridge that carries IPv6: no IPv6 reaches b but ND, d keeps IPv6', async () => {
    await stopDaemon('legacy');
    await startDaemon({ ipv6: 'false' });
    expect((await run('ip6tables-save', [], { netns: netns() })).stdout).not.toContain('nf-FORWARD');
    expect({
      linkLocal: await tcp('c', ll('b')),
      podIpv6: await tcp('c', pod('b').ipv6!),
      allNodes: (await heardFromC('ff02::1')).b,
    }).toEqual({ linkLocal: false, podIpv6: false, allNodes: false });
    // IPv4, which netfence judges, as before: d allowed into b, c not.
    expect(await tcp('d', pod('b').ipv4!)).toBe(true);
    expect(await tcp('c', pod('b').ipv4!)).toBe(false);
    expect(await tcp('c', ll('d'))).toBe(true);
    expect(await tcp('c', pod('d').ipv6!)).toBe(true);
  });
});
