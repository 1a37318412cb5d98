// Strict mode's cost, two figures:
//
//  1. work per change at 100,000 conntrack entries: a scratch netns gets 100 k synthetic ESTABLISHED
//     TCP entries (`conntrack -R`, research upstream-behaviour §2.6) between this node's pods; one strict-mode
//     pass (ctnetlink dump → pure decision → one mark update per changed flow) after a policy that
//     denies a tenth of them, a second pass with nothing to change (the cost every later sync pays),
//     and a third after the allow again (the bits cleared). Once with ctnetlink in-process (the
//     DaemonSet's path; this script re-runs itself inside the namespace with --inside), once through
//     the --netns worker (tests). Wall time per step and this process's CPU time (user+sys).
//  2. policy change → last packet: a sandbox node with a netfence daemon in strict mode; a client pod
//     sends a numbered UDP datagram every ~5 ms on an established flow; the policy that denies it is
//     written to the (fake) API server at t0; the figure is the send time of the last datagram that
//     arrived, minus t0. Once on an otherwise empty table, once with --entries more flows in it.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-revoke.ts [--entries 100000] [--only work|latency]
// (or `sudo npm run bench -- --strict [--entries N] [--only work|latency]`)

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compile } from '../src/compile/index.js';
import { openConntrackTable, type ConntrackTable } from '../src/dataplane/ctnetlink.js';
import { run } from '../src/dataplane/exec.js';
import { createLogger } from '../src/log.js';
import { defaultNodeSettings } from '../src/model/index.js';
import { Revoker } from '../src/revoke/revoker.js';
import { createSandbox } from '../sandbox/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  NODE,
  podPeer,
  rule,
  sel,
  selectPods,
  snapshot,
  tcp,
} from '../test/helpers/builders.js';
import { FakeApiServer, type KubeObject } from '../test/fakes/fake-apiserver.js';
import { namespaceObject, nodeObject, podObject, startNodeDaemon, waitReady } from '../test/helpers/daemon-harness.js';
import { startFlowPeer } from '../test/helpers/flow-peer.js';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';

const { values } = parseArgs({
  options: { entries: { type: 'string', default: '100000' }, only: { type: 'string' }, inside: { type: 'boolean' } },
});
const ENTRIES = Number(values.entries);
const quiet = createLogger({ level: 'error', format: 'json', stream: process.stderr });

const POD_CIDR = '10.244.1.0/24';
const PODS = 200;
const podIp = (i: number) => `10.244.1.${2 + (i % 250)}`;

/** Every pod isolated for ingress; `port` allowed from every pod (undefined: every port). */
function desiredWith(port: number | undefined) {
  const settings = { ...defaultNodeSettings(NODE, [POD_CIDR]), revokeMark: 0x100000 };
  const snap = snapshot({
    nodes: [{ name: NODE, podCidrs: [POD_CIDR], addresses: [] }],
    namespaces: [makeNamespace('x')],
    pods: Array.from({ length: PODS }, (_, i) => makePod('x', `p${i}`, podIp(i), labels({ app: 'p' }))),
    policies: [makePolicy('x', 'only-80', selectPods(sel()), ingress(rule([podPeer(sel())], port !== undefined ? [tcp(port)] : [])))],
  });
  return { desired: compile(snap, settings).desired, settings };
}

/**
 * Three strict-mode passes over the loaded table: the deny (TCP 80 only: a tenth of the flows are on
 * 7000), a sync with nothing to change (what every later sync pays), the allow again (the bits cleared).
 * CPU is this process's user+sys time over the pass: with ctnetlink in-process that includes the
 * kernel's work building the dump, which runs in this process's recvmsg calls.
 */
async function passes(how: string, open: () => Promise<ConntrackTable>): Promise<void> {
  const deny = desiredWith(80);
  const allow = desiredWith(undefined);
  const revoker = new Revoker({ open, logger: quiet });
  const pass = async (label: string, { desired, settings }: ReturnType<typeof desiredWith>) => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    revoker.request(desired, settings);
    await revoker.idle();
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const r = revoker.lastPass[0];
    if (!r) throw new Error('no pass report');
    const cpuMs = Math.round((cpu.user + cpu.system) / 1000);
    console.log(
      `| ${how} | ${label} | ${r.entries} | ${r.judged} | ${r.revoked} | ${r.restored} | ${r.dumpMs} | ${r.decideMs} | ${r.updateMs} | ${Math.round(ms)} | ${cpuMs} |`,
    );
  };
  await pass('the deny (first pass, opens the socket)', deny);
  await pass('next sync, nothing to change', deny);
  await pass('the allow again', allow);
  await revoker.stop();
}

async function workPerChange(): Promise<void> {
  const ns = await createScratchNetns('rv');
  const dir = mkdtempSync(join(tmpdir(), 'nft-bench-revoke-'));
  try {
    // Flows from every pod to every pod on ports 80 (allowed) and 7000 (denied after the change, 1 in 10).
    const lines: string[] = [];
    for (let i = 0; i < ENTRIES; i++) {
      const src = podIp(i % PODS);
      const dst = podIp((i * 7 + 1) % PODS);
      const dport = i % 10 === 0 ? 7000 : 80;
      lines.push(
        `-I -p tcp -s ${src} -d ${dst} --sport ${1024 + Math.floor(i / PODS)} --dport ${dport} --state ESTABLISHED -t 3600 -u ASSURED`,
      );
    }
    const file = join(dir, 'entries');
    writeFileSync(file, `${lines.join('\n')}\n`);
    await run('conntrack', ['-R', file], { netns: ns.name, timeoutMs: 300_000 });
    const count = Number((await run('cat', ['/proc/sys/net/netfilter/nf_conntrack_count'], { netns: ns.name })).stdout.trim());
    console.log(`conntrack entries in the scratch netns: ${count}`);
    console.log(
      '| ctnetlink | pass | entries dumped | distinct packets judged | revoked | restored | dump ms | decide ms | update ms | total ms | CPU ms (user+sys) |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    // The DaemonSet's path: the daemon lives in the node's namespace and opens ctnetlink in-process.
    // Node cannot enter a namespace, so this script runs again inside the scratch one for those rows.
    const self = ['--import', './scripts/register-ts.mjs', 'scripts/bench-revoke.ts', '--inside'];
    process.stdout.write((await run(process.execPath, self, { netns: ns.name, timeoutMs: 300_000 })).stdout);
    // The path of `--netns` (tests, sandbox): a worker in the namespace streams entries as JSON lines.
    // Its CPU column is this process's only (the worker's own time is not counted).
    await passes('--netns worker', () => openConntrackTable({ netns: ns.name }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await ns.destroy();
  }
}

function policy(ports?: number[]): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'server-in', namespace: 'x' },
    spec: {
      podSelector: { matchLabels: { app: 'server' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: 'client' } } }],
          ...(ports ? { ports: ports.map((port) => ({ protocol: 'UDP', port })) } : {}),
        },
      ],
    },
  };
}

/**
 * `extra` synthetic ESTABLISHED entries are loaded into the node's table first (server → client TCP,
 * which the policy never denies: they are dumped and judged but not revoked), so the figure shows
 * what a busy node's pass adds. Datagrams keep going until 200 after the pass that followed the change.
 */
async function latency(extra: number): Promise<void> {
  const node = { name: 'n1', podCidr: POD_CIDR };
  const sandbox = await createSandbox({ nodes: [node] });
  const server = new FakeApiServer();
  const dir = mkdtempSync(join(tmpdir(), 'nft-bench-revoke-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    const clientPod = await sandbox.addPod({ namespace: 'x', name: 'client', node: 'n1' });
    const serverPod = await sandbox.addPod({ namespace: 'x', name: 'server', node: 'n1' });
    await server.start();
    server.create(nodeObject(sandbox.nodes()[0]!));
    server.create(namespaceObject('x'));
    server.create(podObject(clientPod, { app: 'client' }));
    server.create(podObject(serverPod, { app: 'server' }));
    server.create(policy());
    const daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      { 'batch-window-ms': '10', 'revoke-established': 'true' },
    );
    stops.push(() => daemon.stop());
    await waitReady(daemon);
    if (extra > 0) {
      const lines = Array.from(
        { length: extra },
        (_, i) =>
          `-I -p tcp -s ${serverPod.ip} -d ${clientPod.ip} --sport ${1024 + Math.floor(i / 10)} --dport ${80 + (i % 10)} --state ESTABLISHED -t 3600 -u ASSURED`,
      );
      writeFileSync(join(dir, 'entries'), `${lines.join('\n')}\n`);
      await run('conntrack', ['-R', join(dir, 'entries')], { netns: daemon.node.netns, timeoutMs: 300_000 });
    }
    const sp = await startFlowPeer(serverPod.netns);
    stops.push(() => sp.stop());
    const cp = await startFlowPeer(clientPod.netns);
    stops.push(() => cp.stop());
    await sp.listen('UDP', 7001);
    await cp.connect('UDP', serverPod.ip, 7001, 'stream');
    const revoker = daemon.daemon.revoker!;
    await revoker.idle();
    const passes = revoker.passes;
    const sentAt: number[] = [];
    let t0 = 0;
    let until = Infinity;
    for (let seq = 0; seq < until && seq < 20_000; seq++) {
      if (seq === 100) {
        t0 = performance.now();
        server.update(policy([7999]));
      }
      sentAt.push(performance.now());
      await cp.send('stream', String(seq));
      if (until === Infinity && revoker.passes > passes && revoker.lastPass.some((r) => r.revoked > 0)) until = seq + 200;
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 500));
    const got = (await sp.received('stream')).map(Number).filter((n) => Number.isInteger(n));
    const last = Math.max(...got);
    await revoker.idle();
    console.log(`conntrack entries besides the measured flow: ${extra}`);
    console.log(
      `datagrams sent: ${sentAt.length} (one per ~5 ms, policy change before #100); received: ${got.length}; last received #${last}`,
    );
    // The daemon runs in this process, so a busy pass also delays the sender: the flow stopped somewhere
    // between the last datagram that arrived and the next one sent, and both bounds are printed.
    const next = sentAt[last + 1];
    console.log(
      `policy change → last packet of the revoked flow: ${Math.round(sentAt[last]! - t0)} ms (send time of #${last} − time of the API write); ` +
        `the next datagram, refused, was sent at ${next !== undefined ? Math.round(next - t0) : '?'} ms`,
    );
    console.log(`strict-mode pass after the change: ${JSON.stringify(revoker.lastPass)}`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await server.stop().catch(() => undefined);
    await sandbox.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (values.inside) {
  // Run by workPerChange inside the scratch namespace: ctnetlink in this process, as the daemon opens it.
  await passes('in-process', () => openConntrackTable());
} else {
  try {
    if (values.only !== 'latency') await workPerChange();
    if (values.only !== 'work') {
      await latency(0);
      await latency(ENTRIES);
    }
  } finally {
    destroyAllScratchNetns();
  }
}
