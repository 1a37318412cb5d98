// ClusterNetworkPolicy cost on a large cluster: the generated tier plus 100 ClusterNetworkPolicies (70 Admin,
// 30 Baseline; namespace and pod subjects; namespace, pod, networks and named-port rules; Deny/Accept/Pass).
// Prints the full compile with and without them, one-change recomputes (a priority change, a rule swap, a
// namespace relabel) through the long-lived Compiler, and the size of what is programmed. Pure: no kernel
// (the first-apply-vs-floor row of issue 16 is not measured here).
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-cnp.ts [--tier large] [--runs 10] [--seed 1]

import { Compiler, compile } from '../src/compile/index.js';
import { generateCluster, TIERS, type Tier } from './bench-lib/generator.js';
import { mulberry32 } from './bench-lib/prng.js';
import type { ClusterNetworkPolicy, ClusterSnapshot, CnpAction, CnpRule, LabelSelector } from '../src/model/index.js';

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string): string => {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
};
const tier = flag('--tier', 'large') as Tier;
if (!TIERS.includes(tier)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
const runs = Math.max(1, Number(flag('--runs', '10')));
const seed = Number(flag('--seed', '1'));

const { snapshot: base, settings } = generateCluster({ tier, seed, node: 'node-1' });
const rng = mulberry32(seed + 16);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
const nsSel = (name: string): LabelSelector => ({ matchLabels: { 'kubernetes.io/metadata.name': name }, matchExpressions: [] });
const ALL: LabelSelector = { matchLabels: {}, matchExpressions: [] };
const names = base.namespaces.map((n) => n.name);
const apps = [...new Set(base.pods.map((p) => p.labels['app']).filter((a): a is string => a !== undefined))];

function rule(i: number): CnpRule {
  const action: CnpAction = pick(['Accept', 'Deny', 'Deny', 'Pass']);
  const kind = i % 4;
  if (kind === 0) return { name: `r${i}`, action, peers: [{ kind: 'namespaces', namespaceSelector: nsSel(pick(names)) }] };
  if (kind === 1) return { name: `r${i}`, action, peers: [{ kind: 'pods', namespaceSelector: ALL, podSelector: { matchLabels: { app: pick(apps) }, matchExpressions: [] } }], protocols: [{ kind: 'protocol', protocol: 'TCP', ports: { from: 8000, to: 8100 } }] };
  if (kind === 2) return { name: `r${i}`, action: 'Deny', peers: [{ kind: 'networks', cidrs: [`169.254.${i % 250}.0/24`, '192.0.2.0/24'] }] };
  return { name: `r${i}`, action, peers: [{ kind: 'namespaces', namespaceSelector: nsSel(pick(names)) }], protocols: [{ kind: 'named', name: 'http' }, { kind: 'protocol', protocol: 'UDP', ports: { from: 53, to: 53 } }] };
}

const cnps: ClusterNetworkPolicy[] = Array.from({ length: 100 }, (_, i) => ({
  name: `cnp-${String(i).padStart(3, '0')}`,
  tier: i < 70 ? 'Admin' : 'Baseline',
  priority: Math.floor(rng.next() * 1000),
  subject: i % 3 === 0 ? { kind: 'namespaces', namespaceSelector: nsSel(pick(names)) } : i % 3 === 1 ? { kind: 'namespaces', namespaceSelector: ALL } : { kind: 'pods', namespaceSelector: ALL, podSelector: { matchLabels: { app: pick(apps) }, matchExpressions: [] } },
  ingress: Array.from({ length: 3 }, (_, j) => rule(i * 10 + j)),
  egress: Array.from({ length: 3 }, (_, j) => rule(i * 10 + 5 + j)),
}));
const withCnps: ClusterSnapshot = { ...base, clusterPolicies: cnps };

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const time = (f: () => void): number => {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
const row = (what: string, xs: readonly number[]) => console.log(`${what.padEnd(48)} median ${median(xs).toFixed(1)} ms over ${xs.length} runs`);

for (let i = 0; i < 3; i++) compile(withCnps, settings);
row(`full compile, ${tier} tier, no CNPs`, Array.from({ length: runs }, () => time(() => compile(base, settings))));
row(`full compile, ${tier} tier + 100 CNPs`, Array.from({ length: runs }, () => time(() => compile(withCnps, settings))));

const changes: [string, (s: ClusterSnapshot, i: number) => ClusterSnapshot][] = [
  ['recompute: one CNP priority changed', (s, i) => ({ ...s, clusterPolicies: s.clusterPolicies!.map((c, j) => (j === 5 ? { ...c, priority: (c.priority + 1 + i) % 1001 } : c)) })],
  ['recompute: one CNP rule order swapped', (s) => ({ ...s, clusterPolicies: s.clusterPolicies!.map((c, j) => (j === 7 ? { ...c, ingress: [...c.ingress].reverse() } : c)) })],
  ['recompute: one namespace relabelled', (s, i) => ({ ...s, namespaces: s.namespaces.map((n, j) => (j === 3 ? { ...n, labels: { ...n.labels, bench: String(i) } } : n)) })],
];
for (const [what, change] of changes) {
  const compiler = new Compiler();
  let current = withCnps;
  compiler.compile(current, settings);
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    current = change(current, i);
    const snap = current;
    xs.push(time(() => compiler.compile(snap, settings)));
  }
  row(what, xs);
}
const out = compile(withCnps, settings).desired.v4;
const cnpChains = out.chains.filter((c) => c.role.kind === 'cluster-policy');
console.log(`programmed: ${out.chains.length} chains (${cnpChains.length} CNP chains, ${cnpChains.reduce((n, c) => n + c.rules.length, 0)} CNP rules), ${out.ipsets.length} sets`);
