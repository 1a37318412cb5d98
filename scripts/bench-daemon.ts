// The daemon end to end: API event → kernel programmed, and the daemon's memory, on a generated cluster.
//
// Usage (root): npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-daemon.ts \
//                 [--tier large] [--seed 1] [--events 60] [--node node-1]
//                 [--completed-jobs SHARE] [--watch-list on|off] [--field-selectors on|off] [--gzip on|off]
// --completed-jobs adds Succeeded Job pods as that share of all pods (0.2: one pod in five); --watch-list
// turns the fake API server's WatchList gate on (default off, as before Kubernetes 1.32); --field-selectors
// off makes it refuse pod field selectors, as a server without them would (the daemon then reads every pod);
// --gzip on makes it compress large list responses as a real API server does (watch streams stay plain).
//
// A real `netfence daemon` process (dist/cli/main.js) runs in the root namespace with `--netns` pointing
// at a scratch namespace it programs, and watches an in-process fake API server (test/fakes) that holds
// the generated cluster. Each event is one write to the fake server: alternately a pod label flip
// (`bench-peer=on|off` on a pod of one namespace, which moves it in or out of an ipset) and an edit of
// one policy (its port), so every event changes node-1's kernel. Latency = the timestamp of the daemon's
// own "programmed" log line for the sync that followed (written right after ipset restore and
// iptables-restore returned) minus the time just before the fake server's write. Events are sent one at
// a time, each after the previous one was programmed. Memory = the daemon process's VmRSS / VmHWM
// from /proc (out-of-process, so the fake server and this script are not counted).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCluster, type Tier } from './bench-lib/generator.js';
import { run } from '../src/dataplane/exec.js';
import type { ClusterSnapshot, LabelSelector, NetworkPolicy, Pod, PolicyRule } from '../src/model/index.js';
import { FakeApiServer, type KubeObject } from '../test/fakes/fake-apiserver.js';
import { sleep, startDaemonProcess, type DaemonProcess } from './demo/daemon-process.js';
import { freePort } from '../test/helpers/free-port.js';
import { percentile } from './bench-lib/stats.js';

export const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

export interface Args {
  tier: Tier;
  seed: number;
  events: number;
  node: string;
  completedJobs: number;
  watchList: boolean;
  fieldSelectors: boolean;
  gzip: boolean;
}

function onOff(flag: string, value: string): boolean {
  if (value !== 'on' && value !== 'off') throw new Error(`${flag} takes on or off`);
  return value === 'on';
}

export function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    tier: 'large',
    seed: 1,
    events: 60,
    node: 'node-1',
    completedJobs: 0,
    watchList: false,
    fieldSelectors: true,
    gzip: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--tier') args.tier = value as Tier;
    else if (flag === '--seed') args.seed = Number(value);
    else if (flag === '--events') args.events = Number(value);
    else if (flag === '--node') args.node = value;
    else if (flag === '--completed-jobs') args.completedJobs = Number(value);
    else if (flag === '--watch-list') args.watchList = onOff(flag, value);
    else if (flag === '--field-selectors') args.fieldSelectors = onOff(flag, value);
    else if (flag === '--gzip') args.gzip = onOff(flag, value);
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

// ---- the generated snapshot as API objects ------------------------------------------------------

const selector = (s: LabelSelector): Record<string, unknown> => ({
  matchLabels: { ...s.matchLabels },
  matchExpressions: s.matchExpressions.map((e) =>
    e.values.length > 0 ? { key: e.key, operator: e.operator, values: [...e.values] } : { key: e.key, operator: e.operator },
  ),
});

const rule = (r: PolicyRule, peersKey: 'from' | 'to'): Record<string, unknown> => ({
  ...(r.peers
    ? {
        [peersKey]: r.peers.map((p) => ({
          ...(p.podSelector ? { podSelector: selector(p.podSelector) } : {}),
          ...(p.namespaceSelector ? { namespaceSelector: selector(p.namespaceSelector) } : {}),
          ...(p.ipBlock ? { ipBlock: { cidr: p.ipBlock.cidr, except: [...p.ipBlock.except] } } : {}),
        })),
      }
    : {}),
  ...(r.ports
    ? {
        ports: r.ports.map((p) => ({
          protocol: p.protocol,
          ...(p.port !== undefined ? { port: p.port } : {}),
          ...(p.endPort !== undefined ? { endPort: p.endPort } : {}),
        })),
      }
    : {}),
});

export function policyObject(p: NetworkPolicy): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: p.name, namespace: p.namespace },
    spec: {
      podSelector: selector(p.podSelector),
      ...(p.policyTypes ? { policyTypes: [...p.policyTypes] } : {}),
      ...(p.ingress ? { ingress: p.ingress.map((r) => rule(r, 'from')) } : {}),
      ...(p.egress ? { egress: p.egress.map((r) => rule(r, 'to')) } : {}),
    },
  };
}

/**
 * A pod as a real API server holds it: owned by its workload's ReplicaSet (the generator's pods carry no
 * owner; the name is the app's, a `-<hash>` suffix as the Deployment controller writes it).
 */
export function podObject(p: Pod, labels = p.labels): KubeObject {
  const app = p.labels['app'] ?? p.labels['app.kubernetes.io/name'] ?? p.name;
  const ownerReferences = [
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: `${app}-6d4cf56db6`,
      uid: `rs-${p.namespace}-${app}`,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, labels: { ...labels }, ownerReferences },
    spec: {
      nodeName: p.nodeName,
      hostNetwork: p.hostNetwork,
      containers: [{ name: 'app', image: 'bench', ports: p.ports.map((port) => ({ ...port })) }],
    },
    status: { phase: p.phase, ...(p.ips[0] ? { podIP: p.ips[0], podIPs: p.ips.map((ip) => ({ ip })) } : {}) },
  };
}

/** The snapshot as the API objects an API server would hold. */
export function snapshotObjects(snapshot: ClusterSnapshot): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const n of snapshot.nodes) {
    objects.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: n.name },
      spec: { podCIDR: n.podCidrs[0], podCIDRs: [...n.podCidrs] },
      status: { addresses: n.addresses.map((address) => ({ type: 'InternalIP', address })) },
    });
  }
  for (const ns of snapshot.namespaces)
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns.name, labels: { ...ns.labels } } });
  for (const p of snapshot.pods) objects.push(podObject(p));
  for (const p of snapshot.policies) objects.push(policyObject(p));
  return objects;
}

// ---- measuring ------------------------------------------------------------------------------------

/** Reads the daemon's JSON log incrementally and finds "programmed" lines. */
class LogWatcher {
  private offset = 0;
  constructor(private readonly file: string) {}

  /** Epoch ms of the first "programmed" line written after `since`, waiting up to `timeoutMs`. */
  async nextProgrammed(since: number, timeoutMs: number, what = 'event'): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = readFileSync(this.file);
      const chunk = text.subarray(this.offset).toString('utf8');
      const complete = chunk.lastIndexOf('\n') + 1;
      this.offset += Buffer.byteLength(chunk.slice(0, complete));
      for (const line of chunk.slice(0, complete).split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { message?: string; timestamp?: string };
        const at = entry.timestamp ? Date.parse(entry.timestamp) : NaN;
        if (entry.message === 'programmed' && at >= since) return at;
      }
      if (Date.now() > deadline) throw new Error(`no "programmed" log line within ${timeoutMs} ms after ${what}`);
      await sleep(5);
    }
  }
}

export function procStatusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.replace(/\D+/g, '') ?? NaN);
}

/** user + system CPU time of a process so far (/proc/<pid>/stat fields 14 and 15, in clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function metric(text: string, sample: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

/** What another benchmark (scripts/bench-heap.ts) adds to this run: node flags, and work at two points. */
/** Polls `/readyz` every `pollMs` until 200; fails when the daemon exits or is not ready 300 s after `startedAt`. */
export async function waitReady(daemon: DaemonProcess, url: string, startedAt: number, pollMs: number): Promise<void> {
  for (;;) {
    if (!daemon.alive()) throw new Error(`daemon exited:\n${daemon.tail(20).join('\n')}`);
    const status = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() - startedAt > 300_000) throw new Error(`daemon not ready after 300 s:\n${daemon.tail(20).join('\n')}`);
    await sleep(pollMs);
  }
}

export interface DaemonBenchHooks {
  readonly extraNodeFlags?: readonly string[];
  /** With everything programmed and the daemon quiet, after its RSS was read. */
  readonly afterFirstSync?: (daemon: DaemonProcess, url: string) => Promise<void>;
  /** After the events, after its RSS was read. */
  readonly afterEvents?: (daemon: DaemonProcess, url: string) => Promise<void>;
}

async function main(): Promise<void> {
  await runDaemonBench(
    parseArgs(process.argv.slice(2)),
    `node --import ./scripts/register-ts.mjs scripts/bench-daemon.ts ${process.argv.slice(2).join(' ')}`.trim(),
  );
}

export async function runDaemonBench(args: Args, command: string, hooks: DaemonBenchHooks = {}): Promise<void> {
  const cluster = generateCluster({ tier: args.tier, seed: args.seed, node: args.node, completedJobShare: args.completedJobs });
  const { snapshot, stats } = cluster;

  // The namespace whose pods get their labels flipped: that of the first ordinary pod on the measured node.
  const target = snapshot.pods.find((p) => p.nodeName === args.node && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
  if (!target) throw new Error(`no running pod on ${args.node}`);
  const flippable = snapshot.pods.filter(
    (p) => p.namespace === target.namespace && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0,
  );
  const benchPolicy = (port: number): NetworkPolicy => ({
    namespace: target.namespace,
    name: 'bench-latency',
    podSelector: { matchLabels: target.labels, matchExpressions: [] },
    policyTypes: ['Ingress'],
    ingress: [
      { peers: [{ podSelector: { matchLabels: { 'bench-peer': 'on' }, matchExpressions: [] } }], ports: [{ protocol: 'TCP', port }] },
    ],
  });

  const tmp = mkdtempSync(join(tmpdir(), 'nft-bench-daemon-'));
  const netns = `nft-bd-${Math.random().toString(16).slice(2, 8)}`;
  const server = new FakeApiServer({
    watchList: args.watchList,
    compressLists: args.gzip,
    ...(args.fieldSelectors ? {} : { podFieldLabels: ['metadata.name', 'metadata.namespace'] }),
  });
  let daemon: DaemonProcess | undefined;
  try {
    await run('ip', ['netns', 'add', netns]);
    await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    await run('sysctl', ['-q', '-w', 'net.bridge.bridge-nf-call-iptables=1'], { netns });
    await server.start();
    // Policies are created once the daemon is ready, so they reach it as watch events and the batch of
    // them is measured as a sync of its own (start → /readyz covers nodes, namespaces and pods).
    const objects = snapshotObjects(snapshot);
    for (const obj of objects) if (obj.kind !== 'NetworkPolicy') server.create(obj);
    const kubeconfig = server.writeKubeconfig(tmp);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const logFile = join(tmp, 'daemon.log');

    const startedAt = Date.now();
    daemon = await startDaemonProcess(
      CLI,
      [
        '--node-name',
        args.node,
        '--kubeconfig',
        kubeconfig,
        '--netns',
        netns,
        '--listen-address',
        `127.0.0.1:${port}`,
        '--log-format',
        'json',
        '--flannel-subnet-env',
        join(tmp, 'none.env'),
      ],
      { netns: undefined, logFile, extraNodeFlags: hooks.extraNodeFlags },
    );
    await waitReady(daemon, url, startedAt, 50);
    const readyMs = Date.now() - startedAt;
    const bytesAtReady = server.bytesSent;
    const cpuReadyMs = cpuMs(daemon.pid);
    const hwmReady = procStatusKiB(daemon.pid, 'VmHWM');
    const log = new LogWatcher(logFile);
    await log.nextProgrammed(0, 1000); // the initial sync's line

    // Every policy (and the bench policy) at once, then wait until the daemon has been quiet for 2 s.
    const policiesAt = Date.now();
    for (const obj of objects) if (obj.kind === 'NetworkPolicy') server.create(obj);
    server.create(policyObject(benchPolicy(1000)));
    let lastProgrammed = await log.nextProgrammed(policiesAt, 300_000, 'creating the policies');
    // "Quiet" must outlast one sync: at 100,000 pods a full recompute takes several seconds, and an event
    // sent while one runs waits for it and the next. Scaled by how long the first batch took.
    const syncMs = lastProgrammed - policiesAt;
    const quietMs = Math.max(2000, 2 * syncMs);
    const eventTimeoutMs = Math.max(20_000, 4 * syncMs);
    for (;;) {
      const next = await log.nextProgrammed(lastProgrammed + 1, quietMs).catch(() => undefined);
      if (next === undefined) break;
      lastProgrammed = next;
    }
    const policiesMs = lastProgrammed - policiesAt;
    const rssReady = procStatusKiB(daemon.pid, 'VmRSS');
    const hwmProgrammed = procStatusKiB(daemon.pid, 'VmHWM');
    await hooks.afterFirstSync?.(daemon, url);

    const bytesBeforeEvents = server.bytesSent;
    const latencies: { kind: 'pod label' | 'policy edit'; ms: number }[] = [];
    const flipped = new Set<string>();
    for (let i = 0; i < args.events; i++) {
      await sleep(60); // past the batch window, so each event is its own sync
      const t0 = Date.now();
      if (i % 2 === 0) {
        const pod = flippable[Math.floor(i / 2) % flippable.length]!;
        const key = `${pod.namespace}/${pod.name}`;
        const on = !flipped.has(key);
        if (on) flipped.add(key);
        else flipped.delete(key);
        server.update(podObject(pod, on ? { ...pod.labels, 'bench-peer': 'on' } : pod.labels));
        latencies.push({ kind: 'pod label', ms: (await log.nextProgrammed(t0, eventTimeoutMs, `relabelling ${key}`)) - t0 });
      } else {
        server.update(policyObject(benchPolicy(1001 + i)));
        latencies.push({ kind: 'policy edit', ms: (await log.nextProgrammed(t0, eventTimeoutMs, 'editing the bench policy')) - t0 });
      }
    }
    const rssAfter = procStatusKiB(daemon.pid, 'VmRSS');
    const bytesPerEvent = (server.bytesSent - bytesBeforeEvents) / Math.max(1, args.events);
    const hwm = procStatusKiB(daemon.pid, 'VmHWM');
    // Now, not only in the table: a slow `netfence diff` below (a loaded machine) must not lose the figures.
    console.error(`[bench-daemon] VmRSS ${rssReady} kB after the first sync, ${rssAfter} kB after ${args.events} events; VmHWM ${hwm} kB`);
    await hooks.afterEvents?.(daemon, url);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    // What the API server holds now, as a manifest file, for `netfence diff` (which reads manifests only).
    const final = [...objects, policyObject(benchPolicy(0))].map((o) => server.get(o.kind!, o.metadata.name, o.metadata.namespace) ?? o);
    writeFileSync(join(tmp, 'final.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: final }));
    const diff = await run('sh', [
      '-c',
      `'${process.execPath}' '${CLI}' diff --node-name ${args.node} --resources '${join(tmp, 'final.json')}' --netns ${netns} >/dev/null 2>&1; echo $?`,
    ]);

    const row = (name: string, values: readonly number[]): string => {
      const s = [...values].sort((a, b) => a - b);
      return `| ${name.padEnd(12)} | ${String(s.length).padStart(6)} | ${String(percentile(s, 50)).padStart(8)} | ${String(percentile(s, 99)).padStart(8)} | ${String(s.at(-1) ?? NaN).padStart(8)} |`;
    };
    const mib = (kib: number): string => `${(kib / 1024).toFixed(0)} MiB`;
    const syncCount = metric(metrics, 'netfence_sync_duration_seconds_count{kind="incremental"}');
    const syncSum = metric(metrics, 'netfence_sync_duration_seconds_sum{kind="incremental"}');
    console.log(`## netfence daemon benchmark: tier ${args.tier}, seed ${args.seed}, node ${args.node}`);
    console.log('');
    console.log(`Command: ${command}`);
    console.log(
      `Cluster: ${stats.nodes} nodes, ${stats.namespaces} namespaces, ${stats.pods} pods (${stats.podsOnNode} on ${args.node}), ${stats.policies} policies (+1 bench policy in ${target.namespace}, ${flippable.length} pods there). Node ${process.version}, ${availableParallelism()} CPUs.`,
    );
    console.log(
      `Daemon: dist/cli/main.js daemon --kubeconfig (fake API server on 127.0.0.1) --netns ${netns}; start to /readyz 200 (list nodes, namespaces, pods + first full sync): ${readyMs} ms, ${cpuReadyMs} ms CPU (user+sys), peak RSS by then ${(hwmReady / 1024).toFixed(0)} MiB; then all ${stats.policies + 1} policies created at once → last "programmed": ${policiesMs} ms.`,
    );
    console.log('');
    console.log('API write → "programmed" log line of the sync that included it (ms; one event at a time):');
    console.log('');
    console.log('| event        | events |      p50 |      p99 |      max |');
    console.log('|--------------|--------|----------|----------|----------|');
    console.log(
      row(
        'pod label',
        latencies.filter((l) => l.kind === 'pod label').map((l) => l.ms),
      ),
    );
    console.log(
      row(
        'policy edit',
        latencies.filter((l) => l.kind === 'policy edit').map((l) => l.ms),
      ),
    );
    console.log(
      row(
        'all',
        latencies.map((l) => l.ms),
      ),
    );
    console.log('');
    console.log(
      `Daemon's own incremental syncs (compile + plan + apply): ${syncCount}, mean ${((syncSum / syncCount) * 1000).toFixed(0)} ms (netfence_sync_duration_seconds); the rest of the latency is watch delivery, conversion and the batch window.`,
    );
    console.log(
      `Daemon process memory (/proc/<pid>/status): VmRSS ${mib(rssReady)} with everything programmed, ${mib(rssAfter)} after ${args.events} events; peak VmHWM ${mib(hwm)}${hooks.afterFirstSync ? ' (includes what the heap snapshot after the first sync took)' : ''}; peak before the events ${mib(hwmProgrammed)}.`,
    );
    console.log(
      `API server: WatchList ${args.watchList ? 'on' : 'off'}, pod field selectors ${args.fieldSelectors ? 'served' : 'refused'}, lists ${args.gzip ? 'gzipped over 128 KiB' : 'uncompressed'}${args.completedJobs ? `; ${snapshot.pods.filter((p) => p.phase === 'Succeeded').length} pods Succeeded` : ''}.`,
    );
    console.log(
      `API bytes sent to this one daemon (fake API server, uncompressed, headers included): ${bytesAtReady} at start (lists and watches of nodes, namespaces, pods, before any policy; ${(bytesAtReady / stats.pods).toFixed(0)} B per pod), ${bytesPerEvent.toFixed(0)} B per event (one watch event of the changed object).`,
    );
    console.log(
      `Final check: netfence diff --resources <the API server's objects, saved> exits ${diff.stdout.trim()} (0 = kernel in sync).`,
    );
  } catch (err) {
    if (daemon) console.error(`daemon log (last lines):\n${daemon.tail(15).join('\n')}`);
    throw err;
  } finally {
    await daemon?.stop();
    await server.stop();
    await run('ip', ['netns', 'del', netns]).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) await main();
