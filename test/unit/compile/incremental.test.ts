// A long-lived Compiler must give exactly what the pure compile() gives for every snapshot in a sequence
// of changes: caching is an optimisation, never a different answer. Also: unchanged chains and sets come
// back as the same objects (what makes the render cache and the planner cheap).

import { ObjectStore } from '../../../src/cluster/source.js';
import { Compiler, compile } from '../../../src/compile/index.js';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';
import { MUTATIONS, remoteNode } from '../../../scripts/bench-lib/mutations.js';
import { generateClusterPolicies } from '../../../scripts/bench-cnp-policies.js';
import {
  memberDeltaFrom,
  type ClusterNetworkPolicy,
  type ClusterSnapshot,
  type DesiredState,
  type NodeSettings,
} from '../../../src/model/index.js';
import { expectedObserved } from '../../../src/plan/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  NODE,
  nsPodPeer,
  onNode,
  rule,
  sel,
  selectPods,
  settings as fixtureSettings,
  snapshot,
  types,
} from '../../helpers/builders.js';
import { cluster as fixtureCluster, IP as fixtureIp } from './fixtures.js';

const text = (d: DesiredState): string => [d.v4, d.v6].map((f) => renderIpsetRestore(f.ipsets) + renderFullRestore(f)).join('\n');

describe('incremental Compiler', () => {
  const { snapshot: start, settings } = generateCluster({ tier: 'medium', seed: 7, node: 'node-1' });
  const remote = remoteNode(start, 'node-1');

  it('equals compile() after every change of an 80-step random sequence', () => {
    const compiler = new Compiler();
    let snap: ClusterSnapshot = start;
    expect(text(compiler.compile(snap, settings).desired)).toBe(text(compile(snap, settings).desired));
    for (let step = 0; step < 80; step++) {
      const mutation = MUTATIONS[(step * 7 + 3) % MUTATIONS.length]!;
      snap = mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      const incremental = compiler.compile(snap, settings);
      const full = compile(snap, settings);
      expect({ step, mutation: mutation.name, text: text(incremental.desired) }).toEqual({
        step,
        mutation: mutation.name,
        text: text(full.desired),
      });
      expect(incremental.problems).toEqual(full.problems);
    }
  });

  it('equals compile() for each change and its undoing, alternately (the benchmark pattern: a change, then back)', () => {
    // Undoing a change hands back the very objects of before: chains kept from an earlier list of policies
    // must not come back for a list that only looks the same, nor stay when the list moved.
    const compiler = new Compiler();
    compiler.compile(start, settings);
    for (let step = 0; step < 60; step++) {
      const mutation = MUTATIONS[(step * 3 + 2) % MUTATIONS.length]!;
      const changed = mutation.apply(start, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      for (const [way, snap] of [
        ['change', changed],
        ['back', start],
      ] as const) {
        const incremental = compiler.compile(snap, settings);
        const full = compile(snap, settings);
        expect({ step, way, mutation: mutation.name, text: text(incremental.desired) }).toEqual({
          step,
          way,
          mutation: mutation.name,
          text: text(full.desired),
        });
        expect(incremental.problems).toEqual(full.problems);
      }
    }
  });

  it('says what each patched set gained and lost, and the tracker edited by it equals one sorted from scratch', () => {
    // The planner and the tracker follow a one-pod change by the compiler's recorded delta instead of walking
    // the members: the delta must be exactly the difference, and what the tracker builds from it exact too.
    const compiler = new Compiler();
    let snap: ClusterSnapshot = start;
    let before = compiler.compile(snap, settings).desired.v4;
    expectedObserved(before);
    let recorded = 0;
    for (let step = 0; step < 80; step++) {
      const mutation = MUTATIONS[(step * 7 + 3) % MUTATIONS.length]!;
      snap = mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      const now = compiler.compile(snap, settings).desired.v4;
      const previousByName = new Map(before.ipsets.map((s) => [s.name, s]));
      for (const set of now.ipsets) {
        const previous = previousByName.get(set.name);
        const delta = previous && memberDeltaFrom(set, previous);
        if (!delta) continue;
        recorded++;
        expect({ step, set: set.name, added: [...delta.added].sort(), removed: [...delta.removed].sort() }).toEqual({
          step,
          set: set.name,
          added: set.members.filter((m) => !previous.members.includes(m)).sort(),
          removed: previous.members.filter((m) => !set.members.includes(m)).sort(),
        });
      }
      expect({ step, sets: expectedObserved(now).ipsets }).toEqual({
        step,
        sets: expectedObserved(compile(snap, settings).desired.v4).ipsets,
      });
      before = now;
    }
    expect(recorded).toBeGreaterThan(20);
  });

  it('with a node budget that refuses some policies, equals compile() after every change of an 80-step random sequence', () => {
    const tight: NodeSettings = { ...settings, budget: { setMembers: 20, rules: 60 } };
    const overBudget = (problems: readonly { message: string }[]) => problems.filter((p) => p.message.includes("node's budget")).length;
    const compiler = new Compiler();
    let snap: ClusterSnapshot = start;
    const first = compiler.compile(snap, tight);
    expect(overBudget(first.problems)).toBeGreaterThan(0);
    expect(text(first.desired)).toBe(text(compile(snap, tight).desired));
    for (let step = 0; step < 80; step++) {
      const mutation = MUTATIONS[(step * 5 + 1) % MUTATIONS.length]!;
      snap = mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      const incremental = compiler.compile(snap, tight);
      const full = compile(snap, tight);
      expect({ step, mutation: mutation.name, text: text(incremental.desired) }).toEqual({
        step,
        mutation: mutation.name,
        text: text(full.desired),
      });
      expect(incremental.problems).toEqual(full.problems);
    }
  });

  it('with ClusterNetworkPolicies and audited objects, equals compile() after every change of a 45-step random sequence', () => {
    // Which policies and tiers select each pod is kept from one compile to the next (resolution.ts): CNPs
    // moving in the evaluation order, audit mode turned on and off, CNPs coming and going must all give
    // what a fresh compile gives.
    const cnps = generateClusterPolicies(start, 7, 12).map((c, i) => (i % 5 === 0 ? { ...c, audit: true } : c));
    const audited = (snap: ClusterSnapshot, i: number): ClusterSnapshot => ({
      ...snap,
      policies: snap.policies.map((p, j) => (j === i % snap.policies.length ? { ...p, audit: !p.audit } : p)),
    });
    const cnpStep = (snap: ClusterSnapshot, step: number): ClusterSnapshot => {
      const list: readonly ClusterNetworkPolicy[] = snap.clusterPolicies ?? [];
      const i = step % Math.max(1, list.length);
      const edit = (f: (c: ClusterNetworkPolicy) => ClusterNetworkPolicy | undefined): ClusterSnapshot => ({
        ...snap,
        clusterPolicies: list.flatMap((c, j) => (j === i ? [f(c)].filter((x) => x !== undefined) : [c])),
      });
      switch (step % 5) {
        case 0:
          return edit((c) => ({ ...c, priority: (c.priority + 37) % 100 }));
        case 1:
          return edit((c) => ({ ...c, audit: !c.audit }));
        case 2:
          return edit((c) => ({ ...c, tier: c.tier === 'Admin' ? 'Baseline' : 'Admin' }));
        case 3:
          return edit(() => undefined);
        default:
          return {
            ...snap,
            clusterPolicies: [...list, cnps[step % cnps.length]!].filter((c, j, all) => all.findIndex((x) => x.name === c.name) === j),
          };
      }
    };
    const compiler = new Compiler();
    let snap: ClusterSnapshot = {
      ...start,
      policies: start.policies.map((p, j) => (j % 7 === 0 ? { ...p, audit: true } : p)),
      clusterPolicies: cnps,
    };
    expect(text(compiler.compile(snap, settings).desired)).toBe(text(compile(snap, settings).desired));
    const seen = { verdictCopies: 0, toNode: 0 };
    for (let step = 0; step < 45; step++) {
      const mutation = MUTATIONS[(step * 3 + 2) % MUTATIONS.length]!;
      const way = step % 3 === 0 ? 'cnp' : step % 3 === 1 ? 'audit' : mutation.name;
      snap =
        way === 'cnp'
          ? cnpStep(snap, step)
          : way === 'audit'
            ? audited(snap, step * 13)
            : mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      const incremental = compiler.compile(snap, settings);
      const full = compile(snap, settings);
      expect({ step, way, text: text(incremental.desired) }).toEqual({ step, way, text: text(full.desired) });
      expect(incremental.problems).toEqual(full.problems);
      for (const chain of full.desired.v4.chains) {
        if (chain.role.kind === 'cluster-policy' && chain.role.verdictOnly) seen.verdictCopies++;
        if (chain.role.kind === 'host-workload') seen.toNode++;
      }
    }
    // The sequence reached the layouts it is about: pods judged twice (audit) and pods' chains to the node.
    expect(seen.verdictCopies).toBeGreaterThan(0);
    expect(seen.toNode).toBeGreaterThan(0);
  });

  it('equals compile() when the snapshots come from a source with their deltas, folded, out of order or without', () => {
    // The daemon's path: a store hands out snapshots that say what changed since an earlier one. Some steps
    // fold several changes into one compile (a burst), some hand the compiler a plain copy of the lists (no
    // delta: whole-list comparison after delta steps), some an older snapshot again (a delta it cannot use).
    const store = new ObjectStore();
    const load = (snap: ClusterSnapshot): void => {
      const kinds = [
        ['Namespace', snap.namespaces, (o: { name: string }) => o.name],
        ['Node', snap.nodes, (o: { name: string }) => o.name],
        ['Pod', snap.pods, (o: { namespace: string; name: string }) => `${o.namespace}/${o.name}`],
        ['NetworkPolicy', snap.policies, (o: { namespace: string; name: string }) => `${o.namespace}/${o.name}`],
      ] as const;
      for (const [kind, objects, keyOf] of kinds) {
        const keys = new Set(objects.map((o) => keyOf(o as never)));
        for (const key of store.keys(kind)) if (!keys.has(key)) store.delete(kind, key);
        for (const o of objects) store.set(kind, keyOf(o as never), o);
      }
    };
    load(start);
    const compiler = new Compiler();
    let snap: ClusterSnapshot = start;
    let older = store.snapshot();
    expect(text(compiler.compile(older, settings).desired)).toBe(text(compile(older, settings).desired));
    const used = new Set<string>();
    let previous: ClusterSnapshot = older;
    for (let step = 0; step < 80; step++) {
      const mutation = MUTATIONS[(step * 7 + 3) % MUTATIONS.length]!;
      snap = mutation.apply(snap, { node: mutation.where === 'local' ? 'node-1' : remote, pick: step + 1 });
      load(snap);
      if (step % 5 === 1) continue; // folded into the next compile
      const way = step % 11 === 4 ? 'older' : step % 7 === 2 ? 'plain' : 'delta';
      used.add(way);
      const now = store.snapshot();
      const given: ClusterSnapshot =
        way === 'older'
          ? older
          : way === 'plain'
            ? { nodes: now.nodes, namespaces: now.namespaces, pods: [...now.pods], policies: [...now.policies] }
            : now;
      // The delta is there to be used (a store snapshot after a store snapshot).
      if (way === 'delta' && previous.changes) expect(now.changes?.since(previous)).toBeDefined();
      previous = given;
      const incremental = compiler.compile(given, settings);
      const full = compile(given, settings);
      expect({ step, way, text: text(incremental.desired) }).toEqual({ step, way, text: text(full.desired) });
      expect(incremental.problems).toEqual(full.problems);
      if (way === 'delta' && step % 3 === 0) older = now;
    }
    expect([...used].sort()).toEqual(['delta', 'older', 'plain']);
  });

  it('reports pods with addresses that do not parse in snapshot order on the delta path too', () => {
    const store = new ObjectStore();
    for (const n of start.namespaces) store.set('Namespace', n.name, n);
    for (const n of start.nodes) store.set('Node', n.name, n);
    for (const p of start.pods) store.set('Pod', `${p.namespace}/${p.name}`, p);
    for (const p of start.policies) store.set('NetworkPolicy', `${p.namespace}/${p.name}`, p);
    const template = start.pods.find((p) => p.nodeName === 'node-1' && p.ips.length === 1)!;
    const bad = (namespace: string, name: string, ip: string) => ({ ...template, namespace, name, ips: [ip] });
    const compiler = new Compiler();
    compiler.compile(store.snapshot(), settings);
    const steps: (() => void)[] = [
      () => store.set('Pod', 'zz/bad-1', bad('zz', 'bad-1', 'not-an-ip')),
      () => store.set('Pod', 'aa/bad-2', bad('aa', 'bad-2', '10.0.0.999')),
      () => store.set('Pod', `${template.namespace}/${template.name}`, { ...template, labels: { moved: 'yes' } }),
      () => store.delete('Pod', 'zz/bad-1'),
    ];
    const seen: number[] = [];
    for (const step of steps) {
      step();
      const now = store.snapshot();
      const incremental = compiler.compile(now, settings);
      const full = compile(now, settings);
      expect(incremental.problems).toEqual(full.problems);
      seen.push(full.problems.filter((p) => p.field === 'status.podIPs').length);
    }
    // The bad pods were reported (1, 2, 2, 1 of them), in the order a fresh compile gives.
    expect(seen).toEqual([1, 2, 2, 1]);
  });

  it('follows settings changes (prefix, unknown-pod policy)', () => {
    const compiler = new Compiler();
    compiler.compile(start, settings);
    const changed: NodeSettings[] = [
      { ...settings, chainPrefix: 'nfx-' },
      { ...settings, unknownPods: 'fail-open' },
      { ...settings, marks: { accept: 0x100000, pass: 0x200000, scratch0: 0x400000, all: 0xf00000 } },
    ];
    for (const s of changed) expect(text(compiler.compile(start, s).desired)).toBe(text(compile(start, s).desired));
  });

  it('follows settings that gain or lose an optional key (flow logs, strict mode, the node budget switched on or off)', () => {
    const { flowLog: _flowLog, ...noFlowLog } = settings;
    const { budget: _budget, ...noBudget } = settings;
    expect(settings.flowLog).toBeDefined();
    const sequence: NodeSettings[] = [noFlowLog, settings, { ...settings, revokeMark: 0x100000 }, settings, noBudget, settings];
    const compiler = new Compiler();
    compiler.compile(start, settings);
    sequence.forEach((s, step) =>
      expect({ step, text: text(compiler.compile(start, s).desired) }).toEqual({ step, text: text(compile(start, s).desired) }),
    );
  });

  it('asked for each node of a cluster in turn (map, why), equals compile() of each node', () => {
    // The policy chains and resolved sets are kept from one node to the next (render-memory.ts
    // ClusterWideMemory); the dispatch tree and the fixed chains are each node's own. Nodes are asked for
    // forward then back, so a set kept from a node compiled earlier is reused by one compiled later.
    const withCnps: ClusterSnapshot = { ...start, clusterPolicies: generateClusterPolicies(start, 5, 12) };
    const nodes = start.nodes.map((n) => n.name);
    expect(nodes.length).toBeGreaterThan(5);
    const settingsOf = (node: string): NodeSettings => ({
      ...settings,
      nodeName: node,
      podCidrs: start.nodes.find((n) => n.name === node)!.podCidrs,
    });
    for (const snap of [start, withCnps]) {
      const compiler = new Compiler();
      for (const node of [...nodes, ...[...nodes].reverse()]) {
        const s = settingsOf(node);
        expect({ node, text: text(compiler.compile(snap, s).desired) }).toEqual({ node, text: text(compile(snap, s).desired) });
      }
    }
  });

  it('asked for each node of a cluster, then for each node of changed clusters (a map diff), equals compile() of each', () => {
    // Each node's own memory (dispatch, its pods' chains) is kept while other nodes are compiled and used
    // again when that node is asked for with the next cluster. Two nodes run no pod: their dispatch trees
    // have the same (no) entries and differ only in their pod CIDRs.
    const empty = [1, 2].map((i) => ({ ...start.nodes[0]!, name: `empty-${i}`, podCidrs: [`10.250.${i}.0/24`], addresses: [] }));
    const cluster: ClusterSnapshot = { ...start, nodes: [...start.nodes, ...empty] };
    const nodes = cluster.nodes.map((n) => n.name);
    const settingsOf = (node: string): NodeSettings => ({
      ...settings,
      nodeName: node,
      podCidrs: cluster.nodes.find((n) => n.name === node)!.podCidrs,
    });
    const compiler = new Compiler();
    let snap: ClusterSnapshot = cluster;
    for (let step = 0; step < 6; step++) {
      if (step > 0) {
        const mutation = MUTATIONS[(step * 5 + 1) % MUTATIONS.length]!;
        snap = mutation.apply(snap, { node: nodes[step % nodes.length]!, pick: step + 2 });
      }
      for (const node of nodes) {
        const s = settingsOf(node);
        expect({ step, node, text: text(compiler.compile(snap, s).desired) }).toEqual({ step, node, text: text(compile(snap, s).desired) });
      }
    }
  });

  it("equals compile() when one change brings a pod into a selection and takes it out again (a namespace relabelled, the pod's own label changed)", () => {
    // The namespace's new label moves its pods into the namespaceSelector's selection before the pods are brought
    // up to date, and the pod's new label then takes it out: two journal entries for one pod that cancel out. A
    // set patched from before both must not hold the pod.
    const peer = nsPodPeer(sel({ team: 'x' }), sel({ app: 'db' }));
    const before = snapshot({
      namespaces: [makeNamespace('shop'), makeNamespace('data')],
      pods: [
        makePod('shop', 'web', '10.244.1.10', onNode(NODE), labels({ app: 'web' })),
        makePod('data', 'db', '10.244.2.20', onNode('node-2'), labels({ app: 'db' })),
      ],
      policies: [makePolicy('shop', 'from-db', selectPods(sel({ app: 'web' })), types('Ingress'), ingress(rule([peer])))],
    });
    const after = {
      ...before,
      namespaces: [makeNamespace('shop'), makeNamespace('data', { team: 'x' })],
      pods: [before.pods[0]!, makePod('data', 'db', '10.244.2.20', onNode('node-2'), labels({ app: 'other' }))],
    };
    const s = fixtureSettings();
    const compiler = new Compiler();
    compiler.compile(before, s);
    expect(text(compiler.compile(after, s).desired)).toBe(text(compile(after, s).desired));
  });

  it('asked for each node of two clusters node by node (a map diff: old, new, next node), equals compile() of each, keeping every selection or not', () => {
    // A map diff compiles each node for the old cluster and at once for the new one, so the second compile is
    // the incremental one; a map's compiler (everyNode) also keeps every selection and set across the pair.
    const nodes = start.nodes.map((n) => n.name);
    const settingsOf = (node: string): NodeSettings => ({
      ...settings,
      nodeName: node,
      podCidrs: start.nodes.find((n) => n.name === node)!.podCidrs,
    });
    for (const everyNode of [true, false]) {
      const compiler = new Compiler(everyNode);
      for (let step = 1; step <= 4; step++) {
        const mutation = MUTATIONS[(step * 7 + 3) % MUTATIONS.length]!;
        const changed = mutation.apply(start, { node: nodes[step % nodes.length]!, pick: step + 5 });
        for (const node of nodes.slice(0, 6))
          for (const snap of [start, changed]) {
            const s = settingsOf(node);
            const got = text(compiler.compile(snap, s).desired);
            expect({ everyNode, step, node, same: got === text(compile(snap, s).desired) }).toEqual({ everyNode, step, node, same: true });
          }
      }
    }
  });

  it('returns the very same chain and set objects for what a remote pod change did not touch', () => {
    const compiler = new Compiler();
    const before = compiler.compile(start, settings).desired.v4;
    const after = compiler.compile(
      MUTATIONS.find((m) => m.name === 'podLabelChange-remote')!.apply(start, { node: remote, pick: 3 }),
      settings,
    ).desired.v4;
    const sameChains = after.chains.filter((c, i) => c === before.chains[i]).length;
    expect(sameChains).toBe(before.chains.length);
    const reused = after.ipsets.filter((s) => before.ipsets.includes(s)).length;
    expect(reused).toBeGreaterThanOrEqual(after.ipsets.length - 2);
  });
  it("equals compile() when a local pod's address is claimed by a second pod and then freed again (the store's deltas)", () => {
    // Two pods claiming one address: neither gets a dispatch entry (shared-addresses.ts). Once one of them is
    // gone the other must be dispatched again, exactly as a fresh compile dispatches it. The daemon's path:
    // snapshots from a store, each saying what changed, so the pod that stays is the very same object.
    const isolateWeb = makePolicy(
      'prod',
      'isolate-web',
      selectPods({ matchLabels: { app: 'web' }, matchExpressions: [] }),
      types('Ingress'),
    );
    const base = fixtureCluster([isolateWeb]);
    const small = fixtureSettings();
    const store = new ObjectStore();
    for (const ns of base.namespaces) store.set('Namespace', ns.name, ns);
    for (const node of base.nodes) store.set('Node', node.name, node);
    for (const pod of base.pods) store.set('Pod', `${pod.namespace}/${pod.name}`, pod);
    for (const policy of base.policies) store.set('NetworkPolicy', `${policy.namespace}/${policy.name}`, policy);
    const claimant = makePod('prod', 'aaa', fixtureIp.web, labels({ app: 'imposter' }));
    const compiler = new Compiler();
    const step = (way: string): void => {
      const snap = store.snapshot();
      expect({ way, text: text(compiler.compile(snap, small).desired) }).toEqual({ way, text: text(compile(snap, small).desired) });
    };
    step('before');
    store.set('Pod', 'prod/aaa', claimant);
    step('claimed');
    store.delete('Pod', 'prod/aaa');
    step('freed');
  });
});
