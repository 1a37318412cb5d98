// Compile and incremental-recompute benchmark over a deterministic synthetic cluster.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-compile.ts [--tier large] [--runs 20]
//          [--seed 1] [--warmup 10] [--node node-1] [--only <row>] [--compile-loop] [--plain]
// `--compile-loop` only compiles `runs` times (for `node --cpu-prof …`), printing nothing else.
// Warm-up runs (default 10) come first: the daemon is long-lived, so a warm JIT is its steady state.
//
// Incremental row = what the daemon does per change: its long-lived Compiler compiles the mutated
// snapshot, then planFamily(desired, expectedObserved(previous desired), previous). The previous
// expectedObserved is the syncer's "programmed" state, already in memory, so it is built outside the
// timed region; building the next one after the apply (the tracker update) is reported separately.
// As in the daemon, each mutated cluster reaches the Compiler through a source's ObjectStore, whose
// snapshots say what changed since the previous one; `--plain` hands over the mutated snapshot itself
// (no delta: the Compiler compares whole lists, as it does for snapshots not from a source).

import { availableParallelism } from 'node:os';
import { ObjectStore } from '../src/cluster/source.js';
import { Compiler, compile } from '../src/compile/index.js';
import { diffByIdentity, type ClusterSnapshot } from '../src/model/index.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';
import { firstPacketBound } from './bench-lib/first-packet.js';
import { MUTATIONS, remoteNode, type Mutation } from './bench-lib/mutations.js';
import { expectedObserved, planFamily, type FamilyPlan, type Ownership } from '../src/plan/index.js';
import { renderFullRestore, renderIpsetRestore } from '../src/render/index.js';

interface Args {
  tier: Tier;
  runs: number;
  seed: number;
  warmup: number;
  node: string;
  only: string | undefined;
  compileLoop: boolean;
  plain: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { tier: 'large', runs: 20, seed: 1, warmup: 10, node: 'node-1', only: undefined, compileLoop: false, plain: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--tier') {
      const t = value();
      if (!(TIERS as readonly string[]).includes(t)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
      args.tier = t as Tier;
    } else if (flag === '--runs') args.runs = Math.max(1, Number(value()));
    else if (flag === '--seed') args.seed = Number(value());
    else if (flag === '--warmup') args.warmup = Math.max(0, Number(value()));
    else if (flag === '--node') args.node = value();
    else if (flag === '--only') args.only = value();
    else if (flag === '--compile-loop') args.compileLoop = true;
    else if (flag === '--plain') args.plain = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const ms = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(0)} MiB`;
const int = (n: number): string => n.toLocaleString('en-US');

/** Runs `fn` warmup + runs times; returns the median of the timed runs and the last result. */
function measure<T>(warmup: number, runs: number, fn: () => T): { median: number; result: T } {
  let result = fn();
  for (let i = 1; i < warmup; i++) result = fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    result = fn();
    times.push(performance.now() - t0);
  }
  return { median: median(times), result };
}

const planBytes = (p: FamilyPlan): number =>
  Buffer.byteLength(p.ipsetRestore) + Buffer.byteLength(p.iptablesRestore) + Buffer.byteLength(p.ipsetDestroy);

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const command = (extra = ''): string =>
    `\`node --import ./scripts/register-ts.mjs scripts/bench-compile.ts --tier ${args.tier} --runs ${args.runs} --seed ${args.seed}${extra}\``;
  const wanted = (row: string): boolean => args.only === undefined || args.only === row;

  const rssAtStart = process.memoryUsage().rss;
  const t0 = performance.now();
  const cluster = generateCluster({ tier: args.tier, seed: args.seed, node: args.node });
  const generateMs = performance.now() - t0;
  const { snapshot, settings } = cluster;

  if (args.compileLoop) {
    for (let i = 0; i < args.runs; i++) compile(snapshot, settings);
    return;
  }

  const full = measure(args.warmup, args.runs, () => compile(snapshot, settings));
  const base = full.result.desired.v4;
  const rssAfterCompile = process.memoryUsage().rss;
  const render = measure(args.warmup, args.runs, () => renderIpsetRestore(base.ipsets) + renderFullRestore(base));
  const own: Ownership = { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix };
  const remote = remoteNode(snapshot, settings.nodeName);

  const rows: string[] = [];
  rows.push(
    '| row | what | median ms (compile + plan) | of which plan | tracker update ms | chains written | rules written | chains deleted | sets created / destroyed | members + / − | restore bytes | command | CPU ms (user+sys, this thread and GC) |',
  );
  rows.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|');
  if (wanted('full-compile')) {
    rows.push(
      `| full-compile | compile() of the whole snapshot | **${ms(full.median)}** | – | – | ${int(base.chains.length)} | ${int(base.chains.reduce((s, c) => s + c.rules.length, 0))} | – | ${int(base.ipsets.length)} / – | ${int(base.ipsets.reduce((s, x) => s + x.members.length, 0))} / – | ${int(Buffer.byteLength(render.result))} | ${command(' --only full-compile')} | – |`,
    );
  }
  if (wanted('full-render')) {
    rows.push(
      `| full-render | renderIpsetRestore + renderFullRestore (v4) | ${ms(render.median)} | – | – | – | – | – | – | – | ${int(Buffer.byteLength(render.result))} | ${command(' --only full-render')} | – |`,
    );
  }
  for (const m of MUTATIONS) {
    const row = m.name;
    if (!wanted(row)) continue;
    rows.push(mutationRow(m, args, snapshot, settings, own, remote, command(` --only ${row}`)));
  }

  const bound = firstPacketBound(base);
  const v4Rules = base.chains.reduce((s, c) => s + c.rules.length, 0);
  const members = base.ipsets.reduce((s, x) => s + x.members.length, 0);
  const byRole = (kind: string) => base.chains.filter((c) => c.role.kind === kind);
  const policyChains = byRole('policy');

  console.log(
    `## netfence compile benchmark: tier ${args.tier}, seed ${args.seed}, measured node ${settings.nodeName} (${settings.podCidrs.join(', ')})`,
  );
  console.log('');
  console.log(
    `Cluster: ${int(cluster.stats.nodes)} nodes, ${int(cluster.stats.namespaces)} namespaces, ${int(cluster.stats.pods)} pods (${cluster.stats.podsOnNode} on ${settings.nodeName}), ${int(cluster.stats.apps)} apps, ${int(cluster.stats.policies)} policies; generated in ${ms(generateMs)} ms.`,
  );
  console.log(
    `Medians of ${args.runs} runs after ${args.warmup} warm-up runs. Node ${process.version}, ${availableParallelism()} CPUs. Remote mutations touch ${remote}.`,
  );
  console.log('');
  console.log(rows.join('\n'));
  console.log('');
  console.log('Compiled state (v4; the cluster is single-stack, v6 is empty):');
  console.log(
    `- chains ${int(base.chains.length)} (static ${byRole('static').length}, dispatch ${byRole('dispatch').length}, workload ${byRole('workload').length}, policy ${policyChains.length}), rules ${int(v4Rules)} (policy-chain rules ${int(policyChains.reduce((s, c) => s + c.rules.length, 0))})`,
  );
  console.log(
    `- ipsets ${int(base.ipsets.length)}, members ${int(members)}; problems ${full.result.problems.length} (errors ${full.result.problems.filter((p) => p.severity === 'error').length})`,
  );
  console.log(
    `- restore text: ipset ${int(Buffer.byteLength(renderIpsetRestore(base.ipsets)))} B, iptables ${int(Buffer.byteLength(renderFullRestore(base)))} B`,
  );
  console.log(
    `- process RSS after compile: ${mib(rssAfterCompile)}; at start, before generating: ${mib(rssAtStart)} (mostly the TypeScript loader, @swc/core); heap used now ${mib(process.memoryUsage().heapUsed)}`,
  );
  console.log('');
  console.log(
    `First packet, worst case (static bound, see scripts/bench-lib/first-packet.ts): ${bound.total} rules checked, ${bound.setMatches} of them ipset matches`,
  );
  console.log(`- nf-FORWARD ${bound.forward}`);
  for (const [label, side] of [
    ['egress (sender)', bound.egress],
    ['ingress (receiver)', bound.ingress],
  ] as const) {
    if (!side) continue;
    console.log(
      `- ${label}: ${side.total} = dispatch ${side.dispatch} (depth ${side.dispatchDepth}) + workload chain ${side.workload} + ${side.policyChains} policy chains ${side.policies}; busiest pod ${side.pod}`,
    );
  }
  console.log('');
  console.log(`Targets (large tier): full compile < 300 ms → ${verdict(full.median, 300)}; incremental recompute < 5 ms → see rows above.`);
}

function mutationRow(
  m: Mutation,
  args: Args,
  snapshot: Parameters<typeof compile>[0],
  settings: Parameters<typeof compile>[1],
  own: Ownership,
  remote: string,
  command: string,
): string {
  const node = m.where === 'local' ? settings.nodeName : remote;
  // The daemon's incremental path: one long-lived Compiler, a plan against the tracker that skips unchanged
  // chains and sets by identity. Each run changes another object (pick = seed + run) from the base
  // snapshot, so no run replays a cached answer; the way back to the base is compiled untimed.
  const compiler = new Compiler();
  const store = args.plain ? undefined : new ObjectStore();
  const via = (from: ClusterSnapshot, to: ClusterSnapshot): ClusterSnapshot =>
    store ? (moveStore(store, from, to), store.snapshot()) : to;
  let base = compiler.compile(via(EMPTY, snapshot), settings).desired.v4;
  const planMs: number[] = [];
  const totalMs: number[] = [];
  // CPU time as well: on a shared machine wall time includes waiting for a core.
  const cpuMs: number[] = [];
  const trackerMs: number[] = [];
  let last: { plan: FamilyPlan; desired: ReturnType<typeof compile>['desired'] } | undefined;
  for (let i = 0; i < args.warmup + args.runs; i++) {
    const mutated = m.apply(snapshot, { node, pick: args.seed + i });
    const before = expectedObserved(base);
    const given = via(snapshot, mutated);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const r = compiler.compile(given, settings);
    const t1 = performance.now();
    const plan = planFamily(r.desired.v4, before, own, base);
    const t2 = performance.now();
    const cpu = process.cpuUsage(c0);
    expectedObserved(r.desired.v4);
    const t3 = performance.now();
    if (i >= args.warmup) {
      totalMs.push(t2 - t0);
      cpuMs.push((cpu.user + cpu.system) / 1000);
      planMs.push(t2 - t1);
      trackerMs.push(t3 - t2);
    }
    // Written counts are those of the change picked by the seed itself.
    if (i === 0) last = { plan, desired: r.desired };
    base = compiler.compile(via(mutated, snapshot), settings).desired.v4;
  }
  const total = { median: median(totalMs), result: last! };
  const tracker = { median: median(trackerMs) };
  const c = total.result.plan.counts;
  return `| ${m.name} | ${m.what} | **${ms(total.median)}** | ${ms(median(planMs))} | ${ms(tracker.median)} | ${c.chainsWritten} | ${c.rulesWritten} | ${c.chainsDeleted} | ${c.setsCreated} / ${c.setsDestroyed} | ${c.membersAdded} / ${c.membersRemoved} | ${int(planBytes(total.result.plan))} | ${command} | ${ms(median(cpuMs))} |`;
}

const EMPTY: ClusterSnapshot = { nodes: [], namespaces: [], pods: [], policies: [] };

/** Brings a store holding `from` to `to` (objects differing by identity), as a source's watch events would. */
function moveStore(store: ObjectStore, from: ClusterSnapshot, to: ClusterSnapshot): void {
  const named = (o: { readonly name: string; readonly namespace?: string }): string =>
    o.namespace === undefined ? o.name : `${o.namespace}/${o.name}`;
  const kinds = [
    ['Namespace', from.namespaces, to.namespaces],
    ['Node', from.nodes, to.nodes],
    ['Pod', from.pods, to.pods],
    ['NetworkPolicy', from.policies, to.policies],
  ] as const;
  for (const [kind, before, after] of kinds) {
    const { added, removed } = diffByIdentity<{ readonly name: string; readonly namespace?: string }>(before, after);
    const kept = new Set(added.map(named));
    for (const o of removed) if (!kept.has(named(o))) store.delete(kind, named(o));
    for (const o of added) store.set(kind, named(o), o as never);
  }
}

const verdict = (value: number, target: number): string => (value < target ? `met (${ms(value)} ms)` : `**missed** (${ms(value)} ms)`);

main();
