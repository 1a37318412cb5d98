// Kernel-side rows of `npm run bench`, each against a floor measured in the same run:
//   first-apply     Syncer.sync of the whole compiled state into a fresh netns, vs the same restore texts
//                   loaded with `ipset -exist restore` + `iptables-nft-restore --noflush` into another fresh netns;
//   change-<m>      Syncer.sync after a one-pod mutation on a netns holding the full state, vs the texts that
//                   sync wrote, applied with the tools to an identical netns; plus which chains/sets it wrote;
//   drift-wall/cpu  Syncer.sync({ readKernel: true }) with nothing to change, vs `iptables-nft-save -t filter`
//                   + `ipset save` of the same netns.
// Runs are interleaved (netfence, floor, netfence, floor …) so load on the shared VM hits both alike.
// `--backend legacy` runs every row on iptables-legacy (netfence and floor alike; ids get `-legacy`).
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-kernel.ts [--tier large] [--runs 7] [--seed 1] [--backend nft|legacy] [--only <row>]

import { Compiler } from '../src/compile/index.js';
import { generateCluster } from './bench-lib/generator.js';
import { MUTATIONS, type Mutation } from './bench-lib/mutations.js';
import { run } from '../src/dataplane/exec.js';
import { openKernel } from '../src/dataplane/kernel.js';
import type { ClusterSnapshot, DesiredState, NodeSettings, Pod } from '../src/model/index.js';
import type { FamilyPlan } from '../src/plan/index.js';
import { Syncer } from '../src/reconcile/syncer.js';
import { applyWithTools, changedPod, iptablesTool, type IptablesBackend } from './lib/bench-floor.js';
import { kernelBreakdown, silentLogger, TimedKernel, type KernelCall, type TimedRuns } from './lib/bench-kernel-port.js';
import { createScratchNetns, destroyAllScratchNetns, type ScratchNetns } from './lib/bench-netns.js';
import { fmtInt, fmtMs, sample, summarize, type Sample } from './lib/bench-stats.js';
import { parseBenchFlags, runAsScript, type BenchFlags } from './lib/bench-args.js';
import { againstFloor, failedRow, renderTable, tsNode, type BenchRow } from './lib/bench-table.js';

export interface KernelBenchOptions extends Omit<BenchFlags, 'seconds'> {
  readonly node: string;
  /** iptables backend of netfence and of its floor alike (default nft); legacy rows get a `-legacy` id. */
  readonly backend?: IptablesBackend;
  readonly progress?: (msg: string) => void;
}

/** The mutations that change exactly one local pod: the "one-pod change" rows. */
export const POD_CHANGES: readonly string[] = ['podAdd-local', 'podDelete-local', 'podLabelChange-local'];

type CompileFn = (snapshot: ClusterSnapshot, settings: NodeSettings) => { readonly desired: DesiredState };

/** Compiles the way the daemon does: one long-lived incremental Compiler (unchanged chains and sets keep their identity, which lets the planner skip them). */
function daemonCompile(): CompileFn {
  const compiler = new Compiler();
  return (snapshot, settings) => compiler.compile(snapshot, settings);
}

async function readWithTools(netns: string, backend: IptablesBackend = 'nft'): Promise<void> {
  await run(iptablesTool(backend, 4, 'save'), ['-t', 'filter'], { netns });
  await run('ipset', ['save'], { netns });
}

async function openSyncer(
  netns: string,
  settings: NodeSettings,
  backend: IptablesBackend = 'nft',
): Promise<{ syncer: Syncer; kernel: TimedKernel }> {
  // The daemon's defaults, except the backend: pinned so the floor uses the same one.
  const kernel = new TimedKernel(await openKernel({ netns, backend, ipv6: true }));
  const syncer = new Syncer(kernel, { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix }, silentLogger);
  return { syncer, kernel };
}

const v4 = (plans: readonly FamilyPlan[]): FamilyPlan => plans.find((p) => p.family === 4)!;

// ---- first full apply --------------------------------------------------------------------------------

async function firstApply(o: KernelBenchOptions, desired: DesiredState, settings: NodeSettings, command: string): Promise<BenchRow> {
  const t: TimedRuns = { ours: [], floor: [], calls: [] };
  let plans: readonly FamilyPlan[] = [];
  for (let i = 0; i <= o.runs; i++) {
    const a = await createScratchNetns();
    const b = await createScratchNetns();
    try {
      const { syncer, kernel } = await openSyncer(a.name, settings, o.backend);
      kernel.take();
      // Alternate which goes first, so a noisy neighbour does not always hit the same side.
      const ours = async () => {
        const s = await sample(async () => {
          plans = (await syncer.sync(desired)).plans;
        });
        return { s, calls: kernel.take() };
      };
      const floor = () => sample(() => applyWithTools(b.name, plans, o.backend));
      let r: { s: Sample; calls: KernelCall[] };
      let f: Sample;
      if (i % 2 === 0) {
        r = await ours();
        f = await floor();
      } else {
        // Floor first: it reuses the texts of the previous run, which planned the same state into the same empty kernel.
        f = await floor();
        r = await ours();
      }
      if (i === 0) continue; // warm-up: page cache, module JIT
      t.ours.push(r.s);
      t.floor.push(f);
      t.calls.push(r.calls);
    } finally {
      await a.destroy();
      await b.destroy();
    }
  }
  const ours = summarize(t.ours).wallMs;
  const floor = summarize(t.floor).wallMs;
  const p = v4(plans);
  return {
    id: `first-apply${suffix(o)}`,
    what: `first full apply into a fresh netns (${o.backend ?? 'nft'} backend): Syncer.sync (reads the empty kernel, plans, ipset restore, iptables-restore) vs the same two restore texts loaded with the tools`,
    ...againstFloor(ours, floor, 1.3),
    detail: `${fmtInt(p.counts.setsCreated)} sets / ${fmtInt(p.counts.membersAdded)} members (${fmtInt(Buffer.byteLength(p.ipsetRestore))} B), ${fmtInt(p.counts.chainsWritten)} chains / ${fmtInt(p.counts.rulesWritten)} rules (${fmtInt(Buffer.byteLength(p.iptablesRestore))} B); ${kernelBreakdown(t)}`,
    command,
  };
}

// ---- one-pod change --------------------------------------------------------------------------------

/**
 * What the change wrote, and whether all of it belongs to the pod: its own workload chains, the dispatch
 * leaf that routes to it, set member deltas of exactly its IP, and objects nothing references any more.
 */
function ownWrites(plan: FamilyPlan, pod: Pod): { only: boolean; text: string } {
  const podKey = `${pod.namespace}/${pod.name}`;
  const ip = pod.ips[0] ?? '';
  const foreign: string[] = [];
  const parts: string[] = [];
  for (const c of plan.changes) {
    if (c.object === 'chain') {
      const ok = c.action === 'delete' || c.owner === `pod ${podKey}` || c.owner === 'dispatch';
      if (!ok) foreign.push(`${c.name} (${c.owner})`);
      parts.push(
        `${c.action === 'delete' ? '−' : c.action === 'create' ? '+' : '~'}${c.name} [${c.action === 'delete' ? 'unreferenced' : c.owner}, ${c.after.length} rules]`,
      );
    } else if (c.object === 'set') {
      const before = new Set(c.before);
      const after = new Set(c.after);
      const delta = [
        ...c.after.filter((m) => !before.has(m)).map((m) => `+${m}`),
        ...c.before.filter((m) => !after.has(m)).map((m) => `−${m}`),
      ];
      const ok = c.action === 'delete' || (c.action === 'update' && delta.every((d) => d.slice(1) === ip || d.slice(1) === `${ip}/32`));
      if (!ok) foreign.push(`${c.name} (${c.action}, ${delta.length} member changes)`);
      parts.push(`${c.action === 'delete' ? `−${c.name} [unreferenced]` : `${c.name} ${delta.join(' ')}`}`);
    } else {
      foreign.push(`hook ${c.name}`);
      parts.push(`hook ${c.name}`);
    }
  }
  const text = `${podKey} (${ip}); wrote ${parts.join('; ')}${foreign.length ? `; NOT ITS OWN: ${foreign.join(', ')}` : ''}`;
  return { only: foreign.length === 0, text };
}

async function podChange(
  o: KernelBenchOptions,
  m: Mutation,
  snapshot: ClusterSnapshot,
  compileFn: CompileFn,
  settings: NodeSettings,
  a: { syncer: Syncer; kernel: TimedKernel },
  b: ScratchNetns,
  command: string,
): Promise<BenchRow> {
  const mutated = m.apply(snapshot, { node: settings.nodeName, pick: o.seed });
  const pod = changedPod(snapshot, mutated);
  const next = compileFn(mutated, settings).desired;
  // The way back, from the same compiler: shares identity with `next` wherever nothing changed.
  const back = compileFn(snapshot, settings).desired;
  const t: TimedRuns = { ours: [], floor: [], calls: [] };
  let forward: readonly FamilyPlan[] = [];
  for (let i = 0; i <= o.runs; i++) {
    // Alternate which side goes first (from run 2 on: the floor needs the texts, which every run plans alike).
    const floorFirst = i % 2 === 1;
    const f0 = floorFirst ? await sample(() => applyWithTools(b.name, forward, o.backend)) : undefined;
    a.kernel.take();
    const s = await sample(async () => {
      forward = (await a.syncer.sync(next)).plans;
    });
    const calls = a.kernel.take();
    const f = f0 ?? (await sample(() => applyWithTools(b.name, forward, o.backend)));
    // Back to the full state on both sides (untimed), so every run starts from the same kernel.
    await applyWithTools(b.name, (await a.syncer.sync(back)).plans, o.backend);
    if (i === 0) continue;
    t.ours.push(s);
    t.floor.push(f);
    t.calls.push(calls);
  }
  const ours = summarize(t.ours).wallMs;
  const floor = summarize(t.floor).wallMs;
  const p = v4(forward);
  const own = ownWrites(p, pod);
  const cells = againstFloor(ours, floor, 2);
  return {
    id: `change-${m.name}${suffix(o)}`,
    what: `one-pod change applied (${m.what}): Syncer.sync on a netns holding the full state (compile excluded), vs its restore texts applied with the tools to an identical netns; writes only its own chains/sets?`,
    ...cells,
    target: `${cells.target} and own chains/sets only`,
    verdict: cells.verdict === 'met' && own.only ? 'met' : 'missed',
    detail: `own only: ${own.only ? 'yes' : 'NO'}; ${own.text}; ${fmtInt(Buffer.byteLength(p.ipsetRestore) + Buffer.byteLength(p.iptablesRestore) + Buffer.byteLength(p.ipsetDestroy))} B; ${kernelBreakdown(t)}`,
    command,
  };
}

// ---- drift check -------------------------------------------------------------------------------------

async function driftCheck(
  o: KernelBenchOptions,
  desired: DesiredState,
  a: { syncer: Syncer; kernel: TimedKernel },
  netns: string,
  commands: { wall: string; cpu: string },
): Promise<BenchRow[]> {
  const t: TimedRuns = { ours: [], floor: [], calls: [] };
  for (let i = 0; i <= o.runs; i++) {
    a.kernel.take();
    let changes = 0;
    let drift = false;
    const f0 = i % 2 === 1 ? await sample(() => readWithTools(netns, o.backend)) : undefined;
    const s = await sample(async () => {
      const r = await a.syncer.sync(desired, { readKernel: true });
      changes = r.plans.reduce((n, p) => n + p.changes.length, 0);
      drift = r.drift;
    });
    if (changes > 0 || drift) throw new Error(`drift check on an in-sync kernel planned ${changes} changes (drift ${drift})`);
    const calls = a.kernel.take();
    const f = f0 ?? (await sample(() => readWithTools(netns, o.backend)));
    if (i === 0) continue;
    t.ours.push(s);
    t.floor.push(f);
    t.calls.push(calls);
  }
  const ours = summarize(t.ours);
  const floor = summarize(t.floor);
  const cpuHow =
    'CPU = process.cpuUsage() of this process + children from /proc/self/stat cutime+cstime (= getrusage(RUSAGE_CHILDREN), 10 ms ticks), mean per run';
  return [
    {
      id: `drift-wall${suffix(o)}`,
      what: `drift check on an in-sync kernel, wall time: Syncer.sync({ readKernel: true }) planning nothing (reads ipset save, iptables-save v4 and v6, parses, plans) vs \`${iptablesTool(o.backend ?? 'nft', 4, 'save')} -t filter\` + \`ipset save\` of the same netns`,
      ...againstFloor(ours.wallMs, floor.wallMs, 1.5),
      detail: kernelBreakdown(t),
      command: commands.wall,
    },
    {
      id: `drift-cpu${suffix(o)}`,
      what: "the same drift check, CPU time (netfence process + the tools it ran) vs the floor's (this process spawning + the two tools)",
      ...againstFloor(ours.cpuMs, floor.cpuMs, 1.5),
      detail: `netfence: own ${fmtMs(ours.selfCpuMs)} ms + tools ${fmtMs(ours.childCpuMs)} ms; floor: own ${fmtMs(floor.selfCpuMs)} ms + tools ${fmtMs(floor.childCpuMs)} ms; ${cpuHow}`,
      command: commands.cpu,
    },
  ];
}

// ---- all of it ---------------------------------------------------------------------------------------

/** Row ids of the legacy backend carry `-legacy`; nft rows keep the plain ids. */
const suffix = (o: Pick<KernelBenchOptions, 'backend'>): string => (o.backend === 'legacy' ? '-legacy' : '');

export const KERNEL_ROWS: readonly string[] = ['first-apply', ...POD_CHANGES.map((m) => `change-${m}`), 'drift-wall', 'drift-cpu'];

export async function kernelBench(o: KernelBenchOptions): Promise<BenchRow[]> {
  const command = (row: string) =>
    tsNode('scripts/bench-kernel.ts', [
      '--tier',
      o.tier,
      '--runs',
      String(o.runs),
      '--seed',
      String(o.seed),
      ...(o.backend === 'legacy' ? ['--backend', 'legacy'] : []),
      '--only',
      row,
    ]);
  const wanted = (row: string) => o.only === undefined || o.only === row;
  const say = o.progress ?? (() => {});
  const { snapshot, settings } = generateCluster({ tier: o.tier, seed: o.seed, node: o.node });
  const compileFn = daemonCompile();
  const desired = compileFn(snapshot, settings).desired;
  const rows: BenchRow[] = [];
  try {
    if (wanted('first-apply')) {
      say('kernel: first full apply vs floor');
      rows.push(
        await firstApply(o, desired, settings, command('first-apply')).catch((e) =>
          failedRow('first-apply', 'first full apply', e, command('first-apply')),
        ),
      );
    }
    const changes = MUTATIONS.filter((m) => POD_CHANGES.includes(m.name) && wanted(`change-${m.name}`));
    const drift = wanted('drift-wall') || wanted('drift-cpu');
    if (changes.length > 0 || drift) {
      // Two namespaces with the same full state: A is netfence's, B gets the floor's tool calls.
      const a = await createScratchNetns();
      const b = await createScratchNetns();
      const ours = await openSyncer(a.name, settings, o.backend);
      const first = (await ours.syncer.sync(desired)).plans;
      await applyWithTools(b.name, first, o.backend);
      for (const m of changes) {
        say(`kernel: one-pod change ${m.name} vs floor`);
        rows.push(
          await podChange(o, m, snapshot, compileFn, settings, ours, b, command(`change-${m.name}`)).catch((e) =>
            failedRow(`change-${m.name}`, m.what, e, command(`change-${m.name}`)),
          ),
        );
      }
      if (drift) {
        say('kernel: drift check vs floor');
        const all = await driftCheck(o, desired, ours, a.name, { wall: command('drift-wall'), cpu: command('drift-cpu') }).catch((e) => [
          failedRow('drift-wall', 'drift check', e, command('drift-wall')),
        ]);
        rows.push(...all.filter((r) => wanted(r.id.replace(/-legacy$/, ''))));
      }
      await a.destroy();
      await b.destroy();
    }
  } finally {
    destroyAllScratchNetns();
  }
  return rows;
}

function parseArgs(argv: readonly string[]): KernelBenchOptions {
  const at = argv.indexOf('--backend');
  const backend = at >= 0 ? argv[at + 1] : 'nft';
  if (backend !== 'nft' && backend !== 'legacy') throw new Error('--backend must be nft or legacy');
  const rest = at >= 0 ? [...argv.slice(0, at), ...argv.slice(at + 2)] : argv;
  const { tier, seed, runs, only } = parseBenchFlags(rest, { runs: 7 }, KERNEL_ROWS);
  return { tier, seed, runs, node: 'node-1', only, backend, progress: (m) => console.error(`… ${m}`) };
}

await runAsScript(import.meta.url, 'bench-kernel needs root (it creates network namespaces)', async () => {
  console.log(renderTable(await kernelBench(parseArgs(process.argv.slice(2)))));
});
