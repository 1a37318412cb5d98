// Audit mode's first-packet cost (docs/audit.md): the generated tier, then the same cluster with a
// default-deny (ingress and egress) annotated `netfence.io/mode: audit` in one namespace that has pods on the
// measured node, then with it enforced. For a pod the audited policy does not select, and for one it
// selects, the static bound of scripts/bench-lib/first-packet.ts (every rule of the pod's dispatch path,
// workload chain and each chain it jumps to) per side, and whether the unselected pod's chains are the
// very same rules as without the annotation. Also the full compile time with and without it. Pure: no kernel.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-audit.ts [--tier large] [--runs 10] [--seed 1]

import { compile } from '../src/compile/index.js';
import type { Chain, ClusterSnapshot, FamilyState, NetworkPolicy } from '../src/model/index.js';
import { generateCluster } from './bench-lib/generator.js';
import { firstPacketBound } from './bench-lib/first-packet.js';
import { parseBenchFlags } from './lib/bench-args.js';
import { median } from './lib/bench-stats.js';

const { tier, runs, seed } = parseBenchFlags(process.argv.slice(2), { runs: 10 }, []);
const { snapshot: base, settings } = generateCluster({ tier, seed, node: 'node-1' });

const local = base.pods.filter((p) => p.nodeName === settings.nodeName && !p.hostNetwork && p.ips.length > 0);
const namespace = local[0]!.namespace;
const selected = local.find((p) => p.namespace === namespace)!;
const unselected = local.find((p) => p.namespace !== namespace)!;
const deny = (audit: boolean): NetworkPolicy => ({
  namespace,
  name: 'bench-default-deny',
  podSelector: { matchLabels: {}, matchExpressions: [] },
  policyTypes: ['Ingress', 'Egress'],
  ...(audit ? { audit: true } : {}),
});
const audited: ClusterSnapshot = { ...base, policies: [...base.policies, deny(true)] };
const enforced: ClusterSnapshot = { ...base, policies: [...base.policies, deny(false)] };

const time = (f: () => void): number => {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
for (let i = 0; i < 3; i++) compile(audited, settings);
for (const [what, snap] of [
  ['no audited policy', base],
  ['one audited default-deny', audited],
] as const) {
  const xs = Array.from({ length: runs }, () => time(() => compile(snap, settings)));
  console.log(`full compile, ${tier} tier, ${what}`.padEnd(60), `median ${median(xs).toFixed(1)} ms over ${runs} runs`);
}

const states = {
  none: compile(base, settings).desired.v4,
  audited: compile(audited, settings).desired.v4,
  enforced: compile(enforced, settings).desired.v4,
};

/** Rules of the pod's workload chain and of every chain it jumps to, per direction (the dispatch path is the same in all three). */
function podBound(state: FamilyState, pod: string, direction: 'ingress' | 'egress'): { total: number; chains: string } {
  const byName = new Map(state.chains.map((c) => [c.name, c]));
  const wl = state.chains.find((c) => c.role.kind === 'workload' && c.role.pod === pod && c.role.direction === direction)!;
  const targets = wl.rules.flatMap((r) => (r.action.kind === 'jump' ? [byName.get(r.action.target)!] : []));
  const jumped = targets.reduce((n, c) => n + c.rules.length, 0);
  return {
    total: wl.rules.length + jumped,
    chains: `workload ${wl.rules.length} + ${targets.length} jumps into chains of ${jumped} rules`,
  };
}
const sameRules = (a: Chain | undefined, b: Chain | undefined): boolean => JSON.stringify(a?.rules) === JSON.stringify(b?.rules);
const wlOf = (state: FamilyState, pod: string) => state.chains.filter((c) => c.role.kind === 'workload' && c.role.pod === pod);

for (const [label, pod] of [
  ['not selected', `${unselected.namespace}/${unselected.name}`],
  ['selected', `${selected.namespace}/${selected.name}`],
] as const) {
  for (const direction of ['ingress', 'egress'] as const) {
    const row = (Object.keys(states) as (keyof typeof states)[])
      .map((k) => {
        const b = podBound(states[k], pod, direction);
        return `${k} ${b.total} (${b.chains})`;
      })
      .join('; ');
    console.log(`first packet, pod ${label} (${pod}), ${direction}: at most ${row}`);
  }
  const same = wlOf(states.none, pod).every((c, i) => sameRules(c, wlOf(states.audited, pod)[i]));
  console.log(`  ${pod}: workload chains with the audited policy ${same ? 'identical to' : 'DIFFERENT from'} those without it`);
}
const bound = (s: FamilyState) => firstPacketBound(s).total;
console.log(
  `first packet, worst local pod pair (static bound): none ${bound(states.none)}, audited ${bound(states.audited)}, enforced ${bound(states.enforced)} rules`,
);
