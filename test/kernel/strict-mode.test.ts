// Strict mode (revokeEstablished) with real sockets: a daemon programs a sandbox node, a client pod
// holds established TCP, UDP and (emulated) SCTP flows to a server pod, then a policy change denies
// them. With strict mode on, every denied flow stops carrying packets in both directions, whichever
// side speaks first after the change, while allowed flows between the same pods keep working, and a
// later allow brings the revoked flows back. With strict mode off, the same change leaves every
// established flow working, as before strict mode existed ("implementation defined" in the spec).

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { startFlowPeer, type FlowPeer, type FlowProto } from '../helpers/flow-peer.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const PROTOS: readonly { proto: FlowProto; port: number }[] = [
  { proto: 'TCP', port: 7000 },
  { proto: 'UDP', port: 7001 },
  { proto: 'SCTP', port: 7002 },
];
/** Allowed before and after the change: they must not be touched. */
const KEPT: readonly { proto: FlowProto; port: number }[] = [
  { proto: 'TCP', port: 7003 },
  { proto: 'UDP', port: 7004 },
];
/** Long enough for a datagram or a segment to cross a bridge many times over, on a loaded machine. */
const SILENCE_MS = 1200;

/** The server accepts from app=client on `ports` (every port when undefined). */
function serverPolicy(ports?: readonly { proto: FlowProto; port: number }[]): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'server-ingress', namespace: 'x' },
    spec: {
      podSelector: { matchLabels: { app: 'server' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: 'client' } } }],
          ...(ports ? { ports: ports.map((p) => ({ protocol: p.proto, port: p.port })) } : {}),
        },
      ],
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface World {
  sandbox: Sandbox;
  server: FakeApiServer;
  daemon: NodeDaemon;
  client: FlowPeer;
  serverPeer: FlowPeer;
  serverPod: SandboxPod;
  dir: string;
}

async function setUp(strict: boolean): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'nft-strict-'));
  const sandbox = await createSandbox({ nodes: [NODE] });
  const parts: Partial<World> = { sandbox, dir };
  try {
    const clientPod = await sandbox.addPod({ namespace: 'x', name: 'client', node: NODE.name });
    const serverPod = await sandbox.addPod({ namespace: 'x', name: 'server', node: NODE.name });
    const server = new FakeApiServer();
    parts.server = server;
    await server.start();
    server.create(nodeObject(sandbox.nodes()[0]!));
    server.create(namespaceObject('x'));
    server.create(podObject(clientPod, { app: 'client' }));
    server.create(podObject(serverPod, { app: 'server' }));
    server.create(serverPolicy());
    const flags: Record<string, string> = { 'batch-window-ms': '10', ...(strict ? { 'revoke-established': 'true' } : {}) };
    const daemon = await startNodeDaemon(sandbox.nodes()[0]!, { kubeconfig: server.writeKubeconfig(dir) }, flags);
    parts.daemon = daemon;
    await waitReady(daemon);
    const serverPeer = await startFlowPeer(serverPod.netns);
    parts.serverPeer = serverPeer;
    const client = await startFlowPeer(clientPod.netns);
    parts.client = client;
    for (const p of [...PROTOS, ...KEPT]) await serverPeer.listen(p.proto, p.port);
    return { ...(parts as World), serverPod };
  } catch (err) {
    await tearDown(parts);
    throw err;
  }
}

async function tearDown(w: Partial<World>): Promise<void> {
  await w.client?.stop().catch(() => undefined);
  await w.serverPeer?.stop().catch(() => undefined);
  await w.daemon?.stop().catch(() => undefined);
  await w.server?.stop().catch(() => undefined);
  await w.sandbox?.destroy();
  if (w.dir) rmSync(w.dir, { recursive: true, force: true });
}

const flowName = (proto: FlowProto, first: 'client' | 'server') => `${proto.toLowerCase()}-${first}-first`;
const DENIED_FLOWS = PROTOS.flatMap((p) =>
  (['client', 'server'] as const).map((first) => ({ ...p, first, flow: flowName(p.proto, first) })),
);
const KEPT_FLOWS = KEPT.map((p) => ({ ...p, flow: `${p.proto.toLowerCase()}-kept` }));

async function openFlows(w: World): Promise<void> {
  for (const f of [...DENIED_FLOWS, ...KEPT_FLOWS]) await w.client.connect(f.proto, w.serverPod.ip, f.port, f.flow);
  // Both directions work before the change: the test below can only pass by the change stopping them.
  for (const f of [...DENIED_FLOWS, ...KEPT_FLOWS]) await expectDelivered(w, f.flow, 'before');
}

/** Client → server then server → client, each arriving. */
async function expectDelivered(w: World, flow: string, tag: string): Promise<void> {
  await w.client.send(flow, `${tag}-c`);
  await waitUntil(`${flow}: server receives ${tag}-c`, async () => (await w.serverPeer.received(flow)).includes(`${tag}-c`), 8000);
  await w.serverPeer.send(flow, `${tag}-s`);
  await waitUntil(`${flow}: client receives ${tag}-s`, async () => (await w.client.received(flow)).includes(`${tag}-s`), 8000);
}

/** Each denied flow speaks in its order (first side, pause, other side, pause); returns what arrived. */
async function speakAfterChange(w: World): Promise<Map<string, { server: string[]; client: string[] }>> {
  for (const f of DENIED_FLOWS) await (f.first === 'client' ? w.client.send(f.flow, 'after-c') : w.serverPeer.send(f.flow, 'after-s'));
  await sleep(SILENCE_MS);
  for (const f of DENIED_FLOWS) await (f.first === 'client' ? w.serverPeer.send(f.flow, 'after-s') : w.client.send(f.flow, 'after-c'));
  await sleep(SILENCE_MS);
  const out = new Map<string, { server: string[]; client: string[] }>();
  for (const f of DENIED_FLOWS) out.set(f.flow, { server: await w.serverPeer.received(f.flow), client: await w.client.received(f.flow) });
  return out;
}

const nfForward = async (netns: string): Promise<string[]> =>
  (await run('iptables-save', ['-t', 'filter'], { netns })).stdout.split('\n').filter((l) => l.startsWith('-A nf-FORWARD'));

describeKernel('strict mode on: a new deny revokes established flows', () => {
  let w: World;
  beforeAll(async () => {
    w = await setUp(true);
    await openFlows(w);
  });
  afterAll(async () => {
    if (w) await tearDown(w);
  });

  it('puts the connmark DROP above the ESTABLISHED accepts of nf-FORWARD', async () => {
    const rules = await nfForward(w.daemon.node.netns);
    expect(rules[0]).toMatch(/-m connmark --mark 0x100000\/0x100000 .*-j DROP$/);
    expect(rules.findIndex((r) => r.includes('ESTABLISHED'))).toBeGreaterThan(0);
  });

  it('stops every denied flow in both directions, whoever speaks first; allowed flows carry on', async () => {
    const revoker = w.daemon.daemon.revoker!;
    const passes = revoker.passes;
    w.server.update(serverPolicy(KEPT));
    // One sync programs the rules and is followed by one strict-mode pass; nothing else is waited for.
    await waitUntil(
      'the strict-mode pass after the policy change',
      async () => {
        await revoker.idle();
        return revoker.passes > passes && revoker.lastPass.some((r) => r.revoked > 0);
      },
      20_000,
    );
    const heard = await speakAfterChange(w);
    for (const f of DENIED_FLOWS) {
      expect({ flow: f.flow, ...heard.get(f.flow) }).toEqual({ flow: f.flow, server: ['before-c'], client: ['before-s'] });
    }
    for (const f of KEPT_FLOWS) await expectDelivered(w, f.flow, 'kept');
    // The entries are still there (not deleted, so nothing can pick the flow up again), carrying the bit.
    const listed = (await run('conntrack', ['-L', '-p', 'udp', '--dport', '7001'], { netns: w.daemon.node.netns })).stdout;
    expect(listed).toMatch(/mark=1048576/);
    // trace says what happens to an established flow of the same tuple; inspect says strict mode is on.
    let out = '';
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t) };
    await main(
      ['trace', '--src', 'x/client', '--dst', w.serverPod.ip, '--proto', 'tcp', '--port', '7000', '--netns', w.daemon.node.netns],
      io,
    );
    expect(out).toMatch(/established: strict mode on: an established flow with this tuple is revoked/);
    out = '';
    await main(['inspect', '--json', '--netns', w.daemon.node.netns], io);
    // …and how many flows carry the bit now: the denied ones, counted for both their pods.
    expect(JSON.parse(out).strictMode).toEqual({
      on: true,
      bit: 0x100000,
      position: 1,
      revokedFlows: DENIED_FLOWS.length,
      revokedByPod: [
        { pod: 'x/client', flows: DENIED_FLOWS.length },
        { pod: 'x/server', flows: DENIED_FLOWS.length },
      ],
    });
  });

  it('clears the bit when a later change allows the flows again', async () => {
    const revoker = w.daemon.daemon.revoker!;
    const passes = revoker.passes;
    w.server.update(serverPolicy());
    await waitUntil(
      'the strict-mode pass after re-allowing',
      async () => {
        await revoker.idle();
        return revoker.passes > passes && revoker.lastPass.some((r) => r.restored > 0);
      },
      20_000,
    );
    // UDP and SCTP messages sent now arrive at once; TCP's queued segments arrive on retransmission.
    for (const f of DENIED_FLOWS) {
      await w.client.send(f.flow, 'again-c');
      await waitUntil(`${f.flow}: server receives again-c`, async () => (await w.serverPeer.received(f.flow)).includes('again-c'), 20_000);
    }
  });
});

describeKernel('strict mode off (the default): established flows survive a new deny', () => {
  let w: World;
  beforeAll(async () => {
    w = await setUp(false);
    await openFlows(w);
  });
  afterAll(async () => {
    if (w) await tearDown(w);
  });

  it('has no connmark rule and no revoker', async () => {
    expect((await nfForward(w.daemon.node.netns)).some((r) => r.includes('connmark'))).toBe(false);
    expect(w.daemon.daemon.revoker).toBeUndefined();
  });

  it('keeps carrying the denied flows both ways, while new connections are refused', async () => {
    w.server.update(serverPolicy(KEPT));
    const sandbox = w.sandbox;
    await waitUntil(
      'new TCP 7000 connections refused',
      async () => !(await sandbox.probe('x/client', { protocol: 'TCP', ip: w.serverPod.ip, port: 7000, timeoutMs: 300 })).ok,
      20_000,
    );
    const heard = await speakAfterChange(w);
    for (const f of DENIED_FLOWS) {
      const got = heard.get(f.flow)!;
      expect({ flow: f.flow, server: got.server.includes('after-c'), client: got.client.includes('after-s') }).toEqual({
        flow: f.flow,
        server: true,
        client: true,
      });
    }
  });

  // The server's Pod object leaves the API while its sandbox still runs (a force delete): its address is an
  // unknown local pod, and new connections to it are dropped (fail-closed). The flows it already had carry on
  // with strict mode off, as after any change that denies new connections: judged on their first packet, they
  // pass nf-FORWARD's ESTABLISHED accepts, which come before the dispatch jumps and their fail-closed drops.
  it('keeps carrying established flows to a pod whose object is gone, while new connections to it are dropped', async () => {
    const kept = KEPT[0]!;
    for (const f of KEPT_FLOWS) await expectDelivered(w, f.flow, 'before-delete');
    w.server.delete({ kind: 'Pod', metadata: { name: 'server', namespace: 'x' } });
    const reaches = async () =>
      (await w.sandbox.probe('x/client', { protocol: 'TCP', ip: w.serverPod.ip, port: kept.port, timeoutMs: 300 })).ok;
    try {
      // A port the policy allowed: refused only because the pod is unknown now.
      await waitUntil(`new TCP ${kept.port} connections to the deleted pod dropped`, async () => !(await reaches()), 20_000);
      for (const f of KEPT_FLOWS) await expectDelivered(w, f.flow, 'after-delete');
    } finally {
      w.server.create(podObject(w.serverPod, { app: 'server' }));
    }
    await waitUntil(`new TCP ${kept.port} connections accepted again`, reaches, 20_000);
  });

  // docs/hostile-input.md, two pods with one IP: "on its node new connections to and from it are dropped …;
  // established flows continue". The address's dispatch drops it, so only nf-FORWARD's ESTABLISHED accepts,
  // above the dispatch jumps, carry the flows that were open before the second claim.
  it('keeps carrying established flows to an address a second Pod object claims, while new connections to it are dropped', async () => {
    const imposter: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'aaa-imposter', namespace: 'x', labels: { app: 'imposter' } },
      spec: { nodeName: NODE.name, containers: [{ name: 'c', image: 'none' }] },
      status: { phase: 'Running', podIP: w.serverPod.ip, podIPs: [{ ip: w.serverPod.ip }] },
    };
    const kept = KEPT[0]!;
    for (const f of KEPT_FLOWS) await expectDelivered(w, f.flow, 'before-claim');
    w.server.create(imposter);
    try {
      // A port the policy allows: refused only because the address is disputed now.
      await waitUntil(
        `new TCP ${kept.port} connections to the disputed address dropped`,
        async () => !(await w.sandbox.probe('x/client', { protocol: 'TCP', ip: w.serverPod.ip, port: kept.port, timeoutMs: 300 })).ok,
        20_000,
      );
      for (const f of KEPT_FLOWS) await expectDelivered(w, f.flow, 'after-claim');
    } finally {
      w.server.delete({ kind: 'Pod', metadata: { name: 'aaa-imposter', namespace: 'x' } });
    }
  });
});
