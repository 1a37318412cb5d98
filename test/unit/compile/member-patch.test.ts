// A one-pod change to a set of thousands: the compiler patches the members it had, the planner and the
// tracker follow the change it recorded. None of them compares, filters or re-sorts the whole set; the one
// walk left is the copy that gives the new compile its own member list.

import { Compiler } from '../../../src/compile/index.js';
import type { ClusterSnapshot, IpSet } from '../../../src/model/index.js';
import { expectedObserved, planFamily } from '../../../src/plan/index.js';
import { ingress, makeNamespace, makePod, makePolicy, nsPeer, onNode, rule, sel, settings } from '../../../test/helpers/builders.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const PEERS = 20_000;
const ipOf = (i: number): string => `10.1.${i >> 8}.${i & 255}`;

/** The members list with every indexed read counted. */
function counted(members: readonly string[]): { members: readonly string[]; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(members, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { members: proxy, reads: () => reads };
}

describe('a one-pod change to a large namespace-selector set', () => {
  const peers = Array.from({ length: PEERS }, (_, i) => makePod('big', `p-${i}`, ipOf(i), onNode('node-2')));
  const snapshot = (pods: readonly ReturnType<typeof makePod>[]): ClusterSnapshot => ({
    nodes: [],
    namespaces: [makeNamespace('app'), makeNamespace('big')],
    pods: [makePod('app', 'web', '10.244.1.5'), ...pods],
    policies: [makePolicy('app', 'from-big', ingress(rule([nsPeer(sel({ 'kubernetes.io/metadata.name': 'big' }))])))],
  });

  it.each([
    {
      name: 'a pod replaced with a new address',
      edit: (pods: typeof peers) => pods.map((p, i) => (i === 7_000 ? { ...p, ips: ['10.9.0.1'] } : p)),
      added: ['10.9.0.1'],
      removed: [ipOf(7_000)],
    },
    { name: 'a pod deleted', edit: (pods: typeof peers) => pods.filter((_, i) => i !== 12_345), added: [], removed: [ipOf(12_345)] },
    {
      name: 'a pod relabelled (same address)',
      edit: (pods: typeof peers) => pods.map((p, i) => (i === 3 ? { ...p, labels: { v: '2' } } : p)),
      added: [],
      removed: [],
    },
  ])('$name: the previous members are read at most once each, and the plan is that change', ({ edit, added, removed }) => {
    const compiler = new Compiler();
    const before = compiler.compile(snapshot(peers), settings()).desired.v4;
    const programmed = expectedObserved(before);
    const big = before.ipsets.find((s) => s.members.length === PEERS)!;
    expect(big).toBeDefined();
    const watched = counted(big.members);
    Object.defineProperty(big, 'members', { value: watched.members });

    const after = compiler.compile(snapshot(edit(peers)), settings()).desired.v4;
    const plan = planFamily(after, programmed, OWN, before);
    expect(watched.reads()).toBeLessThanOrEqual(PEERS + 100);
    const changed = after.ipsets.find((s: IpSet) => s.name === big.name)!;
    // The tracker edits the programmed members it already holds by the same change: the new list is not sorted again.
    const watchedAfter = counted(changed.members);
    Object.defineProperty(changed, 'members', { value: watchedAfter.members });
    const tracked = expectedObserved(after).ipsets.get(changed.name)!.members;
    expect(watchedAfter.reads()).toBe(0);
    expect(tracked).toEqual([...changed.members].sort());
    const lines = plan.ipsetRestore.split('\n');
    expect(lines.filter((l) => l.startsWith(`add ${changed.name} `))).toEqual(added.map((ip) => `add ${changed.name} ${ip}`));
    expect(lines.filter((l) => l.startsWith(`del ${changed.name} `))).toEqual(removed.map((ip) => `del ${changed.name} ${ip}`));
  });
});
