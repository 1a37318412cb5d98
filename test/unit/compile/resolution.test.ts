// Resolution keeps, per local pod, the NetworkPolicies and ClusterNetworkPolicies that select it, in the
// order they are evaluated. Checked against its definition (an object selects a pod when the pod is among
// its targets; NetworkPolicies by name, CNPs Admin before Baseline, then priority, then name) after every
// step of a random sequence, and that a step leaves the lists of the pods it did not touch as they were.

import { EndpointResolver, type Selecting } from '../../../src/compile/resolution.js';
import type { ClusterNetworkPolicy, NetworkPolicy, Pod } from '../../../src/model/index.js';
import { makePod, makePolicy, rule, sel, tcp, types } from '../../helpers/builders.js';
import { cnp, cRule, networks, nsSubject } from '../../helpers/cnp-builders.js';
import { mulberry32 } from '../../../scripts/bench-lib/prng.js';

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const pods = Array.from({ length: 12 }, (_, i) => makePod('a', `p${i}`, `10.244.1.${i + 1}`));

describe('endpoint resolution', () => {
  it('lists NetworkPolicies by name and ClusterNetworkPolicies by tier, priority, name, whatever order they arrive in', () => {
    const [p0, p1] = pods;
    const np = (name: string): NetworkPolicy => makePolicy('a', name);
    const [zeta, alpha, mid] = [np('zeta'), np('alpha'), np('mid')];
    const all = nsSubject(sel());
    const baseline1 = cnp('b-first', 'Baseline', 1, all, {});
    const admin9 = cnp('z-admin', 'Admin', 9, all, {});
    const admin2b = cnp('b-admin', 'Admin', 2, all, {});
    const admin2a = cnp('a-admin', 'Admin', 2, all, {});
    const resolver = new EndpointResolver();
    resolver.update(
      [
        { item: zeta, targets: [p0!, p1!] },
        { item: alpha, targets: [p1!] },
        { item: mid, targets: [p0!, p1!] },
      ],
      [baseline1, admin9, admin2b, admin2a].map((item) => ({ item, targets: [p0!] })),
    );
    expect(resolver.selectionOf(p0!).policies.map((p) => p.name)).toEqual(['mid', 'zeta']);
    expect(resolver.selectionOf(p1!).policies.map((p) => p.name)).toEqual(['alpha', 'mid', 'zeta']);
    expect(resolver.selectionOf(p0!).clusterPolicies.map((c) => c.name)).toEqual(['a-admin', 'b-admin', 'z-admin', 'b-first']);
    expect(resolver.selectionOf(p1!).clusterPolicies).toEqual([]);
  });

  it("keeps a pod's lists when an edit changes nothing its chains use, and replaces them when it does", () => {
    const [p0] = pods;
    const policy = makePolicy('a', 'web', types('Ingress'));
    const admin = cnp('guard', 'Admin', 5, nsSubject(sel()), { ingress: [cRule('Deny', [networks('10.0.0.0/8')])] });
    const resolver = new EndpointResolver();
    resolver.update([{ item: policy, targets: [p0!] }], [{ item: admin, targets: [p0!] }]);
    const first = resolver.selectionOf(p0!);
    // A rule added to the policy, the CNP's rules reordered: new objects, new target arrays, same chains.
    const edited = { ...policy, ingress: [rule(undefined, [tcp(80)])] };
    const reordered = { ...admin, ingress: [...admin.ingress].reverse() };
    resolver.update([{ item: edited, targets: [p0!] }], [{ item: reordered, targets: [p0!] }]);
    expect(resolver.selectionOf(p0!).policies).toBe(first.policies);
    expect(resolver.selectionOf(p0!).clusterPolicies).toBe(first.clusterPolicies);
    // Egress added to the policy, the CNP moved to Baseline: the pod's chains change, so do its lists.
    resolver.update(
      [{ item: { ...edited, policyTypes: ['Ingress', 'Egress'] }, targets: [p0!] }],
      [{ item: { ...reordered, tier: 'Baseline' }, targets: [p0!] }],
    );
    expect(resolver.selectionOf(p0!).policies[0]).toMatchObject({ name: 'web', ingress: true, egress: true });
    expect(resolver.selectionOf(p0!).clusterPolicies[0]).toMatchObject({ name: 'guard', tier: 'Baseline' });
  });

  it('equals its definition after every step of a random sequence, and leaves untouched pods alone', () => {
    const rng = mulberry32(11);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
    const someOf = (): Pod[] => livePods.filter(() => rng.next() < 0.3);
    let livePods = [...pods];
    let nps: Selecting<NetworkPolicy>[] = Array.from({ length: 6 }, (_, i) => ({ item: makePolicy('a', `np-${i}`), targets: someOf() }));
    const tiers = ['Admin', 'Baseline'] as const;
    let cnps: Selecting<ClusterNetworkPolicy>[] = Array.from({ length: 5 }, (_, i) => ({
      item: cnp(`cnp-${i}`, pick(tiers), i % 3, nsSubject(sel()), {}),
      targets: someOf(),
    }));
    const resolver = new EndpointResolver();
    resolver.update(nps, cnps);
    const tierRank = (c: ClusterNetworkPolicy): number => (c.tier === 'Admin' ? 0 : 1);
    const expected = (pod: Pod) => ({
      policies: nps
        .filter((s) => s.targets.includes(pod))
        .map((s) => s.item)
        .sort((x, y) => byCodePoint(x.name, y.name))
        .map((p) => p.name),
      clusterPolicies: cnps
        .filter((s) => s.targets.includes(pod))
        .map((s) => s.item)
        .sort((x, y) => tierRank(x) - tierRank(y) || x.priority - y.priority || byCodePoint(x.name, y.name))
        .map((c) => `${c.tier}/${c.priority}/${c.name}`),
    });
    for (let step = 0; step < 300; step++) {
      const before = new Map(livePods.map((pod) => [pod, resolver.selectionOf(pod)]));
      // Pods whose selection a step may change: those joining or leaving some object's targets.
      const touched = new Set<Pod>();
      const retarget = <T>(list: Selecting<T>[], i: number, item: T, targets: Pod[]): Selecting<T>[] => {
        const was = list[i]!;
        if (was.item !== item) for (const p of [...was.targets, ...targets]) touched.add(p);
        else for (const p of [...was.targets, ...targets]) if (was.targets.includes(p) !== targets.includes(p)) touched.add(p);
        return list.map((s, j) => (j === i ? { item, targets } : s));
      };
      const what = Math.floor(rng.next() * 6);
      if (what === 0) {
        // A policy's selection changes (same object).
        const i = Math.floor(rng.next() * nps.length);
        nps = retarget(nps, i, nps[i]!.item, someOf());
      } else if (what === 1) {
        // A policy edited: a new object, the same targets.
        const i = Math.floor(rng.next() * nps.length);
        nps = retarget(nps, i, { ...nps[i]!.item }, [...nps[i]!.targets]);
      } else if (what === 2) {
        // A CNP's priority or tier changes: it moves in the order of every pod it selects.
        const i = Math.floor(rng.next() * cnps.length);
        cnps = retarget(cnps, i, { ...cnps[i]!.item, tier: pick(tiers), priority: Math.floor(rng.next() * 3) }, [...cnps[i]!.targets]);
      } else if (what === 3) {
        const i = Math.floor(rng.next() * cnps.length);
        cnps = retarget(cnps, i, cnps[i]!.item, someOf());
      } else if (what === 4) {
        // A pod replaced by a new object (a label change): every object selecting it gets a new targets array.
        const i = Math.floor(rng.next() * livePods.length);
        const old = livePods[i]!;
        const now = { ...old, labels: { step: String(step) } };
        livePods = livePods.map((p) => (p === old ? now : p));
        touched.add(old).add(now);
        const swap = <T>(list: Selecting<T>[]): Selecting<T>[] =>
          list.map((s) => ({ item: s.item, targets: s.targets.map((p) => (p === old ? now : p)) }));
        nps = swap(nps);
        cnps = swap(cnps);
      } else {
        // An object stops selecting anything (deleted): it is no longer handed over.
        const i = Math.floor(rng.next() * nps.length);
        for (const p of nps[i]!.targets) touched.add(p);
        nps = nps.filter((_, j) => j !== i);
        if (nps.length < 3) nps.push({ item: makePolicy('a', `np-new-${step}`), targets: someOf() });
        for (const p of nps[nps.length - 1]!.targets) touched.add(p);
      }
      resolver.update(nps, cnps);
      for (const pod of livePods) {
        const got = resolver.selectionOf(pod);
        const names = {
          policies: got.policies.map((p) => p.name),
          clusterPolicies: got.clusterPolicies.map((c) => `${c.tier}/${c.priority}/${c.name}`),
        };
        expect({ step, pod: pod.name, ...names }).toEqual({ step, pod: pod.name, ...expected(pod) });
        if (!touched.has(pod)) {
          expect(got.policies).toBe(before.get(pod)!.policies);
          expect(got.clusterPolicies).toBe(before.get(pod)!.clusterPolicies);
        }
      }
    }
  });
});
