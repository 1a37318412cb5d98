// The inspect report as text: one block per local pod (dispatch → workload chain → policies → rules),
// then the problems. Every line fits 80 columns.

import { wrap } from '../trace/index.js';
import type {
  InspectProblem,
  InspectReport,
  LearnedAddress,
  LearnedView,
  PeerView,
  PodView,
  PolicyRuleView,
  PolicyView,
  SetView,
  WorkloadView,
} from './report.js';

export interface FormatOptions {
  /** Print policy blocks (with the pods using them) instead of pod blocks: `--policy`. */
  readonly byPolicy?: boolean;
}

export function formatReport(report: InspectReport, opts: FormatOptions = {}): string {
  const out: string[] = [];
  const hook = report.hookPosition !== undefined ? `hook at FORWARD #${report.hookPosition}` : 'NO hook in FORWARD';
  out.push(`netfence: ${count(report.pods.length, 'local pod')}, ${count(report.policies.length, 'policy chain')}`);
  out.push(...wrap(`${hook}, FORWARD policy ${report.forwardPolicy}`, '          '));
  if (report.failClosedCidrs.length > 0)
    out.push(...wrap(`unknown addresses in ${report.failClosedCidrs.join(', ')} are dropped (fail-closed)`, '          '));
  const byChain = new Map(report.policies.map((p) => [p.chain, p]));
  if (opts.byPolicy) {
    for (const p of report.policies) out.push('', ...policyBlock(p, ''));
  } else {
    for (const pod of report.pods) out.push('', ...podBlock(pod, byChain));
  }
  out.push('', ...problemsBlock(report.problems));
  return `${out.join('\n')}\n`;
}

function podBlock(pod: PodView, policies: ReadonlyMap<string, PolicyView>): string[] {
  const out = wrap(`${pod.pod ?? '(pod name unknown)'} (${pod.ip})`, '', '  ');
  for (const dir of ['egress', 'ingress'] as const) {
    const path = pod.dispatch[dir];
    if (path.length === 0) continue;
    const steps = path.map((r) => `${r.chain} #${r.ruleIndex}`).join(' -> ');
    const target = pod[dir]?.chain ?? '?';
    out.push(...wrap(`${steps} -> ${target}`, `  ${`${dir === 'egress' ? 'from' : 'to'}:`.padEnd(9)}`, ' '.repeat(11)));
  }
  for (const dir of ['ingress', 'egress'] as const) {
    const w = pod[dir];
    if (!w) {
      out.push(`  ${dir.padEnd(8)} no workload chain found`);
      continue;
    }
    out.push(...wrap(workloadSummary(w, dir), `  ${dir.padEnd(8)} `, '           '));
    w.policyChains.forEach((chain) => {
      const p = policies.get(chain);
      if (p) out.push(...policyBlock(p, '    ', false));
    });
  }
  if (pod.toNode) {
    // INPUT: only ClusterNetworkPolicy egress tiers; NetworkPolicy always allows a pod its own node.
    const n = pod.toNode.policies.length;
    out.push(
      ...wrap(
        `ClusterNetworkPolicy egress (${n} chain${n === 1 ? '' : 's'}, ${pod.toNode.chain}); NetworkPolicy always allows`,
        '  to node  ',
        '           ',
      ),
    );
    pod.toNode.policyChains.forEach((chain) => {
      const p = policies.get(chain);
      if (p) out.push(...wrap(`${p.policy} egress (${p.chain})`, '    ', '      '));
    });
  }
  return out;
}

function workloadSummary(w: WorkloadView, dir: 'ingress' | 'egress'): string {
  if (!w.isolated) return `not isolated: all ${dir} allowed (${w.chain})`;
  const n = w.policies.length;
  const dropped = w.droppedPackets !== undefined ? `; ${w.droppedPackets} packets dropped` : '';
  return n === 0
    ? `isolated, no policy allows anything (${w.chain})${dropped}`
    : `isolated: allowed only by ${n} polic${n === 1 ? 'y' : 'ies'} (${w.chain})${dropped}`;
}

function policyBlock(p: PolicyView, pad: string, withUsers = true): string[] {
  const out = wrap(`${p.policy} ${p.direction} (${p.chain})`, `${pad}policy `, `${pad}       `);
  if (withUsers) out.push(...wrap(p.usedBy.length > 0 ? p.usedBy.join(', ') : 'no local pod', `${pad}  used by: `, `${pad}           `));
  if (withUsers && p.allowedPackets !== undefined) {
    out.push(
      ...wrap(
        `${p.allowedPackets} allowed, ${p.deniedPackets ?? 0} dropped at the pods it isolates`,
        `${pad}  packets: `,
        `${pad}           `,
      ),
    );
  }
  if (p.note) out.push(...wrap(p.note, `${pad}  note: `, `${pad}        `));
  for (const r of p.rules) {
    const head = `${pad}  ${r.rule.padEnd(9)} `;
    const hang = ' '.repeat(head.length);
    out.push(...wrap(`${ruleText(r, p.direction)}${r.packets !== undefined ? ` (${r.packets} packets)` : ''}`, head, hang));
    if (r.peer.kind === 'set') out.push(...wrap(membersText(r.peer), `${hang}  `, `${hang}    `));
    if (r.peer.kind === 'block') {
      if (r.peer.cidrs) out.push(...wrap(membersText(r.peer.cidrs), `${hang}  `, `${hang}    `));
      out.push(...wrap(`except ${membersText(r.peer.excepts)}`, `${hang}  `, `${hang}    `));
    }
    if (r.namedPorts) out.push(...wrap(membersText(r.namedPorts), `${hang}  `, `${hang}    `));
    if (r.learned) out.push(...wrap(learnedText(r.learned), `${hang}  `, `${hang}    `));
  }
  return out;
}

/** `learned by x/a for good.example, *.cdn.example: 198.51.100.10 (good.example, 17 s left)`, or `nothing learned yet`. */
function learnedText(l: LearnedView): string {
  const head = `learned by ${l.pod} for ${l.names.join(', ')}`;
  if (l.addresses.length === 0) return `${head}: nothing learned yet`;
  const one = (a: LearnedAddress): string => {
    const notes = [a.name, a.remainingSeconds !== undefined ? `${a.remainingSeconds} s left` : undefined].filter((x) => x !== undefined);
    return notes.length > 0 ? `${a.address} (${notes.join(', ')})` : a.address;
  };
  return `${head}: ${l.addresses.map(one).join(', ')}`;
}

function ruleText(r: PolicyRuleView, dir: 'ingress' | 'egress'): string {
  const proto = r.protocol === 'any' ? 'any protocol' : r.protocol;
  const ports =
    r.ports === 'any' ? 'all ports' : r.ports === 'named' && r.namedPorts ? `named port (set ${r.namedPorts.set})` : `port ${r.ports}`;
  return `${proto} ${ports} ${dir === 'ingress' ? 'from' : 'to'} ${peerText(r.peer)}`;
}

function peerText(p: PeerView): string {
  switch (p.kind) {
    case 'any':
      return 'anywhere';
    case 'cidr':
      return `${p.negate ? 'not ' : ''}${p.cidr}`;
    case 'set':
      return `set ${p.set}`;
    case 'block':
      return blockText(p.cidrs, p.excepts);
  }
}

/** `10.0.0.0/8 except 12 ranges`: a one-member set by its member, a larger one by its name. */
function blockText(cidrs: SetView | undefined, excepts: SetView): string {
  const inside = !cidrs ? 'anywhere' : cidrs.members === 1 && cidrs.sample.length === 1 ? cidrs.sample[0]! : `set ${cidrs.set}`;
  const left = excepts.members === 1 && excepts.sample.length === 1 ? excepts.sample[0]! : count(excepts.members, 'range');
  return `${inside} except ${left} (set ${excepts.set})`;
}

function membersText(s: SetView): string {
  if (s.type === undefined) return `${s.set}: MISSING from the ipset dump`;
  if (s.members === 0) return `${s.type}, empty`;
  const more = s.members > s.sample.length ? ', …' : '';
  return `${s.type}, ${count(s.members, 'member')}: ${s.sample.join(', ')}${more}`;
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

function problemsBlock(problems: readonly InspectProblem[]): string[] {
  if (problems.length === 0) return ['problems: none'];
  const out = [`problems: ${problems.length}`];
  for (const p of problems) {
    const where = p.chain ? `${p.chain}${p.ruleIndex !== undefined ? ` #${p.ruleIndex}` : ''}: ` : '';
    out.push(...wrap(`${where}${p.message}`, `  - [${p.kind}] `, '    '));
    if (p.text) out.push(...wrap(p.text, '      ', '        '));
  }
  return out;
}
