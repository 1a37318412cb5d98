// Kernel rows of the ClusterNetworkPolicy benchmark, each against a floor measured in the same
// run, on the large tier with and without the 100 generated CNPs (scripts/bench-cnp-policies.ts):
//   first apply   Syncer.sync of the whole compiled state into a fresh netns, vs the same restore texts
//                 loaded with `ipset -exist restore` + `iptables-nft-restore --noflush` into another one;
//   one CNP change  Syncer.sync after one CNP's priority changed (the daemon's long-lived Compiler), on a
//                 netns holding the full state, vs the texts it wrote applied with the tools to a twin netns.
// Runs alternate netfence and floor so load on the shared machine hits both alike. Needs root (scratch
// namespaces `nft-bc-*`, deleted on exit). The root namespace is never touched.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-cnp-kernel.ts [--tier large] [--runs 5] [--seed 1]

import { Compiler } from '../src/compile/index.js';
import { generateCluster } from './bench-lib/generator.js';
import { openKernel } from '../src/dataplane/kernel.js';
import type { ClusterSnapshot, DesiredState, NodeSettings } from '../src/model/index.js';
import type { FamilyPlan } from '../src/plan/index.js';
import { Syncer } from '../src/reconcile/syncer.js';
import { generateClusterPolicies } from './bench-cnp-policies.js';
import { applyWithTools } from './lib/bench-floor.js';
import { parseBenchFlags } from './lib/bench-args.js';
import { silentLogger } from './lib/bench-kernel-port.js';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';
import { fmtInt, fmtMs, median, sample, type Sample } from './lib/bench-stats.js';

const { tier, runs, seed } = parseBenchFlags(process.argv.slice(2), { runs: 5 }, []);
const COMMAND = `node --import ./scripts/register-ts.mjs scripts/bench-cnp-kernel.ts --tier ${tier} --runs ${runs} --seed ${seed}`;

async function syncerIn(netns: string, settings: NodeSettings): Promise<Syncer> {
  const kernel = await openKernel({ netns, backend: 'nft', ipv6: true });
  return new Syncer(kernel, { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix }, silentLogger);
}

const v4 = (plans: readonly FamilyPlan[]): FamilyPlan => plans.find((p) => p.family === 4)!;
const row = (what: string, ours: readonly Sample[], floor: readonly Sample[], detail: string): void => {
  const o = median(ours.map((s) => s.wallMs));
  const f = median(floor.map((s) => s.wallMs));
  console.log(
    `${what.padEnd(44)} netfence ${fmtMs(o).padStart(6)} ms   floor ${fmtMs(f).padStart(6)} ms   ×${(o / f).toFixed(2)}   (median of ${ours.length}; ${detail})`,
  );
};

async function firstApply(label: string, desired: DesiredState, settings: NodeSettings): Promise<void> {
  const ours: Sample[] = [];
  const floor: Sample[] = [];
  let plans: readonly FamilyPlan[] = [];
  for (let i = 0; i <= runs; i++) {
    const a = await createScratchNetns('bc');
    const b = await createScratchNetns('bc');
    try {
      const syncer = await syncerIn(a.name, settings);
      const mine = () => sample(async () => void (plans = (await syncer.sync(desired)).plans));
      const tools = () => sample(() => applyWithTools(b.name, plans));
      // The floor needs texts: the first run goes netfence-first, later ones alternate.
      const [o, f] =
        i % 2 === 0
          ? [await mine(), await tools()]
          : await (async () => {
              const f1 = await tools();
              return [await mine(), f1] as const;
            })();
      if (i === 0) continue; // warm-up
      ours.push(o);
      floor.push(f);
    } finally {
      await a.destroy();
      await b.destroy();
    }
  }
  const p = v4(plans);
  row(
    `first apply, ${label}`,
    ours,
    floor,
    `${fmtInt(p.counts.setsCreated)} sets / ${fmtInt(p.counts.membersAdded)} members, ${fmtInt(p.counts.chainsWritten)} chains / ${fmtInt(p.counts.rulesWritten)} rules, ${fmtInt(Buffer.byteLength(p.iptablesRestore))} B of iptables-restore`,
  );
}

async function oneCnpChange(snapshot: ClusterSnapshot, settings: NodeSettings): Promise<void> {
  const compiler = new Compiler();
  const full = compiler.compile(snapshot, settings).desired;
  const a = await createScratchNetns('bc');
  const b = await createScratchNetns('bc');
  const ours: Sample[] = [];
  const floor: Sample[] = [];
  let last: FamilyPlan | undefined;
  try {
    const syncer = await syncerIn(a.name, settings);
    const start = await syncer.sync(full);
    await applyWithTools(b.name, start.plans);
    let current = snapshot;
    for (let i = 0; i <= runs; i++) {
      // One Admin CNP selecting every namespace (cnp-001) moves to the front of its tier and back (as upstream's
      // CNPAdminTierPriorityField moves one): every local pod's tier order changes, so each pod's workload
      // (and pod-to-node) chains are rewritten; no CNP chain and no set changes.
      current = {
        ...current,
        clusterPolicies: current.clusterPolicies!.map((c, j) => (j === 1 ? { ...c, priority: i % 2 === 0 ? 0 : 1000 } : c)),
      };
      const desired = compiler.compile(current, settings).desired;
      let plans: readonly FamilyPlan[] = [];
      const o = await sample(async () => void (plans = (await syncer.sync(desired)).plans));
      const f = await sample(() => applyWithTools(b.name, plans));
      last = v4(plans);
      if (i === 0) continue;
      ours.push(o);
      floor.push(f);
    }
  } finally {
    await a.destroy();
    await b.destroy();
  }
  row(
    'one CNP priority changed, 100 CNPs',
    ours,
    floor,
    `wrote ${fmtInt(last?.counts.chainsWritten ?? 0)} chains / ${fmtInt(last?.counts.rulesWritten ?? 0)} rules`,
  );
}

try {
  if (process.getuid?.() !== 0) throw new Error('needs root: it creates network namespaces (run with sudo)');
  const { snapshot: base, settings } = generateCluster({ tier, seed, node: 'node-1' });
  const withCnps: ClusterSnapshot = { ...base, clusterPolicies: generateClusterPolicies(base, seed) };
  console.log(`# ${COMMAND}`);
  await firstApply(`${tier} tier, no CNPs`, new Compiler().compile(base, settings).desired, settings);
  await firstApply(`${tier} tier + 100 CNPs`, new Compiler().compile(withCnps, settings).desired, settings);
  await oneCnpChange(withCnps, settings);
} finally {
  destroyAllScratchNetns();
}
