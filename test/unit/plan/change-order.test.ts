// Where the planner puts a set's member changes (docs/dataplane.md, "Order of a change"): a change may never pass
// through a state that allows what neither the old nor the new state allows. When the rules change too, what
// narrows goes before them and what widens after them; a set matched with `! --match-set` (an ipBlock's
// excepts) narrows by gaining members. test/kernel/change-order.test.ts samples the real kernel between steps.

import { Compiler } from '../../../src/compile/index.js';
import type { ClusterSnapshot, FamilyState, IpSet } from '../../../src/model/index.js';
import { expectedObserved, planFamily, type FamilyPlan, type ObservedFamily } from '../../../src/plan/index.js';
import type { IpsetOp } from '../../../src/render/index.js';
import {
  blockPeer,
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  onNode,
  podPeer,
  rule,
  sel,
  settings,
  tcp,
} from '../../helpers/builders.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };

function cluster(peers: { p1: boolean; p2: boolean }, port: number): ClusterSnapshot {
  return {
    nodes: [],
    namespaces: [makeNamespace('app')],
    pods: [
      makePod('app', 'web', '10.244.1.5', labels({ app: 'web' })),
      makePod('app', 'p1', '10.1.0.1', onNode('node-2'), labels(peers.p1 ? { role: 'peer' } : {})),
      makePod('app', 'p2', '10.1.0.2', onNode('node-2'), labels(peers.p2 ? { role: 'peer' } : {})),
    ],
    policies: [
      makePolicy('app', 'peers', ingress(rule([podPeer(sel({ role: 'peer' }))], [tcp(port)]))),
      makePolicy('app', 'block', ingress(rule([blockPeer('10.0.0.0/8', '10.9.0.0/16')], [tcp(9000)]))),
    ],
  };
}

const compile = (c: ClusterSnapshot): FamilyState => new Compiler().compile(c, settings()).desired.v4;
const peerSet = (s: FamilyState): IpSet => s.ipsets.find((x) => x.description.includes('role'))!;
/** `op set member` for every member op, in order. */
const lines = (ops: readonly IpsetOp[]): string[] =>
  ops.flatMap((o) => (o.op === 'add' || o.op === 'del' ? o.members.map((m) => `${o.op} ${o.name} ${m}`) : []));

function plan(before: ClusterSnapshot, after: ClusterSnapshot): { plan: FamilyPlan; set: string } {
  const old = compile(before);
  const desired = compile(after);
  return { plan: planFamily(desired, expectedObserved(old), OWN), set: peerSet(desired).name };
}

describe('the order of a change', () => {
  it('only a set changes: every member change before (there is no rule step), and no process for iptables', () => {
    const { plan: p, set } = plan(cluster({ p1: true, p2: false }, 80), cluster({ p1: false, p2: true }, 80));
    expect(p.iptablesRestore).toBe('');
    expect(lines(p.ipsetOps)).toEqual([`del ${set} 10.1.0.1`, `add ${set} 10.1.0.2`]);
    expect(p.ipsetAfterOps).toEqual([]);
  });

  it('rules change and the set gains a member: the add waits until after the rules', () => {
    // Old: peers may reach port 80. New: peers (now p2 too) may reach port 443 only. Adding p2 before the rules
    // would let p2 reach port 80, which neither state allows.
    const { plan: p, set } = plan(cluster({ p1: true, p2: false }, 80), cluster({ p1: true, p2: true }, 443));
    expect(p.iptablesRestore).not.toBe('');
    expect(lines(p.ipsetOps)).toEqual([]);
    expect(lines(p.ipsetAfterOps)).toEqual([`add ${set} 10.1.0.2`]);
    expect(p.ipsetAfterRules).toMatch(new RegExp(`^create ${set} hash:ip .*\nadd ${set} 10.1.0.2\n$`));
  });

  it('rules change and the set loses a member: the delete goes before the rules', () => {
    // Removing p1 after the rules would let p1 reach port 443, which neither state allows.
    const { plan: p, set } = plan(cluster({ p1: true, p2: true }, 80), cluster({ p1: false, p2: true }, 443));
    expect(lines(p.ipsetOps)).toEqual([`del ${set} 10.1.0.1`]);
    expect(lines(p.ipsetAfterOps)).toEqual([]);
  });

  it('a negated set (ipBlock excepts) narrows by gaining: its repair add goes before the rules, its delete after', () => {
    const old = compile(cluster({ p1: true, p2: false }, 80));
    const desired = compile(cluster({ p1: true, p2: false }, 443));
    const excepts = desired.ipsets.find((s) => s.negated === true)!;
    expect(excepts.members).toEqual(['10.9.0.0/16']);
    // Someone swapped the except's member for another by hand: the repair adds ours back and takes theirs out.
    const programmed = expectedObserved(old);
    const ipsets = new Map(programmed.ipsets);
    ipsets.set(excepts.name, { ...programmed.ipsets.get(excepts.name)!, members: ['10.8.0.0/16'] });
    const observed: ObservedFamily = { ...programmed, ipsets };
    const p = planFamily(desired, observed, OWN);
    expect(p.iptablesRestore).not.toBe('');
    expect(lines(p.ipsetOps)).toEqual([`add ${excepts.name} 10.9.0.0/16`]);
    expect(lines(p.ipsetAfterOps)).toEqual([`del ${excepts.name} 10.8.0.0/16`]);
  });

  it('a large rewrite with rules changing is split the same way rather than swapped', () => {
    const many = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) =>
        makePod('app', `q${from + i}`, `10.2.${(from + i) >> 8}.${(from + i) & 255}`, onNode('node-2'), labels({ role: 'peer' })),
      );
    const base = cluster({ p1: true, p2: false }, 80);
    const before = { ...base, pods: [...base.pods, ...many(100, 0)] };
    const after = { ...cluster({ p1: true, p2: false }, 443), pods: [...base.pods, ...many(100, 100)] };
    const { plan: p, set } = plan(before, after);
    expect(p.ipsetOps.some((o) => o.op === 'swap')).toBe(false);
    expect(lines(p.ipsetOps).every((l) => l.startsWith(`del ${set} `))).toBe(true);
    expect(lines(p.ipsetAfterOps).every((l) => l.startsWith(`add ${set} `))).toBe(true);
    expect(lines(p.ipsetOps)).toHaveLength(100);
    expect(lines(p.ipsetAfterOps)).toHaveLength(100);
    // Without a rule change the same rewrite is one atomic swap.
    const { plan: same } = plan(before, { ...before, pods: [...base.pods, ...many(100, 100)] });
    expect(same.ipsetOps.some((o) => o.op === 'swap')).toBe(true);
  });
});
