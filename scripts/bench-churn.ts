// The daemon under sustained churn: `npm run bench -- --churn [--minutes N --rate R --tier large|xl] [--quick] [--flips-only]`.
//
// A real `netfence daemon` process (dist/) programs a scratch network namespace from an in-process fake
// list/watch API server holding a generated cluster (as scripts/bench-daemon.ts). Once it is ready, this
// script writes R changes a second for N minutes on a fixed schedule, whether or not the daemon keeps up
// (scripts/bench-lib/churn-writes.ts: label flips, pods replaced with new IPs, policy port edits). It reports
//   - event → programmed from the daemon's own histogram (netfence_event_to_programmed_seconds, per sync),
//   - and from outside: once a second one of the label flips is a probe (a pod's peer label toggled), and
//     `ipset test` in the namespace is polled until the kernel shows it; the floor beside it is the same
//     one-member ipset write made alone, by this script, and the poll's own resolution,
//   - the daemon's RSS every 30 s and its least-squares slope after minute 2, CPU per change (user+system
//     from /proc/<pid>/stat), apply failures, the probes' latency drift (a growing backlog shows as a
//     positive slope), and a final `netfence diff` against what the API server holds (exit 0 = in sync).

import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';
import { ChurnWriter, churnBenchPolicy } from './bench-lib/churn-writes.js';
import { histogramQuantile, leastSquaresSlope, percentile } from './bench-lib/stats.js';
import { CLI, cpuMs, metric, podObject, policyObject, procStatusKiB, snapshotObjects, waitReady } from './bench-daemon.js';
import { fileURLToPath } from 'node:url';
import { run } from '../src/dataplane/exec.js';
import { openIpsetNetlink } from '../src/dataplane/ipset-netlink.js';
import type { Pod } from '../src/model/index.js';
import { FakeApiServer } from '../test/fakes/fake-apiserver.js';
import { sleep, startDaemonProcess, type DaemonProcess } from './demo/daemon-process.js';
import { freePort } from '../test/helpers/free-port.js';

interface ChurnArgs {
  tier: Tier;
  minutes: number;
  rate: number;
  seed: number;
  node: string;
  /** Only label flips: every change is a set-only change (netlink, no process). */
  flipsOnly: boolean;
  /**
   * Run the daemon inside the namespace (no `--netns`), as the DaemonSet runs in its node's: its netlink sockets
   * are then its own, with no relay process. The API server must be reachable there, so this script runs
   * itself again inside the namespace.
   */
  inNetns: boolean;
}

function parseArgs(argv: readonly string[]): ChurnArgs {
  const args: ChurnArgs = { tier: 'large', minutes: 10, rate: 20, seed: 1, node: 'node-1', flipsOnly: false, inNetns: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--quick') {
      args.minutes = 1;
      continue;
    }
    if (flag === '--flips-only') {
      args.flipsOnly = true;
      continue;
    }
    if (flag === '--in-netns') {
      args.inNetns = true;
      continue;
    }
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--tier') {
      if (!(TIERS as readonly string[]).includes(value)) throw new Error(`--tier takes one of ${TIERS.join(', ')}, not ${value}`);
      args.tier = value as Tier;
    } else if (flag === '--minutes') args.minutes = Number(value);
    else if (flag === '--rate') args.rate = Number(value);
    else if (flag === '--seed') args.seed = Number(value);
    else if (flag === '--node') args.node = value;
    else
      throw new Error(`unknown flag ${flag} (--minutes N, --rate R, --tier T, --seed N, --node NAME, --quick, --flips-only, --in-netns)`);
  }
  if (!(args.minutes > 0) || !(args.rate > 0)) throw new Error('--minutes and --rate take positive numbers');
  return args;
}

const WARM_UP_MS = 120_000;
const RSS_EVERY_MS = 30_000;
const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** Counts the daemon's "programmed" log lines as they are appended (reads only what is new). */
class ProgrammedLines {
  private offset = 0;
  private rest = '';
  count = 0;
  lastAt = 0;
  constructor(private readonly file: string) {}
  poll(): void {
    const fd = openSync(this.file, 'r');
    try {
      const buf = Buffer.alloc(1 << 20);
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, this.offset);
        if (n === 0) break;
        this.offset += n;
        const lines = (this.rest + buf.subarray(0, n).toString('utf8')).split('\n');
        this.rest = lines.pop()!;
        for (const line of lines)
          if (line.includes('"message":"programmed"')) {
            this.count++;
            this.lastAt = Date.now();
          }
      }
    } finally {
      closeSync(fd);
    }
  }
  /** Waits until no "programmed" line came for `quietMs`. */
  async quiet(quietMs: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    this.poll();
    let seen = this.count;
    let since = Date.now();
    while (Date.now() - since < quietMs) {
      if (Date.now() > deadline) throw new Error(`the daemon did not go quiet within ${timeoutMs} ms`);
      await sleep(50);
      this.poll();
      if (this.count !== seen) {
        seen = this.count;
        since = Date.now();
      }
    }
  }
}

/** Cumulative buckets of one histogram from a /metrics text. */
function buckets(text: string, name: string): { le: number; count: number }[] {
  const out: { le: number; count: number }[] = [];
  for (const line of text.split('\n')) {
    const m = line.match(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`));
    if (m) out.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: Number(m[2]) });
  }
  return out;
}

/** Sum of every sample of a metric, whatever its labels. */
const metricSum = (text: string, name: string): number =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

async function inSet(netns: string, set: string, ip: string): Promise<boolean> {
  return run('ipset', ['test', set, ip], { netns }).then(
    () => true,
    () => false,
  );
}

/** Sets holding `ip`, from one `ipset save`. */
async function setsHolding(netns: string, ip: string): Promise<Set<string>> {
  const { stdout } = await run('ipset', ['save'], { netns });
  const sets = new Set<string>();
  for (const line of stdout.split('\n')) {
    const [verb, set, member] = line.split(' ');
    if (verb === 'add' && member === ip) sets.add(set!);
  }
  return sets;
}

/** Bad flags: what is wrong and the usage, not a stack trace. */
function argsOrExit(argv: readonly string[]): ChurnArgs {
  try {
    return parseArgs(argv);
  } catch (err) {
    console.error(`bench-churn: ${(err as Error).message}`);
    process.exit(2);
  }
}

/** Set (to the namespace's name) when this script runs again inside the namespace (`--in-netns`). */
const INSIDE = 'BENCH_CHURN_INSIDE_NETNS'; // not NETFENCE_…: the daemon refuses settings it does not know

/** `--in-netns`: creates the namespace, runs this script again inside it, and removes the namespace. */
async function runInside(): Promise<number> {
  const netns = `nft-bc-${Math.random().toString(16).slice(2, 8)}`;
  await run('ip', ['netns', 'add', netns]);
  try {
    await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    const script = fileURLToPath(import.meta.url);
    const child = spawn('ip', ['netns', 'exec', netns, process.execPath, ...process.execArgv, script, ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, [INSIDE]: netns },
    });
    return await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  } finally {
    await run('ip', ['netns', 'del', netns]).catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const args = argsOrExit(process.argv.slice(2));
  if (args.inNetns && process.env[INSIDE] === undefined) {
    process.exitCode = await runInside();
    return;
  }
  const inside = process.env[INSIDE];
  const command = `npm run bench -- --churn ${process.argv.slice(2).join(' ')}`.trim();
  const loadAtStart = loadAverage();
  const { snapshot, stats } = generateCluster({ tier: args.tier, seed: args.seed, node: args.node });

  // The bench policy isolates one namespace's pods on this node and admits `bench-peer=on` pods of every
  // namespace: every label flip anywhere moves a pod in or out of its peer set.
  const target = snapshot.pods.find((p) => p.nodeName === args.node && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
  if (!target) throw new Error(`no running pod on ${args.node}`);
  const benchPolicy = churnBenchPolicy(target);
  // Probe pods: remote and local, never replaced, flipped once a second in turn.
  const ordinary = snapshot.pods.filter((p) => !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
  const probes: Pod[] = [
    ...ordinary.filter((p) => p.nodeName !== args.node).slice(0, 15),
    ...ordinary.filter((p) => p.nodeName === args.node).slice(0, 5),
  ];
  const probeKey = (p: Pod): string => `${p.namespace}/${p.name}`;

  const tmp = mkdtempSync(join(tmpdir(), 'nft-bench-churn-'));
  const netns = inside ?? `nft-bc-${Math.random().toString(16).slice(2, 8)}`;
  const server = new FakeApiServer();
  let daemon: DaemonProcess | undefined;
  const stop = (): void => void daemon?.stop();
  process.once('SIGINT', stop);
  try {
    if (!inside) {
      await run('ip', ['netns', 'add', netns]);
      await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    }
    await run('sysctl', ['-q', '-w', 'net.bridge.bridge-nf-call-iptables=1'], { netns });
    await server.start();
    for (const obj of snapshotObjects({ ...snapshot, policies: [...snapshot.policies, benchPolicy] })) server.create(obj);
    const kubeconfig = server.writeKubeconfig(tmp);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const logFile = join(tmp, 'daemon.log');
    const startedAt = Date.now();
    daemon = await startDaemonProcess(
      CLI,
      [
        ...['--node-name', args.node, '--kubeconfig', kubeconfig, ...(inside ? [] : ['--netns', netns])],
        ...['--listen-address', `127.0.0.1:${port}`, '--log-format', 'json', '--flannel-subnet-env', join(tmp, 'none.env')],
      ],
      // BENCH_CHURN_DAEMON_FLAGS: node flags for the daemon (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it).
      { netns: undefined, logFile, extraNodeFlags: process.env.BENCH_CHURN_DAEMON_FLAGS?.split(' ').filter(Boolean) },
    );
    await waitReady(daemon, url, startedAt, 100);
    const readyMs = Date.now() - startedAt;
    const programmed = new ProgrammedLines(logFile);
    await programmed.quiet(3000, 120_000);

    const writer = new ChurnWriter(server, {
      pods: snapshot.pods,
      policies: snapshot.policies,
      podCidrs: new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs[0]!])),
      node: args.node,
      probePods: new Set(probes.map(probeKey)),
      seed: args.seed,
      podObject,
      policyObject,
      flipsOnly: args.flipsOnly,
    });

    // Which set is the bench policy's peer set: the one the first probe pod joins when flipped on.
    const first = probes[0]!;
    const before = await setsHolding(netns, first.ips[0]!);
    writer.flipProbe(probeKey(first));
    await programmed.quiet(2000, 60_000);
    const joined = [...(await setsHolding(netns, first.ips[0]!))].filter((s) => !before.has(s));
    if (joined.length !== 1) throw new Error(`expected the probe pod to join one set, it joined ${joined.length}: ${joined.join(', ')}`);
    const peerSet = joined[0]!;

    // Floors: the same one-member write made alone (ipset add/del of a probe address in a scratch set of the
    // same type), and one `ipset test`, the outside poll's resolution.
    const floorSet = 'nfbench-floor';
    const setType = (await run('ipset', ['list', '-t', peerSet], { netns })).stdout.match(/^Type: (\S+)/m)?.[1] ?? 'hash:net';
    await run('ipset', ['create', floorSet, setType], { netns });
    const floorWrite: number[] = [];
    const floorTest: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t0 = performance.now();
      await run('ipset', [i % 2 === 0 ? 'add' : 'del', floorSet, first.ips[0]!], { netns });
      floorWrite.push(performance.now() - t0);
      const t1 = performance.now();
      await inSet(netns, floorSet, first.ips[0]!);
      floorTest.push(performance.now() - t1);
    }
    // The netlink floor: one acknowledged add/del request alone, through the same netns relay the daemon uses here,
    // and in-process inside the namespace (the DaemonSet's daemon, in its own namespace, has no relay).
    const floorNetlink: number[] = [];
    const relayWriter = await openIpsetNetlink({ netns });
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await relayWriter.apply([{ set: floorSet, op: i % 2 === 0 ? 'add' : 'del', members: [first.ips[0]!] }]);
      floorNetlink.push(performance.now() - t0);
    }
    await relayWriter.close();
    const inProcess = await run('ip', [
      ...['netns', 'exec', netns, process.execPath, '--import', fileURLToPath(new URL('./register-ts.mjs', import.meta.url))],
      ...[fileURLToPath(new URL('./lib/netlink-floor.ts', import.meta.url)), floorSet, first.ips[0]!, '200'],
    ]);
    const floorInProcess = JSON.parse(inProcess.stdout) as number[];
    await run('ipset', ['destroy', floorSet], { netns });

    // ---- the churn ------------------------------------------------------------------------------------
    const metricsAtStart = await (await fetch(`${url}/metrics`)).text();
    const cpuAtStart = cpuMs(daemon.pid);
    const total = Math.round(args.minutes * 60 * args.rate);
    const gapMs = 1000 / args.rate;
    const rss: { atMs: number; kib: number }[] = [{ atMs: 0, kib: procStatusKiB(daemon.pid, 'VmRSS') }];
    const outside: { atMs: number; ms: number }[] = [];
    let probeIndex = 1;
    let probeBusy = false;
    let probeTimeouts = 0;
    let maxWriterLagMs = 0;
    const churnStart = performance.now();
    let nextRss = RSS_EVERY_MS;
    console.error(`[bench-churn] ${total} changes at ${args.rate}/s over ${args.minutes} min; load average ${loadAverage()}`);
    for (let i = 0; i < total; i++) {
      const due = churnStart + i * gapMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      maxWriterLagMs = Math.max(maxWriterLagMs, performance.now() - due);
      const elapsed = performance.now() - churnStart;
      if (elapsed >= nextRss) {
        rss.push({ atMs: elapsed, kib: procStatusKiB(daemon.pid, 'VmRSS') });
        console.error(
          `[bench-churn] ${(elapsed / 1000).toFixed(0)} s: VmRSS ${(rss.at(-1)!.kib / 1024).toFixed(1)} MiB, load ${loadAverage()}`,
        );
        nextRss += RSS_EVERY_MS;
      }
      // Once a second (when the last probe is done) this change is a probe: a label flip whose arrival
      // in the kernel is watched from outside.
      if (i % Math.max(1, Math.round(args.rate)) === 0 && !probeBusy) {
        const pod = probes[probeIndex++ % probes.length]!;
        const written = performance.now();
        const on = writer.flipProbe(probeKey(pod));
        probeBusy = true;
        void (async () => {
          while (performance.now() - written < 30_000) {
            if ((await inSet(netns, peerSet, pod.ips[0]!)) === on) {
              outside.push({ atMs: written - churnStart, ms: performance.now() - written });
              return;
            }
          }
          probeTimeouts++;
        })().finally(() => (probeBusy = false));
        continue;
      }
      writer.next();
    }
    const churnMs = performance.now() - churnStart;
    while (probeBusy) await sleep(20);
    const drainStart = Date.now();
    await programmed.quiet(2000, 120_000);
    const drainMs = Math.max(0, programmed.lastAt - drainStart);
    rss.push({ atMs: performance.now() - churnStart, kib: procStatusKiB(daemon.pid, 'VmRSS') });
    const cpuChurn = cpuMs(daemon.pid) - cpuAtStart;
    const metricsAtEnd = await (await fetch(`${url}/metrics`)).text();
    const hwm = procStatusKiB(daemon.pid, 'VmHWM');

    // The API server's objects now, as a manifest, for `netfence diff` (it reads manifests).
    const now = writer.current();
    const items = snapshotObjects({ ...snapshot, pods: now.pods, policies: [...now.policies, benchPolicy] });
    writeFileSync(join(tmp, 'final.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const diff = await run('sh', [
      '-c',
      `'${process.execPath}' '${CLI}' diff --node-name ${args.node} --resources '${join(tmp, 'final.json')}' --netns ${netns} >/dev/null 2>&1; echo $?`,
    ]);
    const loadAtEnd = loadAverage();

    // ---- the report -----------------------------------------------------------------------------------
    const hist = (text: string): { le: number; count: number }[] => buckets(text, 'netfence_event_to_programmed_seconds');
    const startHist = new Map(hist(metricsAtStart).map((b) => [b.le, b.count]));
    const churnHist = hist(metricsAtEnd).map((b) => ({ le: b.le, count: b.count - (startHist.get(b.le) ?? 0) }));
    const q = (p: number): string => (histogramQuantile(p, churnHist) * 1000).toFixed(1);
    const batches = churnHist.at(-1)?.count ?? 0;
    const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
    const out = sorted(outside.map((o) => o.ms));
    const fw = sorted(floorWrite);
    const fn = sorted(floorNetlink);
    const fi = sorted(floorInProcess);
    const ft = sorted(floorTest);
    const f1 = (n: number): string => n.toFixed(1);
    const delta = (name: string): number => metricSum(metricsAtEnd, name) - metricSum(metricsAtStart, name);
    const afterWarmUp = rss.filter((r) => r.atMs >= WARM_UP_MS).map((r) => ({ x: r.atMs / 60_000, y: r.kib / 1024 }));
    const rssSlope = leastSquaresSlope(afterWarmUp);
    const drift = leastSquaresSlope(outside.filter((o) => o.atMs >= WARM_UP_MS).map((o) => ({ x: o.atMs / 60_000, y: o.ms })));
    const changes = total;

    console.log(
      `## netfence churn benchmark: tier ${args.tier}, ${args.rate} changes/s for ${args.minutes} min, seed ${args.seed}${args.flipsOnly ? ', label flips only (set-only changes)' : ''}${inside ? ', daemon inside the namespace (netlink in-process)' : ', daemon with --netns (netlink through a relay process)'}`,
    );
    console.log('');
    console.log(`Command: ${command}`);
    console.log(
      `Load average (1, 5, 15 min): ${loadAtStart} at start, ${loadAtEnd} at end. Node ${process.version}, ${availableParallelism()} CPUs.`,
    );
    console.log(
      `Cluster: ${stats.pods} pods (${stats.podsOnNode} on ${args.node}), ${stats.policies} policies + 1 bench policy; daemon ready in ${readyMs} ms.`,
    );
    console.log(
      `Changes written: ${changes} in ${(churnMs / 1000).toFixed(1)} s (${writer.counts['label flip']} label flips of which ${outside.length + probeTimeouts} probes, ${writer.counts['pod replaced']} pods replaced, ${writer.counts['policy port edit']} policy port edits); the writer fell behind its schedule by at most ${f1(maxWriterLagMs)} ms.`,
    );
    console.log('');
    console.log('| figure | p50 | p99 | max | floor (same write alone) |');
    console.log('|---|---|---|---|---|');
    console.log(
      `| event → programmed, daemon histogram (ms, ${batches} syncs; interpolated in buckets) | ${q(0.5)} | ${q(0.99)} | ≤ ${(churnHist.find((b) => b.count === batches)?.le ?? NaN) * 1000} (bucket) | – |`,
    );
    console.log(
      `| change written → kernel shows it, outside (ms, ${out.length} probes${probeTimeouts ? `, ${probeTimeouts} not seen in 30 s` : ''}) | ${f1(percentile(out, 50))} | ${f1(percentile(out, 99))} | ${f1(out.at(-1) ?? NaN)} | ipset add/del alone ${f1(percentile(fw, 50))} / ${f1(percentile(fw, 99))} (p50/p99); poll resolution (one ipset test) ${f1(percentile(ft, 50))} |`,
    );
    console.log(`| CPU per change (user+system ms) | ${f1(cpuChurn / changes)} | | | – |`);
    const f3 = (n: number): string => n.toFixed(3);
    console.log(
      `| floor: one netlink set update round trip alone (ms, 200 add/del) | ${f3(percentile(fn, 50))} (through a netns relay${inside ? '' : ", the daemon's path here"}) / ${f3(percentile(fi, 50))} (in-process in the namespace${inside ? ", the daemon's path here" : ''}) | ${f3(percentile(fn, 99))} / ${f3(percentile(fi, 99))} | ${f3(fn.at(-1) ?? NaN)} / ${f3(fi.at(-1) ?? NaN)} | – |`,
    );
    console.log('');
    console.log(
      `Daemon syncs during the churn: ${delta('netfence_sync_duration_seconds_count')} (${(delta('netfence_sync_duration_seconds_sum') * 1000).toFixed(0)} ms in compile + plan + apply, ${(delta('netfence_apply_duration_seconds_sum') * 1000).toFixed(0)} ms of it in ipset/iptables-restore), ${f1(changes / Math.max(1, delta('netfence_sync_duration_seconds_count')))} changes per sync; apply failures ${delta('netfence_apply_failures_total')}; drain after the last write ${drainMs} ms.`,
    );
    const tools = [...metricsAtEnd.matchAll(/^netfence_tool_invocations_total\{tool="([^"]+)"\} (\S+)$/gm)]
      .map(([, tool, n]) => [tool!, Number(n) - (metric(metricsAtStart, `netfence_tool_invocations_total{tool="${tool}"}`) || 0)] as const)
      .filter(([, n]) => n > 0);
    const syncs = (kind: string): string => {
      const n =
        metric(metricsAtEnd, `netfence_sync_duration_seconds_count{kind="${kind}"}`) -
        (metric(metricsAtStart, `netfence_sync_duration_seconds_count{kind="${kind}"}`) || 0);
      const sum =
        metric(metricsAtEnd, `netfence_sync_duration_seconds_sum{kind="${kind}"}`) -
        (metric(metricsAtStart, `netfence_sync_duration_seconds_sum{kind="${kind}"}`) || 0);
      return `${n} ${kind} (mean ${((sum / n) * 1000).toFixed(1)} ms)`;
    };
    console.log(`Syncs by kind: ${syncs('incremental')}, ${syncs('full')}; tool runs: ${tools.map(([t, n]) => `${t} ${n}`).join(', ')}.`);
    console.log(
      `Backlog: probe latency drift after minute 2 ${Number.isNaN(drift) ? 'n/a (run ≤ 2 min)' : `${f1(drift)} ms per minute`} (≈ 0: no backlog growth).`,
    );
    console.log(
      `RSS (MiB) every 30 s: ${rss.map((r) => (r.kib / 1024).toFixed(0)).join(' ')}; peak VmHWM ${(hwm / 1024).toFixed(0)}; slope after minute 2 ${Number.isNaN(rssSlope) ? 'n/a (needs two samples after minute 2)' : `${rssSlope.toFixed(2)} MiB per minute`}.`,
    );
    console.log(`Final check: netfence diff --resources <the API server's objects> exits ${diff.stdout.trim()} (0 = kernel in sync).`);
  } catch (err) {
    if (daemon) console.error(`daemon log (last lines):\n${daemon.tail(15).join('\n')}`);
    throw err;
  } finally {
    process.removeListener('SIGINT', stop);
    await daemon?.stop();
    await server.stop();
    if (!inside) await run('ip', ['netns', 'del', netns]).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
