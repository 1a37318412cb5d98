// The daemon's per-change CPU without a kernel or an API server, for profiling the sync path:
//   node --import ./scripts/register-ts.mjs scripts/bench-sync-cpu.ts [--tier large] [--changes 2000] [--seed 1] [--flips-only]
//   (add `--cpu-prof` before `--import` to profile it)
//
// The churn benchmark's change mix (scripts/bench-lib/churn-writes.ts) written into the store the informers
// fill (src/cluster/source.ts ObjectStore, so snapshots carry their delta as in the daemon), each change
// compiled by one long-lived Compiler and synced by one Syncer against a kernel port that accepts every
// write, then handed to the sync subscribers that walk the programmed state (metrics, local pods, bridged
// policing). One change per sync, the most the daemon does. Reports CPU (user+system) per change, split by
// what was written, and the time in garbage collection.

import { PerformanceObserver, constants, type PerformanceEntry } from 'node:perf_hooks';
import { ObjectStore } from '../src/cluster/source.js';
import { Compiler } from '../src/compile/index.js';
import { BridgedPolicingSource, LocalPods } from '../src/daemon/anti-spoofing.js';
import { syncMetrics } from '../src/daemon/sync-metrics.js';
import type { ClusterSnapshot, NetworkPolicy, Pod } from '../src/model/index.js';
import { HealthState } from '../src/observe/health.js';
import { createMetrics } from '../src/observe/metrics.js';
import { Syncer, type KernelPort } from '../src/reconcile/syncer.js';
import type { SyncReport } from '../src/reconcile/sync-reports.js';
import type { KubeObject } from '../test/fakes/fake-apiserver.js';
import { ChurnWriter, churnBenchPolicy } from './bench-lib/churn-writes.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';

const args = { tier: 'large' as Tier, changes: 2000, seed: 1, node: 'node-1', flipsOnly: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const flag = argv[i]!;
  if (flag === '--flips-only') {
    args.flipsOnly = true;
    continue;
  }
  const value = argv[++i];
  if (value === undefined) throw new Error(`${flag} needs a value`);
  if (flag === '--tier' && (TIERS as readonly string[]).includes(value)) args.tier = value as Tier;
  else if (flag === '--changes') args.changes = Number(value);
  else if (flag === '--seed') args.seed = Number(value);
  else throw new Error(`unknown flag ${flag} (--tier T, --changes N, --seed N, --flips-only)`);
}

const { snapshot, settings } = generateCluster({ tier: args.tier, seed: args.seed, node: args.node });
const target = snapshot.pods.find((p) => p.nodeName === args.node && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0)!;
const benchPolicy = churnBenchPolicy(target);

const store = new ObjectStore();
const key = (o: { namespace: string; name: string }): string => `${o.namespace}/${o.name}`;
for (const n of snapshot.nodes) store.set('Node', n.name, n);
for (const ns of snapshot.namespaces) store.set('Namespace', ns.name, ns);
for (const p of snapshot.pods) store.set('Pod', key(p), p);
for (const p of [...snapshot.policies, benchPolicy]) store.set('NetworkPolicy', key(p), p);

// The writer's API objects carry the model object itself: the store takes what the informers would decode.
type Carried = KubeObject & { model: Pod | NetworkPolicy };
const carry = (kind: 'Pod' | 'NetworkPolicy', model: Pod | NetworkPolicy): KubeObject =>
  ({ kind, metadata: { name: model.name, namespace: model.namespace }, model }) as unknown as KubeObject;
const writer = new ChurnWriter(
  {
    create: (o) => store.set(o.kind as 'Pod', key((o as Carried).model), (o as Carried).model),
    update: (o) => store.set(o.kind as 'Pod', key((o as Carried).model), (o as Carried).model),
    delete: (o) => store.delete(o.kind as 'Pod', `${o.metadata.namespace}/${o.metadata.name}`),
  },
  {
    pods: snapshot.pods,
    policies: snapshot.policies,
    podCidrs: new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs[0]!])),
    node: args.node,
    probePods: new Set(),
    seed: args.seed,
    podObject: (p) => carry('Pod', p),
    policyObject: (p) => carry('NetworkPolicy', p),
    flipsOnly: args.flipsOnly,
  },
);

const writes = { restores: 0, ipsetApplies: 0 };
const kernel: KernelPort = {
  saveFilter: () => Promise.resolve(''),
  restoreFilter: () => Promise.resolve(void writes.restores++),
  ipsetSave: () => Promise.resolve(''),
  ipsetRestore: () => Promise.resolve(),
  ipsetApply: () => Promise.resolve(void writes.ipsetApplies++),
  supports: (f) => f === 4 || settings.podCidrs.some((c) => c.includes(':')),
};
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
const syncer = new Syncer(kernel, { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix }, quiet);
const compiler = new Compiler();
const subscribers = [
  syncMetrics(createMetrics(), new HealthState({ now: () => performance.now(), stallAfterMs: 60_000 })),
  new LocalPods(),
  new BridgedPolicingSource(() => true),
];
let prepared: ClusterSnapshot | undefined;
const syncOnce = async (): Promise<void> => {
  const s = store.snapshot();
  // As the reconciler does: the policies that changed since the last snapshot are prepared ahead.
  const delta = prepared ? s.changes?.since(prepared) : undefined;
  prepared = s;
  for (const policy of delta ? delta.policies.values() : s.policies) if (policy) compiler.prepare(policy);
  const { desired } = compiler.compile(s, settings);
  const result = await syncer.sync(desired);
  const report = {
    reason: 'change',
    readKernel: result.readKernel,
    seconds: 0,
    applySeconds: 0,
    plans: result.plans,
    drift: false,
    desired,
  };
  for (const sub of subscribers) sub.synced?.(report as SyncReport);
};

await syncOnce();
// Warm-up (JIT, memo caches), then the measured changes.
for (let i = 0; i < 200; i++) {
  writer.next();
  await syncOnce();
}
let gcMs = 0;
const gcKinds = new Map<number, { n: number; ms: number }>();
const gc = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    const kind = (e as PerformanceEntry & { detail?: { kind: number } }).detail?.kind ?? -1;
    const k = gcKinds.get(kind) ?? { n: 0, ms: 0 };
    k.n++;
    k.ms += e.duration;
    gcKinds.set(kind, k);
  }
});
gc.observe({ entryTypes: ['gc'] });
// BENCH_SYNC_HEAP_PROFILE=<file>: a sampling profile of every allocation of the measured changes, garbage included.
const heapProfile = process.env.BENCH_SYNC_HEAP_PROFILE;
// BENCH_SYNC_CPU_PROFILE=<file>: a CPU profile of the measured changes only (no start-up).
const cpuProfile = process.env.BENCH_SYNC_CPU_PROFILE;
const inspector = heapProfile || cpuProfile ? new (await import('node:inspector/promises')).Session() : undefined;
inspector?.connect();
if (cpuProfile) {
  await inspector!.post('Profiler.enable');
  await inspector!.post('Profiler.start');
}
if (heapProfile) {
  await inspector!.post('HeapProfiler.startSampling', {
    samplingInterval: 8192,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}
const byKind = new Map<string, { n: number; us: number }>();
const start = process.cpuUsage();
const wallStart = performance.now();
for (let i = 0; i < args.changes; i++) {
  const before = process.cpuUsage();
  const restores = writes.restores;
  const kind = writer.next();
  await syncOnce();
  const used = process.cpuUsage(before);
  const k = `${kind}${writes.restores > restores ? ' (chains written)' : ''}`;
  const entry = byKind.get(k) ?? { n: 0, us: 0 };
  entry.n++;
  entry.us += used.user + used.system;
  byKind.set(k, entry);
}
const total = process.cpuUsage(start);
if (heapProfile) {
  const { profile } = await inspector!.post('HeapProfiler.stopSampling');
  (await import('node:fs')).writeFileSync(heapProfile, JSON.stringify(profile));
}
if (cpuProfile) {
  const { profile } = await inspector!.post('Profiler.stop');
  (await import('node:fs')).writeFileSync(cpuProfile, JSON.stringify(profile));
}
await new Promise((r) => setTimeout(r, 50));
gc.disconnect();
const ms = (us: number): string => (us / 1000).toFixed(3);
console.log(
  `## sync-path CPU per change: tier ${args.tier}, ${args.changes} changes, seed ${args.seed}${args.flipsOnly ? ', label flips only' : ''}`,
);
console.log('');
console.log(`Command: node --import ./scripts/register-ts.mjs scripts/bench-sync-cpu.ts ${argv.join(' ')}`.trim());
console.log(
  `Load average: ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log('');
console.log('| change | changes | CPU per change (ms) |');
console.log('|---|---|---|');
for (const [k, e] of [...byKind].sort()) console.log(`| ${k} | ${e.n} | ${ms(e.us / e.n)} |`);
console.log(
  `| all | ${args.changes} | ${ms((total.user + total.system) / args.changes)} (of it in GC: ${(gcMs / args.changes).toFixed(3)}; wall ${((performance.now() - wallStart) / args.changes).toFixed(3)}) |`,
);
console.log('');
const gcName = new Map<number, string>([
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weak callbacks'],
]);
console.log(`GC: ${[...gcKinds].map(([k, v]) => `${gcName.get(k) ?? k} ${v.n}× ${v.ms.toFixed(0)} ms`).join(', ')}.`);
console.log(`iptables-restore transactions: ${writes.restores}; netlink set writes: ${writes.ipsetApplies}.`);
