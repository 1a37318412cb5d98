// Dual-stack rows of `npm run bench -- --dual-stack`: the generated tier (large: 10,000 pods, 1,000
// policies) with every pod and node given an IPv6 address beside its IPv4 one, as flannel's dual-stack
// mode does (a /64 per node). Each family is measured beside its own floor in the same run:
//   ds-first-apply-v4|v6   Syncer.sync of that family's whole state into a fresh netns (a Syncer that
//                          programs only that family), vs the same restore texts loaded with `ipset -exist
//                          restore` + `ip(6)tables-<backend>-restore --noflush` into another fresh netns;
//   ds-first-apply-both    one Syncer programming both families, as the daemon does, vs both floors in turn;
//   ds-change-<m>-v4|v6    one-pod change on a netns holding that family's full state, vs the texts that
//                          sync wrote, applied with the tools to an identical netns;
//   ds-change-<m>-both     the same through one Syncer programming both families (the daemon's case).
// Runs alternate netfence and floor so load on the shared machine hits both alike; the first is a warm-up.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-dual-stack.ts [--tier large] [--runs 5] [--seed 1] [--only <row>]

import ipaddr from 'ipaddr.js';
import { Compiler } from '../src/compile/index.js';
import { generateCluster, type Tier } from './bench-lib/generator.js';
import { MUTATIONS, type Mutation } from './bench-lib/mutations.js';
import { openKernel } from '../src/dataplane/kernel.js';
import {
  defaultNodeSettings,
  type ClusterNode,
  type ClusterSnapshot,
  type DesiredState,
  type IpFamily,
  type NodeSettings,
  type Pod,
} from '../src/model/index.js';
import type { FamilyPlan } from '../src/plan/index.js';
import { Syncer, type KernelPort } from '../src/reconcile/syncer.js';
import { parseBenchFlags, runAsScript } from './lib/bench-args.js';
import { applyWithTools, changedPod, iptablesTool, type IptablesBackend } from './lib/bench-floor.js';
import { kernelBreakdown, silentLogger, TimedKernel, type KernelCall, type TimedRuns } from './lib/bench-kernel-port.js';
import { createScratchNetns, destroyAllScratchNetns, type ScratchNetns } from './lib/bench-netns.js';
import { fmtInt, sample, summarize, type Sample } from './lib/bench-stats.js';
import { againstFloor, failedRow, renderTable, tsNode, type BenchRow } from './lib/bench-table.js';

/** The one-pod changes measured (the same mutations as the IPv4 rows of bench-kernel.ts). */
const POD_CHANGES = ['podAdd-local', 'podDelete-local', 'podLabelChange-local'] as const;
const FAMILIES = [4, 6] as const;

export const DUAL_STACK_ROWS: readonly string[] = [
  ...FAMILIES.map((f) => `ds-first-apply-v${f}`),
  'ds-first-apply-both',
  ...POD_CHANGES.flatMap((m) => [...FAMILIES.map((f) => `ds-change-${m}-v${f}`), `ds-change-${m}-both`]),
];

export interface DualStackOptions {
  readonly tier: Tier;
  readonly seed: number;
  readonly runs: number;
  readonly only?: string | undefined;
  readonly progress?: (msg: string) => void;
}

// ---- the dual-stack cluster ---------------------------------------------------------------------------

/** flannel-like: node i's IPv4 /24 10.244.i.0/24 gets the IPv6 /64 fd00:10:244:i::/64 (hex i); others map into fd00:ffff::/96. */
function v6Of(v4: string): string {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  const text =
    a === 10 && b === 244
      ? `fd00:10:244:${c.toString(16)}::${d.toString(16)}`
      : `fd00:ffff::${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  return ipaddr.IPv6.parse(text).toRFC5952String();
}

function v6Cidr(v4Cidr: string): string {
  const [net] = v4Cidr.split('/');
  const [a, b, c] = net!.split('.').map(Number) as [number, number, number];
  if (a !== 10 || b !== 244) throw new Error(`pod CIDR ${v4Cidr} is not in 10.244.0.0/16 (tiers above 256 nodes are not mapped)`);
  return `fd00:10:244:${c.toString(16)}::/64`;
}

// Memoised per object: a pod the mutation did not touch keeps its identity, so the incremental compiler
// and the planner skip it exactly as they do for IPv4 (the daemon's situation).
const dualPods = new WeakMap<Pod, Pod>();
const dualNodes = new WeakMap<ClusterNode, ClusterNode>();
const hasV6 = (ips: readonly string[]) => ips.some((i) => i.includes(':'));

function dualStack(snapshot: ClusterSnapshot): ClusterSnapshot {
  const pod = (p: Pod): Pod => {
    if (p.ips.length === 0 || hasV6(p.ips)) return p;
    let d = dualPods.get(p);
    if (!d) dualPods.set(p, (d = { ...p, ips: [...p.ips, ...p.ips.map(v6Of)] }));
    return d;
  };
  const node = (n: ClusterNode): ClusterNode => {
    if (hasV6(n.podCidrs)) return n;
    let d = dualNodes.get(n);
    if (!d)
      dualNodes.set(
        n,
        (d = { ...n, podCidrs: [...n.podCidrs, ...n.podCidrs.map(v6Cidr)], addresses: [...n.addresses, ...n.addresses.map(v6Of)] }),
      );
    return d;
  };
  return { ...snapshot, nodes: snapshot.nodes.map(node), pods: snapshot.pods.map(pod) };
}

// ---- kernels ---------------------------------------------------------------------------------------

/** A kernel that programs only `families`: the Syncer then plans and writes that family alone. */
class FamiliesKernel implements KernelPort {
  constructor(
    readonly inner: TimedKernel,
    private readonly families: readonly IpFamily[],
  ) {}
  supports = (f: IpFamily): boolean => this.families.includes(f) && this.inner.supports(f);
  saveFilter = (f: IpFamily) => this.inner.saveFilter(f);
  restoreFilter = (f: IpFamily, text: string) => this.inner.restoreFilter(f, text);
  ipsetSave = () => this.inner.ipsetSave();
  ipsetRestore = (text: string) => this.inner.ipsetRestore(text);
}

interface Side {
  readonly syncer: Syncer;
  readonly kernel: TimedKernel;
}

async function openSide(netns: string, settings: NodeSettings, families: readonly IpFamily[], backend: IptablesBackend): Promise<Side> {
  const kernel = new TimedKernel(await openKernel({ netns, backend, ipv6: true }));
  if (families.some((f) => !kernel.supports(f))) throw new Error(`IPv${families.join('/')} not available in ${netns} (ip6tables missing?)`);
  const syncer = new Syncer(
    new FamiliesKernel(kernel, families),
    { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix },
    silentLogger,
  );
  return { syncer, kernel };
}

// ---- measuring -------------------------------------------------------------------------------------

const sizes = (plans: readonly FamilyPlan[]): string =>
  plans
    .map(
      (p) =>
        `IPv${p.family}: ${fmtInt(p.counts.setsCreated)} sets / ${fmtInt(p.counts.membersAdded)} members (${fmtInt(Buffer.byteLength(p.ipsetRestore))} B), ` +
        `${fmtInt(p.counts.chainsWritten)} chains / ${fmtInt(p.counts.rulesWritten)} rules (${fmtInt(Buffer.byteLength(p.iptablesRestore))} B)`,
    )
    .join('; ');

async function firstApply(
  o: DualStackOptions,
  desired: DesiredState,
  settings: NodeSettings,
  families: readonly IpFamily[],
  backend: IptablesBackend,
  command: string,
): Promise<BenchRow> {
  const t: TimedRuns = { ours: [], floor: [], calls: [] };
  let plans: readonly FamilyPlan[] = [];
  for (let i = 0; i <= o.runs; i++) {
    const a = await createScratchNetns('ds');
    const b = await createScratchNetns('ds');
    try {
      const side = await openSide(a.name, settings, families, backend);
      side.kernel.take();
      const ours = async () => {
        const s = await sample(async () => {
          plans = (await side.syncer.sync(desired)).plans;
        });
        return { s, calls: side.kernel.take() };
      };
      const floor = () => sample(() => applyWithTools(b.name, plans, backend));
      let r: { s: Sample; calls: KernelCall[] };
      let f: Sample;
      // Alternate which goes first; the floor reuses the previous run's texts (same state, same empty kernel).
      if (i % 2 === 0) {
        r = await ours();
        f = await floor();
      } else {
        f = await floor();
        r = await ours();
      }
      if (plans.length !== families.length || plans.some((p) => p.counts.rulesWritten === 0))
        throw new Error(`planned ${plans.map((p) => `IPv${p.family}`).join(', ')}: expected rules for IPv${families.join(' and IPv')}`);
      if (i === 0) continue;
      t.ours.push(r.s);
      t.floor.push(f);
      t.calls.push(r.calls);
    } finally {
      await a.destroy();
      await b.destroy();
    }
  }
  const which = families.length === 2 ? 'both families (one Syncer, as the daemon runs)' : `IPv${families[0]} only`;
  return {
    id: families.length === 2 ? 'ds-first-apply-both' : `ds-first-apply-v${families[0]}`,
    what: `dual-stack first full apply into a fresh netns, ${which}: Syncer.sync vs the same restore texts loaded with ipset restore + ${families.map((f) => iptablesTool(backend, f, 'restore')).join(' + ')}`,
    ...againstFloor(summarize(t.ours).wallMs, summarize(t.floor).wallMs, 1.3),
    detail: `${sizes(plans)}; ${kernelBreakdown(t)}`,
    command,
  };
}

async function podChange(
  o: DualStackOptions,
  m: Mutation,
  families: readonly IpFamily[],
  snapshot: ClusterSnapshot,
  compileFn: (s: ClusterSnapshot) => DesiredState,
  settings: NodeSettings,
  a: Side,
  b: ScratchNetns,
  backend: IptablesBackend,
  command: string,
): Promise<BenchRow> {
  const mutated = dualStack(m.apply(snapshot, { node: settings.nodeName, pick: o.seed }));
  const pod = changedPod(snapshot, mutated);
  const next = compileFn(mutated);
  const back = compileFn(snapshot);
  const t: TimedRuns = { ours: [], floor: [], calls: [] };
  let forward: readonly FamilyPlan[] = [];
  for (let i = 0; i <= o.runs; i++) {
    const f0 = i % 2 === 1 ? await sample(() => applyWithTools(b.name, forward, backend)) : undefined;
    a.kernel.take();
    const s = await sample(async () => {
      forward = (await a.syncer.sync(next)).plans;
    });
    const calls = a.kernel.take();
    const f = f0 ?? (await sample(() => applyWithTools(b.name, forward, backend)));
    // Back to the full state on both sides (untimed), so every run starts from the same kernel.
    await applyWithTools(b.name, (await a.syncer.sync(back)).plans, backend);
    if (i === 0) continue;
    t.ours.push(s);
    t.floor.push(f);
    t.calls.push(calls);
  }
  const wrote = families.map((family) => {
    const p = forward.find((x) => x.family === family);
    if (!p || p.changes.length === 0) throw new Error(`the change wrote nothing for IPv${family}`);
    const bytes = Buffer.byteLength(p.ipsetRestore) + Buffer.byteLength(p.iptablesRestore) + Buffer.byteLength(p.ipsetDestroy);
    return `IPv${family} ${p.changes.length} object(s), ${fmtInt(bytes)} B: ${p.changes.map((c) => `${c.action} ${c.object} ${c.name}`).join(', ')}`;
  });
  const which = families.length === 2 ? 'both families through one Syncer' : `IPv${families[0]}`;
  return {
    id: `ds-change-${m.name}-${families.length === 2 ? 'both' : `v${families[0]}`}`,
    what: `dual-stack one-pod change (${m.what}), ${which}: Syncer.sync on a netns holding the full state (compile excluded), vs its restore texts applied with the tools to an identical netns`,
    ...againstFloor(summarize(t.ours).wallMs, summarize(t.floor).wallMs, 2),
    detail: `${pod.namespace}/${pod.name} (${pod.ips.join(', ')}); wrote ${wrote.join('; ')}; ${kernelBreakdown(t)}`,
    command,
  };
}

// ---- all of it ---------------------------------------------------------------------------------------

export async function dualStackBench(o: DualStackOptions): Promise<BenchRow[]> {
  const backend: IptablesBackend = 'nft';
  const command = (row: string) =>
    tsNode('scripts/bench-dual-stack.ts', ['--tier', o.tier, '--runs', String(o.runs), '--seed', String(o.seed), '--only', row]);
  const wanted = (row: string) => o.only === undefined || o.only === row;
  const say = o.progress ?? (() => {});
  const generated = generateCluster({ tier: o.tier, seed: o.seed, node: 'node-1' });
  const snapshot = dualStack(generated.snapshot);
  const node = snapshot.nodes.find((n) => n.name === 'node-1')!;
  const settings = defaultNodeSettings(node.name, node.podCidrs);
  const compiler = new Compiler();
  const compileFn = (s: ClusterSnapshot) => compiler.compile(s, settings).desired;
  const desired = compileFn(snapshot);
  const rows: BenchRow[] = [];
  try {
    for (const families of [[4], [6], [4, 6]] as const) {
      const id = families.length === 2 ? 'ds-first-apply-both' : `ds-first-apply-v${families[0]}`;
      if (!wanted(id)) continue;
      say(`dual-stack: ${id} vs floor`);
      rows.push(
        await firstApply(o, desired, settings, families, backend, command(id)).catch((e) =>
          failedRow(id, 'dual-stack first apply', e, command(id)),
        ),
      );
    }
    for (const families of [[4], [6], [4, 6]] as const) {
      const tag = families.length === 2 ? 'both' : `v${families[0]}`;
      const changes = MUTATIONS.filter((m) => (POD_CHANGES as readonly string[]).includes(m.name) && wanted(`ds-change-${m.name}-${tag}`));
      if (changes.length === 0) continue;
      // Two namespaces with the full state of these families: A is netfence's, B gets the floor's tool calls.
      const a = await createScratchNetns('ds');
      const b = await createScratchNetns('ds');
      try {
        const side = await openSide(a.name, settings, families, backend);
        await applyWithTools(b.name, (await side.syncer.sync(desired)).plans, backend);
        for (const m of changes) {
          const id = `ds-change-${m.name}-${tag}`;
          say(`dual-stack: ${id} vs floor`);
          rows.push(
            await podChange(o, m, families, snapshot, compileFn, settings, side, b, backend, command(id)).catch((e) =>
              failedRow(id, m.what, e, command(id)),
            ),
          );
        }
      } finally {
        await a.destroy();
        await b.destroy();
      }
    }
  } finally {
    destroyAllScratchNetns();
  }
  return rows;
}

await runAsScript(import.meta.url, 'bench-dual-stack needs root (it creates network namespaces)', async () => {
  const { tier, seed, runs, only } = parseBenchFlags(process.argv.slice(2), { runs: 5 }, DUAL_STACK_ROWS);
  const rows = await dualStackBench({ tier, seed, runs, only, progress: (m) => console.error(`… ${m}`) });
  const shape = generateCluster({ tier, seed, node: 'node-1' }).stats;
  console.log(
    `Dual-stack ${tier} tier: ${fmtInt(shape.pods)} pods (${fmtInt(shape.podsOnNode)} on node-1), ${fmtInt(shape.policies)} policies, every pod and node with an IPv4 and an IPv6 address; nft backend; median of ${runs} runs after a warm-up\n`,
  );
  console.log(renderTable(rows));
});
