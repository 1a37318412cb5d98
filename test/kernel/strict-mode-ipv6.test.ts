// Strict mode on IPv6 flows with real sockets, between dual-stack sandbox pods (the CNI gave each pod
// an IPv4 and an IPv6 address; the API lists both). The issue's bar, for the IPv6 family: "an
// established TCP, UDP and SCTP flow stops within one sync of a policy that denies it, with the server
// speaking first and with the client speaking first; allowed flows on the same pods are untouched".
// This kernel has no SCTP sockets, so the flow peer speaks SCTP on an IPv6 raw socket (the handshake
// and verification tags conntrack checks, then DATA chunks): conntrack holds a real SCTP entry.

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
const V6: Record<string, string> = {};
const DENIED: readonly { proto: FlowProto; port: number }[] = [
  { proto: 'TCP', port: 7100 },
  { proto: 'UDP', port: 7101 },
  { proto: 'SCTP', port: 7102 },
];
const KEPT: readonly { proto: FlowProto; port: number }[] = [
  { proto: 'TCP', port: 7103 },
  { proto: 'UDP', port: 7104 },
  { proto: 'SCTP', port: 7105 },
];
/** Long enough for a datagram or a segment to cross a bridge many times over, on a loaded machine. */
const SILENCE_MS = 1200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

const DENIED_FLOWS = DENIED.flatMap((p) =>
  (['client', 'server'] as const).map((first) => ({ ...p, first, flow: `v6-${p.proto.toLowerCase()}-${first}-first` })),
);
const KEPT_FLOWS = KEPT.map((p) => ({ ...p, flow: `v6-${p.proto.toLowerCase()}-kept` }));

describeKernel('strict mode on: a new deny revokes established IPv6 flows', () => {
  let dir: string;
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let daemon: NodeDaemon | undefined;
  let client: FlowPeer | undefined;
  let serverPeer: FlowPeer | undefined;
  let serverPod: SandboxPod;

  async function expectDelivered(flow: string, tag: string): Promise<void> {
    await client!.send(flow, `${tag}-c`);
    await waitUntil(`${flow}: server receives ${tag}-c`, async () => (await serverPeer!.received(flow)).includes(`${tag}-c`), 8000);
    await serverPeer!.send(flow, `${tag}-s`);
    await waitUntil(`${flow}: client receives ${tag}-s`, async () => (await client!.received(flow)).includes(`${tag}-s`), 8000);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-strict6-'));
    sandbox = await createSandbox({ nodes: [NODE], ipv6: {} });
    const cidr6 = sandbox.nodes()[0]!.ipv6!.podCidr;
    const pods: Record<string, SandboxPod> = {};
    for (const name of ['client', 'server']) {
      pods[name] = await sandbox.addPod({ namespace: 'x', name, node: NODE.name });
      expect(pods[name]!.ips).toEqual([pods[name]!.ipv4, pods[name]!.ipv6]);
      V6[name] = pods[name]!.ipv6!;
    }
    serverPod = pods['server']!;
    server = new FakeApiServer();
    await server.start();
    const node = nodeObject(sandbox.nodes()[0]!);
    server.create({ ...node, spec: { podCIDR: NODE.podCidr, podCIDRs: [NODE.podCidr, cidr6] } });
    server.create(namespaceObject('x'));
    for (const name of ['client', 'server']) {
      const object = podObject(pods[name]!, { app: name });
      server.create({ ...object, status: { phase: 'Running', podIP: pods[name]!.ip, podIPs: pods[name]!.ips.map((ip) => ({ ip })) } });
    }
    server.create(serverPolicy());
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      {
        'batch-window-ms': '10',
        'revoke-established': 'true',
        'pod-cidr': [NODE.podCidr, cidr6],
      },
    );
    await waitReady(daemon);
    serverPeer = await startFlowPeer(serverPod.netns);
    client = await startFlowPeer(pods['client']!.netns);
    for (const p of [...DENIED, ...KEPT]) await serverPeer.listen(p.proto, p.port, '::');
    for (const f of [...DENIED_FLOWS, ...KEPT_FLOWS]) await client.connect(f.proto, V6['server']!, f.port, f.flow);
    // Both directions work before the change: the test below can only pass by the change stopping them.
    for (const f of [...DENIED_FLOWS, ...KEPT_FLOWS]) await expectDelivered(f.flow, 'before');
  });

  afterAll(async () => {
    await client?.stop().catch(() => undefined);
    await serverPeer?.stop().catch(() => undefined);
    await daemon?.stop().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('puts the connmark DROP above the ESTABLISHED accepts of the IPv6 nf-FORWARD', async () => {
    const rules = (await run('ip6tables-save', ['-t', 'filter'], { netns: daemon!.node.netns })).stdout
      .split('\n')
      .filter((l) => l.startsWith('-A nf-FORWARD'));
    expect(rules[0]).toMatch(/-m connmark --mark 0x100000\/0x100000 .*-j DROP$/);
    expect(rules.findIndex((r) => r.includes('ESTABLISHED'))).toBeGreaterThan(0);
  });

  it('stops every denied IPv6 flow in both directions, whoever speaks first; allowed flows carry on', async () => {
    const revoker = daemon!.daemon.revoker!;
    const passes = revoker.passes;
    server.update(serverPolicy(KEPT));
    await waitUntil(
      'the strict-mode pass after the policy change revoked IPv6 flows',
      async () => {
        await revoker.idle();
        return revoker.passes > passes && revoker.lastPass.some((r) => r.family === 6 && r.revoked > 0);
      },
      20_000,
    );
    for (const f of DENIED_FLOWS) await (f.first === 'client' ? client!.send(f.flow, 'after-c') : serverPeer!.send(f.flow, 'after-s'));
    await sleep(SILENCE_MS);
    for (const f of DENIED_FLOWS) await (f.first === 'client' ? serverPeer!.send(f.flow, 'after-s') : client!.send(f.flow, 'after-c'));
    await sleep(SILENCE_MS);
    for (const f of DENIED_FLOWS) {
      expect({ flow: f.flow, server: await serverPeer!.received(f.flow), client: await client!.received(f.flow) }).toEqual({
        flow: f.flow,
        server: ['before-c'],
        client: ['before-s'],
      });
    }
    for (const f of KEPT_FLOWS) await expectDelivered(f.flow, 'kept');
    const listed = (await run('conntrack', ['-L', '-f', 'ipv6', '-p', 'tcp', '--dport', '7100'], { netns: daemon!.node.netns })).stdout;
    expect(listed).toMatch(/mark=1048576/);
    // The SCTP flow is a real conntrack SCTP entry of the IPv6 table, and it carries the bit too.
    const sctp = (await run('conntrack', ['-L', '-f', 'ipv6', '-p', 'sctp', '--dport', '7102'], { netns: daemon!.node.netns })).stdout;
    expect(sctp).toMatch(new RegExp(`^sctp .*src=${V6['client']} dst=${V6['server']} .*mark=1048576`, 'm'));
    // trace on the IPv6 tuple says an established flow of it is revoked.
    let out = '';
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t) };
    await main(
      ['trace', '--src', V6['client']!, '--dst', V6['server']!, '--proto', 'tcp', '--port', '7100', '--netns', daemon!.node.netns],
      io,
    );
    // Wrapped for a terminal: compare with the line breaks folded.
    expect(out.replace(/\s+/g, ' ')).toMatch(/established: strict mode on: an established flow with this tuple is revoked/);
    out = '';
    await main(
      ['trace', '--src', V6['client']!, '--dst', V6['server']!, '--proto', 'tcp', '--port', '7103', '--netns', daemon!.node.netns],
      io,
    );
    expect(out.replace(/\s+/g, ' ')).toMatch(/established: strict mode on: an established flow with this tuple is allowed to go on/);
    // /metrics: the six denied IPv6 flows were marked and still carry the bit; no IPv4 flow was touched.
    const text = await daemon!.daemon.metrics.render();
    const value = (series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('netfence_strict_flows_revoked_total{family="6"}')).toBe(DENIED_FLOWS.length);
    expect(value('netfence_strict_revoked_flows{family="6"}')).toBe(DENIED_FLOWS.length);
    expect(value('netfence_strict_flows_revoked_total{family="4"}')).toBe(0);
    expect(value('netfence_strict_pass_duration_seconds_count')).toBeGreaterThanOrEqual(revoker.passes);
    // inspect counts the flows carrying the bit now, in all and per local pod at either end.
    out = '';
    await main(['inspect', '--family', '6', '--json', '--netns', daemon!.node.netns], io);
    expect(JSON.parse(out).strictMode).toMatchObject({
      on: true,
      revokedFlows: DENIED_FLOWS.length,
      revokedByPod: [
        { pod: 'x/client', flows: DENIED_FLOWS.length },
        { pod: 'x/server', flows: DENIED_FLOWS.length },
      ],
    });
    out = '';
    await main(['inspect', '--family', '4', '--json', '--netns', daemon!.node.netns], io);
    expect(JSON.parse(out).strictMode).toMatchObject({ on: true, revokedFlows: 0, revokedByPod: [] });
  });

  it('clears the bit when a later change allows the IPv6 flows again', async () => {
    const revoker = daemon!.daemon.revoker!;
    const passes = revoker.passes;
    server.update(serverPolicy());
    await waitUntil(
      'the strict-mode pass after re-allowing',
      async () => {
        await revoker.idle();
        return revoker.passes > passes && revoker.lastPass.some((r) => r.family === 6 && r.restored > 0);
      },
      20_000,
    );
    for (const f of DENIED_FLOWS) {
      await client!.send(f.flow, 'again-c');
      await waitUntil(`${f.flow}: server receives again-c`, async () => (await serverPeer!.received(f.flow)).includes('again-c'), 20_000);
    }
    const text = await daemon!.daemon.metrics.render();
    expect(text).toMatch(new RegExp(`^netfence_strict_flows_restored_total\\{family="6"\\} ${DENIED_FLOWS.length}$`, 'm'));
    expect(text).toMatch(/^netfence_strict_revoked_flows\{family="6"\} 0$/m);
    let out = '';
    await main(['inspect', '--family', '6', '--netns', daemon!.node.netns], { out: (t) => void (out += t), err: (t) => void (out += t) });
    expect(out).toMatch(/^ {2}0 flow\(s\) carry the revoke bit now$/m);
  });
});
