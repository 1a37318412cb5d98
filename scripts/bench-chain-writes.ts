// How many iptables transactions (processes) the churn benchmark's changes still need, and why:
//   node --import ./scripts/register-ts.mjs scripts/bench-chain-writes.ts [--tier large] [--changes 1000] [--seed 1]
//
// The churn benchmark's own change mix (scripts/bench-lib/churn-writes.ts: label flips, pods replaced with new
// IPs, policy port edits), applied one at a time to the daemon's long-lived Compiler, each planned against the
// previous change as the daemon's syncer plans it. One change per sync is the most the daemon ever writes (under
// load it folds several changes into one sync). For every change kind it counts the changes whose plan has an
// iptables-restore step (one process: the chains and hooks of both families go in one transaction each) and
// what those chains were, by owner: a pod's workload chains, a policy's chains, the dispatch tree, static chains.
// Set-only changes are written over netlink by the daemon (no process). Pure: no kernel, no root.

import { Compiler } from '../src/compile/index.js';
import type { ClusterSnapshot, FamilyState } from '../src/model/index.js';
import { expectedObserved, planFamily, type FamilyPlan } from '../src/plan/index.js';
import { ChurnWriter, churnBenchPolicy } from './bench-lib/churn-writes.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';
import { podObject, policyObject } from './bench-daemon.js';

interface Args {
  tier: Tier;
  changes: number;
  seed: number;
  node: string;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { tier: 'large', changes: 1000, seed: 1, node: 'node-1' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--tier') {
      if (!(TIERS as readonly string[]).includes(value)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
      args.tier = value as Tier;
    } else if (flag === '--changes') args.changes = Number(value);
    else if (flag === '--seed') args.seed = Number(value);
    else if (flag === '--node') args.node = value;
    else throw new Error(`unknown flag ${flag} (--tier T, --changes N, --seed N, --node NAME)`);
  }
  return args;
}

/** What a written chain is, for the "why": the part of its owner that says why it had to change. */
const ownerKind = (owner: string): string =>
  owner.startsWith('pod ')
    ? 'workload chains'
    : owner.startsWith('policy ')
      ? 'policy chains'
      : owner === 'dispatch'
        ? 'dispatch tree'
        : owner === 'no longer needed'
          ? 'stale chains deleted'
          : owner;

const args = parseArgs(process.argv.slice(2));
const { snapshot, settings } = generateCluster({ tier: args.tier, seed: args.seed, node: args.node });
// The churn benchmark's bench policy: every label flip moves a pod in or out of its peer set.
const target = snapshot.pods.find((p) => p.nodeName === args.node && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0)!;
const benchPolicy = churnBenchPolicy(target);
const writer = new ChurnWriter(
  { create: () => undefined, update: () => undefined, delete: () => undefined },
  {
    pods: snapshot.pods,
    policies: snapshot.policies,
    podCidrs: new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs[0]!])),
    node: args.node,
    probePods: new Set(),
    seed: args.seed,
    podObject,
    policyObject,
  },
);

const own = { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix };
const compiler = new Compiler();
const desiredOf = (s: ClusterSnapshot) => compiler.compile(s, settings).desired;
let previous = desiredOf({ ...snapshot, policies: [...snapshot.policies, benchPolicy] });
const observedOf = (state: FamilyState) => expectedObserved(state);

interface KindCount {
  changes: number;
  withRules: number;
  setOnly: number;
  nothing: number;
  owners: Map<string, number>;
}
const byKind = new Map<string, KindCount>();
for (let i = 0; i < args.changes; i++) {
  const kind = writer.next();
  const now = writer.current();
  const desired = desiredOf({ ...snapshot, pods: now.pods, policies: [...now.policies, benchPolicy] });
  const plans: FamilyPlan[] = (['v4', 'v6'] as const).map((f) => planFamily(desired[f], observedOf(previous[f]), own, previous[f]));
  previous = desired;
  const count = byKind.get(kind) ?? { changes: 0, withRules: 0, setOnly: 0, nothing: 0, owners: new Map() };
  byKind.set(kind, count);
  count.changes++;
  const rules = plans.some((p) => p.iptablesRestore !== '');
  const sets = plans.some((p) => p.ipsetRestore !== '' || p.ipsetAfterRules !== '' || p.ipsetDestroy !== '');
  if (rules) {
    count.withRules++;
    const owners = new Set(
      plans.flatMap((p) => p.changes.filter((c) => c.object !== 'set').map((c) => (c.object === 'hook' ? 'hooks' : ownerKind(c.owner)))),
    );
    for (const o of owners) count.owners.set(o, (count.owners.get(o) ?? 0) + 1);
  } else if (sets) count.setOnly++;
  else count.nothing++;
}

const total = [...byKind.values()].reduce((n, c) => n + c.withRules, 0);
console.log(`## iptables transactions per ${args.changes} churn changes: tier ${args.tier}, seed ${args.seed}, node ${args.node}`);
console.log('');
console.log(`Command: node --import ./scripts/register-ts.mjs scripts/bench-chain-writes.ts ${process.argv.slice(2).join(' ')}`.trim());
console.log('');
console.log(
  '| change | changes | with an iptables-restore | set members only (netlink, no process) | nothing to write | chains written, by owner (changes) |',
);
console.log('|---|---|---|---|---|---|');
for (const [kind, c] of byKind)
  console.log(
    `| ${kind} | ${c.changes} | ${c.withRules} | ${c.setOnly} | ${c.nothing} | ${[...c.owners].map(([o, n]) => `${o} ${n}`).join(', ') || '–'} |`,
  );
console.log('');
console.log(`iptables-restore runs per ${args.changes} changes (one change per sync, the most the daemon writes): ${total}.`);
