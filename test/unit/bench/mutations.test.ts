import { createHash } from 'node:crypto';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';
import {
  MUTATIONS,
  namespaceLabelChange,
  podAdd,
  podDelete,
  podLabelChange,
  policyAdd,
  policyEdit,
  remoteNode,
  type Mutate,
} from '../../../scripts/bench-lib/mutations.js';
import { compile } from '../../../src/compile/index.js';
import type { ClusterSnapshot, FamilyState } from '../../../src/model/index.js';

const { snapshot, settings } = generateCluster({ tier: 'medium', seed: 3, node: 'node-1' });
const REMOTE = remoteNode(snapshot, 'node-1');
const before = compile(snapshot, settings).desired.v4;
const hashOf = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');
const original = hashOf(snapshot);

const workloadPods = (s: FamilyState): string[] =>
  s.chains.flatMap((c) => (c.role.kind === 'workload' && c.role.direction === 'ingress' ? [c.role.pod] : [])).sort();
const added = <T>(a: readonly T[], b: readonly T[]): T[] => b.filter((x) => !a.includes(x));
const key = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

describe('mutations', () => {
  afterEach(() => {
    // Mutations build new snapshots; the input must never change.
    expect(hashOf(snapshot)).toBe(original);
  });

  it.each<{ node: string; where: string }>([
    { node: 'node-1', where: 'local' },
    { node: REMOTE, where: 'remote' },
  ])('podAdd ($where) adds one running pod on $node at a free address of its CIDR', ({ node }) => {
    const after = podAdd(snapshot, { node });
    const [pod, ...more] = added(snapshot.pods, after.pods);
    expect(more).toEqual([]);
    expect(after.pods).toHaveLength(snapshot.pods.length + 1);
    expect(pod).toMatchObject({ nodeName: node, phase: 'Running', hostNetwork: false });
    const prefix = snapshot.nodes.find((n) => n.name === node)!.podCidrs[0]!.replace(/0\/24$/, '');
    expect(pod!.ips[0]!.startsWith(prefix)).toBe(true);
    expect(snapshot.pods.some((p) => p.ips.includes(pod!.ips[0]!))).toBe(false);
    expect(snapshot.pods.some((p) => key(p) === key(pod!))).toBe(false);
    // A clone of a deployment's pod: same labels as one that exists.
    expect(snapshot.pods.some((p) => p.namespace === pod!.namespace && hashOf(p.labels) === hashOf(pod!.labels))).toBe(true);
  });

  it("podAdd on node-1 adds exactly that pod's workload chains; on a remote node none", () => {
    const local = podAdd(snapshot, { node: 'node-1' });
    const newPod = added(snapshot.pods, local.pods)[0]!;
    expect(added(workloadPods(before), workloadPods(compile(local, settings).desired.v4))).toEqual([key(newPod)]);
    expect(workloadPods(compile(podAdd(snapshot, { node: REMOTE }), settings).desired.v4)).toEqual(workloadPods(before));
  });

  it.each<{ node: string; where: string }>([
    { node: 'node-1', where: 'local' },
    { node: REMOTE, where: 'remote' },
  ])('podDelete ($where) removes one running pod of $node', ({ node }) => {
    const after = podDelete(snapshot, { node });
    const gone = snapshot.pods.filter((p) => !after.pods.includes(p));
    expect(gone).toHaveLength(1);
    expect(after.pods).toHaveLength(snapshot.pods.length - 1);
    expect(gone[0]).toMatchObject({ nodeName: node, phase: 'Running', hostNetwork: false });
  });

  it("podDelete on node-1 removes exactly that pod's workload chains", () => {
    const after = podDelete(snapshot, { node: 'node-1' });
    const gone = snapshot.pods.find((p) => !after.pods.includes(p))!;
    expect(added(workloadPods(compile(after, settings).desired.v4), workloadPods(before))).toEqual([key(gone)]);
  });

  it.each<{ node: string; where: string }>([
    { node: 'node-1', where: 'local' },
    { node: REMOTE, where: 'remote' },
  ])('podLabelChange ($where) changes only the labels of one pod of $node', ({ node }) => {
    const after = podLabelChange(snapshot, { node });
    expect(after.pods).toHaveLength(snapshot.pods.length);
    const changed = after.pods.flatMap((p, i) => (p === snapshot.pods[i] ? [] : [{ was: snapshot.pods[i]!, now: p }]));
    expect(changed).toHaveLength(1);
    const { was, now } = changed[0]!;
    expect(was.nodeName).toBe(node);
    expect(now.labels).not.toEqual(was.labels);
    expect({ ...now, labels: was.labels }).toEqual(was);
  });

  it('namespaceLabelChange flips env on exactly one namespace that has a node-1 pod', () => {
    const after = namespaceLabelChange(snapshot, { node: 'node-1' });
    const changed = after.namespaces.flatMap((n, i) => (n === snapshot.namespaces[i] ? [] : [{ was: snapshot.namespaces[i]!, now: n }]));
    expect(changed).toHaveLength(1);
    const { was, now } = changed[0]!;
    expect(now.labels['env']).not.toBe(was.labels['env']);
    expect({ ...now.labels, env: was.labels['env'] }).toEqual(was.labels);
    expect(snapshot.pods.some((p) => p.nodeName === 'node-1' && p.namespace === was.name)).toBe(true);
  });

  it('policyAdd adds one valid policy that gets a policy chain on node-1', () => {
    const after = policyAdd(snapshot, { node: 'node-1' });
    const [policy, ...more] = added(snapshot.policies, after.policies);
    expect(more).toEqual([]);
    const result = compile(after, settings);
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(result.desired.v4.chains.some((c) => c.role.kind === 'policy' && c.role.policy === key(policy!))).toBe(true);
  });

  it.each([1, 2, 3, 4, 5])(
    'policyEdit (pick %d) adds a new TCP port to the first ingress rule of one policy selecting node-1 pods; its chain changes',
    (pick) => {
      const after = policyEdit(snapshot, { node: 'node-1', pick });
      const changed = after.policies.flatMap((p, i) => (p === snapshot.policies[i] ? [] : [{ was: snapshot.policies[i]!, now: p }]));
      expect(changed).toHaveLength(1);
      const { was, now } = changed[0]!;
      const [port, ...more] = added(was.ingress![0]!.ports!, now.ingress![0]!.ports!);
      expect(more).toEqual([]);
      expect(port).toMatchObject({ protocol: 'TCP' });
      expect(was.ingress![0]!.ports!.some((p) => p.port === port!.port)).toBe(false);
      const chainOf = (s: FamilyState) =>
        JSON.stringify(s.chains.find((c) => c.role.kind === 'policy' && c.role.policy === key(was) && c.role.direction === 'ingress'));
      expect(chainOf(before)).not.toBe('undefined');
      expect(chainOf(compile(after, settings).desired.v4)).not.toBe(chainOf(before));
    },
  );

  it.each(MUTATIONS.map((m) => ({ name: m.name, m })))('$name is deterministic for the same pick and changes the snapshot', ({ m }) => {
    const node = m.where === 'local' ? 'node-1' : REMOTE;
    const run = (s: ClusterSnapshot, f: Mutate, pick: number) => hashOf(f(s, { node, pick }));
    expect(run(snapshot, m.apply, 5)).toBe(run(snapshot, m.apply, 5));
    expect(run(snapshot, m.apply, 5)).not.toBe(original);
  });
});
