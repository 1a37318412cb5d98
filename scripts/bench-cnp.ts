// ClusterNetworkPolicy cost on a large cluster: the generated tier plus 100 ClusterNetworkPolicies
// (scripts/bench-cnp-policies.ts). Prints the full compile with and without them, one-change recomputes
// (a priority change, a rule swap, a namespace relabel) through the long-lived Compiler, the size of what
// is programmed, and the rules a connection's first packet is checked against at most (FORWARD: pod to
// pod on this node; INPUT: pod to this node). Pure: no kernel (first apply vs floor: scripts/bench-cnp-kernel.ts).
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-cnp.ts [--tier large] [--runs 10] [--seed 1]

import { Compiler, compile } from '../src/compile/index.js';
import { generateCluster } from './bench-lib/generator.js';
import { firstPacketBound } from './bench-lib/first-packet.js';
import type { Chain, ClusterSnapshot, FamilyState } from '../src/model/index.js';
import { generateClusterPolicies } from './bench-cnp-policies.js';
import { parseBenchFlags } from './lib/bench-args.js';
import { median } from './lib/bench-stats.js';

const { tier, runs, seed } = parseBenchFlags(process.argv.slice(2), { runs: 10 }, []);

const { snapshot: base, settings } = generateCluster({ tier, seed, node: 'node-1' });
const cnps = generateClusterPolicies(base, seed);
const withCnps: ClusterSnapshot = { ...base, clusterPolicies: cnps };

const time = (f: () => void): number => {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
const row = (what: string, xs: readonly number[]) =>
  console.log(`${what.padEnd(48)} median ${median(xs).toFixed(1)} ms over ${xs.length} runs`);

for (let i = 0; i < 3; i++) compile(withCnps, settings);
row(
  `full compile, ${tier} tier, no CNPs`,
  Array.from({ length: runs }, () => time(() => compile(base, settings))),
);
row(
  `full compile, ${tier} tier + 100 CNPs`,
  Array.from({ length: runs }, () => time(() => compile(withCnps, settings))),
);

const changes: [string, (s: ClusterSnapshot, i: number) => ClusterSnapshot][] = [
  [
    'recompute: one CNP priority changed',
    (s, i) => ({
      ...s,
      clusterPolicies: s.clusterPolicies!.map((c, j) => (j === 5 ? { ...c, priority: (c.priority + 1 + i) % 1001 } : c)),
    }),
  ],
  [
    'recompute: one CNP rule order swapped',
    (s) => ({ ...s, clusterPolicies: s.clusterPolicies!.map((c, j) => (j === 7 ? { ...c, ingress: [...c.ingress].reverse() } : c)) }),
  ],
  [
    'recompute: one namespace relabelled',
    (s, i) => ({ ...s, namespaces: s.namespaces.map((n, j) => (j === 3 ? { ...n, labels: { ...n.labels, bench: String(i) } } : n)) }),
  ],
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
const hostChains = out.chains.filter((c) => c.role.kind === 'host-workload');
console.log(
  `programmed: ${out.chains.length} chains (${cnpChains.length} CNP chains, ${cnpChains.reduce((n, c) => n + c.rules.length, 0)} CNP rules; ${hostChains.length} pod-to-node chains), ${out.ipsets.length} sets`,
);

// First packet, worst local pod: the same static bound as the kernel bench (scripts/bench-lib/first-packet.ts).
const before = firstPacketBound(compile(base, settings).desired.v4);
const after = firstPacketBound(out);
const sideText = (s: ReturnType<typeof firstPacketBound>['egress']) =>
  s ? `${s.total} (dispatch ${s.dispatch}, workload ${s.workload}, ${s.policyChains} policy/CNP chains with ${s.policies} rules)` : '–';
console.log(
  `first packet, FORWARD, no CNPs: at most ${before.total} rules (egress ${sideText(before.egress)}; ingress ${sideText(before.ingress)})`,
);
console.log(
  `first packet, FORWARD, 100 CNPs: at most ${after.total} rules (egress ${sideText(after.egress)}; ingress ${sideText(after.ingress)})`,
);
const input = inputBound(out);
console.log(
  `first packet, INPUT (pod to this node), 100 CNPs: at most ${input.total} rules (nf-INPUT ${input.entry}, dispatch ${input.dispatch}, pod chain ${input.workload}, ${input.chains} CNP chains with ${input.rules} rules; worst pod ${input.pod})`,
);

/** The same bound for INPUT: nf-INPUT, the host dispatch scan to the pod, its nf-fh chain and every CNP chain it jumps to. */
function inputBound(state: FamilyState): {
  total: number;
  entry: number;
  dispatch: number;
  workload: number;
  chains: number;
  rules: number;
  pod: string;
} {
  const byName = new Map<string, Chain>(state.chains.map((c) => [c.name, c]));
  const entry = state.chains.find((c) => c.name === `${settings.chainPrefix}INPUT`)?.rules.length ?? 0;
  const scan = (name: string, ip: string): number => {
    // Rules checked from the host dispatch root down to the goto naming `name` (leaves list /32s in order).
    let n = 0;
    let chain = byName.get(`${settings.chainPrefix}to-host-dispatch`);
    while (chain) {
      let next: Chain | undefined;
      for (const r of chain.rules) {
        n++;
        if (r.action.kind !== 'goto') continue;
        if (r.action.target === name) return n;
        const net = r.match.find((m) => m.kind === 'src-net');
        if (net && net.kind === 'src-net' && inCidr(ip, net.cidr)) {
          next = byName.get(r.action.target);
          break;
        }
      }
      chain = next;
    }
    return n;
  };
  let worst = { total: 0, entry, dispatch: 0, workload: 0, chains: 0, rules: 0, pod: '–' };
  for (const c of state.chains) {
    if (c.role.kind !== 'host-workload') continue;
    const jumps = c.rules.flatMap((r) => (r.action.kind === 'jump' ? [byName.get(r.action.target)!] : []));
    const rules = jumps.reduce((n, j) => n + j.rules.length, 0);
    const dispatch = scan(c.name, c.role.ip);
    const total = entry + dispatch + c.rules.length + rules;
    if (total > worst.total) worst = { total, entry, dispatch, workload: c.rules.length, chains: jumps.length, rules, pod: c.role.pod };
  }
  return worst;
}

function inCidr(ip: string, cidr: string): boolean {
  const [net, bits] = cidr.split('/');
  const toInt = (a: string) => a.split('.').reduce((n, o) => (n << 8) + Number(o), 0) >>> 0;
  const len = Number(bits ?? 32);
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0;
  return (toInt(ip) & mask) >>> 0 === (toInt(net!) & mask) >>> 0;
}
