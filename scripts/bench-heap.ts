// Where the real daemon's bytes are: heap snapshots of the `netfence daemon` process of
// scripts/bench-daemon.ts (same cluster, same events), taken after the first sync and after the events,
// each classified by what holds the objects (scripts/lib/heap-kinds.ts), with the non-heap part of the
// process's resident memory beside it.
//
// Usage (root): npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-heap.ts \
//                 [--tier xl] [--seed 1] [--events 1000] [--node node-1] [--at first|events|both] [--idle S] [--top 25] [--keep DIR]
//
// --at says when to snapshot (default both). Writing a snapshot takes the daemon ~4 × its heap in malloc,
// which glibc keeps: after a first snapshot the daemon's RSS is no longer its own, so process figures after
// the events are only meaningful with --at events (the heap-by-kind table is valid either way). --idle S
// leaves the daemon alone S seconds after the events, sampling its RSS, before the snapshot.
// The daemon runs with the production flags (src/cli/node-flags.ts) plus --heapsnapshot-signal=SIGUSR2;
// RSS and /proc/<pid>/smaps_rollup are read just before each snapshot (writing one takes memory of its
// own, so the peak after the first snapshot is not the daemon's). The daemon's /metrics (prom-client's
// process metrics) gives V8's heap spaces and external memory at the same moment. Snapshots are parsed
// streaming (scripts/lib/heap-snapshot.ts): at 50,000 pods each is a few hundred MB.

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Args, parseArgs, runDaemonBench } from './bench-daemon.js';
import { sleep, type DaemonProcess } from './demo/daemon-process.js';
import { classifyHeap, type HeapKinds } from './lib/heap-kinds.js';
import { podCosts, type PodCosts } from './lib/heap-pods.js';
import { readHeapSnapshot } from './lib/heap-snapshot.js';

interface Moment {
  readonly label: string;
  readonly status: Record<string, number>;
  readonly rollup: Record<string, number>;
  readonly metrics: Record<string, number>;
  readonly rssAfterSnapshotKiB: number;
  readonly file: string;
  /** VmRSS (KiB) sampled every 5 s while the daemon sat idle before the snapshot (--idle). */
  readonly idleKiB: readonly number[];
}

/** `Key:   123 kB` lines of /proc files, in KiB. */
function procKiB(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

function promSamples(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('nodejs_') && !line.startsWith('process_')) continue;
    const at = line.lastIndexOf(' ');
    out[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return out;
}

/** Sends SIGUSR2 and waits until the new snapshot file is complete (ends with `]}` and stops growing). */
async function snapshot(daemon: DaemonProcess, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(daemon.pid, 'SIGUSR2');
  const deadline = Date.now() + 600_000;
  let file: string | undefined;
  let lastSize = -1;
  while (Date.now() < deadline) {
    await sleep(500);
    file ??= readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    const size = statSync(join(dir, file)).size;
    if (size === lastSize && size > 2 && readTail(join(dir, file)).endsWith(']}')) return join(dir, file);
    lastSize = size;
  }
  throw new Error('no complete heap snapshot within 600 s');
}

function readTail(file: string): string {
  const text = readFileSync(file);
  return text
    .subarray(Math.max(0, text.length - 16))
    .toString('latin1')
    .trimEnd();
}

async function moment(label: string, daemon: DaemonProcess, url: string, dir: string, idleSeconds = 0): Promise<Moment> {
  const idleKiB: number[] = [];
  for (let waited = 0; waited < idleSeconds; waited += 5) {
    idleKiB.push(procKiB(`/proc/${daemon.pid}/status`).VmRSS!);
    await sleep(5000);
  }
  const status = procKiB(`/proc/${daemon.pid}/status`);
  const rollup = procKiB(`/proc/${daemon.pid}/smaps_rollup`);
  const metrics = promSamples(await (await fetch(`${url}/metrics`)).text());
  const file = await snapshot(daemon, dir);
  await sleep(1000);
  return { label, status, rollup, metrics, rssAfterSnapshotKiB: procKiB(`/proc/${daemon.pid}/status`).VmRSS!, file, idleKiB };
}

const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);
const kibMiB = (kib: number | undefined): string => ((kib ?? NaN) / 1024).toFixed(1);

function printMoments(moments: readonly Moment[], kinds: readonly HeapKinds[], pods: number): void {
  const head = moments.map((m) => m.label);
  console.log(
    `| category (objects counted once, first holder in this order) | ${head.map((h) => `${h}: MiB (strings)`).join(' | ')} | B per pod (${head.at(-1)}) |`,
  );
  console.log(`|---|${head.map(() => '---:').join('|')}|---:|`);
  const names = kinds[0]!.rows.map((r) => r.name);
  const otherNames = [...new Set(kinds.flatMap((k) => k.other.map((r) => r.name)))];
  const find = (k: HeapKinds, name: string) => k.rows.find((r) => r.name === name) ?? k.other.find((r) => r.name === name);
  for (const name of [...names, ...otherNames]) {
    const cells = kinds.map((k) => {
      const r = find(k, name);
      return r ? `${mib(r.bytes)} (${mib(r.stringBytes)})` : '–';
    });
    const last = find(kinds.at(-1)!, name);
    console.log(`| ${name} | ${cells.join(' | ')} | ${last ? (last.bytes / pods).toFixed(0) : '–'} |`);
  }
  console.log(
    `| **live JS heap (snapshot total)** | ${kinds.map((k) => `**${mib(k.total)}**`).join(' | ')} | ${(kinds.at(-1)!.total / pods).toFixed(0)} |`,
  );
  console.log('');
  console.log(
    "Process memory at the same moments (before each snapshot; /proc/<pid>/status, smaps_rollup, and the daemon's own /metrics), MiB:",
  );
  console.log('');
  console.log(`| | ${head.join(' | ')} |`);
  console.log(`|---|${head.map(() => '---:').join('|')}|`);
  const row = (what: string, f: (m: Moment) => string): void => console.log(`| ${what} | ${moments.map(f).join(' | ')} |`);
  if (moments.some((m) => m.idleKiB.length > 0))
    row('VmRSS while idle before it, every 5 s', (m) => m.idleKiB.map((k) => kibMiB(k)).join(' → ') || '–');
  row('VmRSS', (m) => `**${kibMiB(m.status.VmRSS)}**`);
  row('  anonymous (V8 heap, malloc, stacks)', (m) => kibMiB(m.rollup.Anonymous));
  row('  file-backed (node binary, libraries)', (m) => kibMiB((m.rollup.Rss ?? 0) - (m.rollup.Anonymous ?? 0)));
  row('V8 heap committed (nodejs_heap_size_total_bytes)', (m) => mib(m.metrics.nodejs_heap_size_total_bytes ?? NaN));
  row('V8 heap used (nodejs_heap_size_used_bytes)', (m) => mib(m.metrics.nodejs_heap_size_used_bytes ?? NaN));
  for (const space of ['old_space', 'new_space', 'code_space', 'map_space', 'large_object_space', 'code_large_object_space']) {
    const key = (k: string) => `nodejs_heap_space_size_${k}_bytes{space="${space}"}`;
    if (moments.every((m) => m.metrics[key('total')] === undefined)) continue;
    row(`  ${space}: committed / used`, (m) => `${mib(m.metrics[key('total')] ?? NaN)} / ${mib(m.metrics[key('used')] ?? NaN)}`);
  }
  row('external (nodejs_external_memory_bytes)', (m) => mib(m.metrics.nodejs_external_memory_bytes ?? NaN));
  row('anonymous − V8 committed − external (≈ malloc, stacks, V8 metadata)', (m) =>
    mib((m.rollup.Anonymous ?? 0) * 1024 - (m.metrics.nodejs_heap_size_total_bytes ?? 0) - (m.metrics.nodejs_external_memory_bytes ?? 0)),
  );
  row('VmRSS just after the snapshot (which runs a full GC first)', (m) => kibMiB(m.rssAfterSnapshotKiB));
}

function printTop(kinds: HeapKinds, label: string, top: number): void {
  console.log(`Top ${top} by constructor/kind (self size, whole heap, ${label}):`);
  console.log('');
  console.log('| constructor (node type) | count | MiB |');
  console.log('|---|---:|---:|');
  for (const c of kinds.byConstructor.slice(0, top)) console.log(`| ${c.name.replaceAll('|', '\\|')} | ${c.count} | ${mib(c.bytes)} |`);
}

function printPods(costs: PodCosts, label: string): void {
  console.log(`Per pod (${label}; mean over ${costs.sample} pods of each kind, bytes): objects only that pod holds, plus its share of`);
  console.log('the maps and arrays that hold it (slot bytes = holder size / holder edges, per reference).');
  console.log('');
  console.log(
    '| pod | pods | model Pod + what only it holds | labels (shared, per pod) | slots in maps/arrays | informer cache entry | references to it | total |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const g of costs.groups)
    console.log(
      `| ${g.name} | ${g.pods} | ${g.own.toFixed(0)} | ${g.labels.toFixed(0)} | ${g.slots.toFixed(0)} | ${g.informer.toFixed(0)} | ${g.references.toFixed(1)} | **${(g.own + g.labels + g.slots + g.informer).toFixed(0)}** |`,
    );
  console.log('');
  console.log("The model Pod's own bytes by field (same means):");
  console.log('');
  const fields = [...new Set(costs.groups.flatMap((g) => [...g.fields.keys()]))].sort(
    (a, b) => (costs.groups[0]!.fields.get(b) ?? 0) - (costs.groups[0]!.fields.get(a) ?? 0),
  );
  console.log(`| pod | ${fields.join(' | ')} |`);
  console.log(`|---|${fields.map(() => '---:').join('|')}|`);
  for (const g of costs.groups) console.log(`| ${g.name} | ${fields.map((f) => (g.fields.get(f) ?? 0).toFixed(0)).join(' | ')} |`);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let top = 25;
  let keep: string | undefined;
  let at = 'both';
  let idle = 0;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--top') top = Number(argv[++i]);
    else if (argv[i] === '--at') at = argv[++i] ?? '';
    else if (argv[i] === '--idle') idle = Number(argv[++i]);
    else if (argv[i] === '--keep') keep = argv[++i];
    else rest.push(argv[i]!);
  }
  if (!['first', 'events', 'both'].includes(at)) throw new Error('--at must be first, events or both');
  const args: Args = parseArgs(rest.length > 0 ? rest : ['--tier', 'xl', '--events', '1000']);
  const command = `node --import ./scripts/register-ts.mjs scripts/bench-heap.ts ${argv.join(' ')}`.trim();
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'nft-bench-heap-'));
  const moments: Moment[] = [];
  try {
    await runDaemonBench(args, command, {
      extraNodeFlags: ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`],
      ...(at !== 'events'
        ? { afterFirstSync: async (daemon, url) => void moments.push(await moment('after first sync', daemon, url, dir)) }
        : {}),
      ...(at !== 'first'
        ? { afterEvents: async (daemon, url) => void moments.push(await moment(`after ${args.events} events`, daemon, url, dir, idle)) }
        : {}),
    });
    const started = Date.now();
    const kinds: HeapKinds[] = [];
    let pods: PodCosts | undefined;
    for (const m of moments) {
      const snap = readHeapSnapshot(m.file);
      const k = classifyHeap(snap);
      kinds.push(k);
      if (m === moments.at(-1)) pods = podCosts(snap, k.owner, args.node);
    }
    const podCount = pods!.storePods;
    console.log('');
    console.log(`## Daemon heap by kind: tier ${args.tier}, seed ${args.seed}, node ${args.node}`);
    console.log('');
    console.log(
      `Command: ${command} (snapshots ${moments.map((m) => `${mib(statSync(m.file).size)} MiB`).join(', ')}; parsed and classified in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
    console.log('');
    printMoments(moments, kinds, podCount);
    console.log('');
    printTop(kinds.at(-1)!, moments.at(-1)!.label, top);
    console.log('');
    printPods(pods!, moments.at(-1)!.label);
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) await main();
