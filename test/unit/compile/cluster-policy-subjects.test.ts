// ClusterNetworkPolicy subjects are kept from one compile to the next (cluster-policy-subjects.ts): only
// the namespaces whose local pods or labels changed are looked at again, and a CNP's every namespace when its
// subject changed. Checked after every step of a random sequence of pod, namespace and CNP changes: the
// subjects against their definition ("subject" selects pods by namespace labels, then pod labels;
// host-networked pods are never subjects), and a long-lived Compiler's output against a fresh compile().

import { ClusterPolicySubjects } from '../../../src/compile/cluster-policy-subjects.js';
import { ClusterState } from '../../../src/compile/cluster-state.js';
import { Compiler, compile } from '../../../src/compile/index.js';
import { selectorMatches } from '../../../src/compile/selectors.js';
import type { ClusterNetworkPolicy, ClusterSnapshot, DesiredState, Namespace, Pod } from '../../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import { mulberry32 } from '../../../scripts/bench-lib/prng.js';
import { containerPorts, hostNetwork, labels, makeNamespace, makePod, NODE, onNode, sel, settings } from '../../helpers/builders.js';
import { cnp, cRule, cTcp, named, networks, nsSubject, podSubject } from '../../helpers/cnp-builders.js';

const text = (d: DesiredState): string => [d.v4, d.v6].map((f) => renderIpsetRestore(f.ipsets) + renderFullRestore(f)).join('\n');

const NAMESPACES = ['a', 'b', 'c', 'd'];
const TEAMS = ['red', 'blue'];
const APPS = ['web', 'db', 'cache'];

/** The definition, written out: local pods (sorted by namespace, then name) the subject selects. */
function subjectsByDefinition(c: ClusterNetworkPolicy, snap: ClusterSnapshot): string[] {
  const nsLabels = new Map(snap.namespaces.map((n) => [n.name, n.labels]));
  return snap.pods
    .filter((p) => p.nodeName === NODE && !p.hostNetwork && p.ips.length > 0)
    .filter((p) =>
      selectorMatches(c.subject.namespaceSelector, nsLabels.get(p.namespace) ?? { 'kubernetes.io/metadata.name': p.namespace }),
    )
    .filter((p) => c.subject.kind === 'namespaces' || selectorMatches(c.subject.podSelector, p.labels))
    .map((p) => `${p.namespace}/${p.name}`)
    .sort();
}

describe('ClusterNetworkPolicy subjects, kept incrementally', () => {
  it('equal their definition, and a long-lived Compiler equals compile(), after every step of a 150-step random sequence', () => {
    const rng = mulberry32(23);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
    let serial = 0;
    const newPod = (): Pod =>
      makePod(
        pick(NAMESPACES),
        `p${serial}`,
        `10.244.1.${(serial++ % 250) + 1}`,
        labels({ app: pick(APPS) }),
        containerPorts({ name: 'http', containerPort: 8000 + Math.floor(rng.next() * 3), protocol: 'TCP' }),
      );
    const newNamespace = (name: string): Namespace => makeNamespace(name, { team: pick(TEAMS) });
    const newCnp = (): ClusterNetworkPolicy => {
      const n = serial++;
      const subject =
        rng.next() < 0.4
          ? nsSubject(sel({ team: pick(TEAMS) }))
          : podSubject(rng.next() < 0.3 ? sel() : sel({ team: pick(TEAMS) }), sel({ app: pick(APPS) }));
      // A named port on ingress: its set's members come from the subjects themselves.
      return cnp(`cnp-${n}`, rng.next() < 0.5 ? 'Admin' : 'Baseline', n % 7, subject, {
        ingress: [cRule('Accept', [networks('10.0.0.0/8')], [named('http')]), cRule('Deny', [networks('10.0.0.0/8')], [cTcp(22)])],
      });
    };

    let snap: ClusterSnapshot = {
      nodes: [],
      namespaces: NAMESPACES.slice(0, 3).map(newNamespace),
      pods: Array.from({ length: 14 }, newPod),
      policies: [],
      clusterPolicies: Array.from({ length: 4 }, newCnp),
    };
    const steps: Record<string, (s: ClusterSnapshot) => ClusterSnapshot> = {
      podAdd: (s) => ({ ...s, pods: [...s.pods, newPod()] }),
      podDelete: (s) => {
        const gone = pick(s.pods);
        return { ...s, pods: s.pods.filter((p) => p !== gone) };
      },
      podRelabel: (s) => {
        const p = pick(s.pods);
        return { ...s, pods: s.pods.map((q) => (q === p ? { ...p, labels: { app: pick(APPS) } } : q)) };
      },
      podElsewhere: (s) => {
        // Off this node, back on it, or host-networked: it leaves or joins the local pods.
        const p = pick(s.pods);
        const moved =
          rng.next() < 0.3
            ? makePod(p.namespace, p.name, p.ips[0]!, labels(p.labels), hostNetwork)
            : { ...p, nodeName: p.nodeName === NODE ? 'node-2' : NODE };
        return { ...s, pods: s.pods.map((q) => (q === p ? moved : q)) };
      },
      namespaceRelabel: (s) => {
        const n = pick(s.namespaces);
        return { ...s, namespaces: s.namespaces.map((m) => (m === n ? newNamespace(n.name) : m)) };
      },
      namespaceListed: (s) => {
        // A namespace appears in or disappears from the list while its pods stay (default labels then).
        const name = pick(NAMESPACES);
        const listed = s.namespaces.some((n) => n.name === name);
        return { ...s, namespaces: listed ? s.namespaces.filter((n) => n.name !== name) : [...s.namespaces, newNamespace(name)] };
      },
      cnpAdd: (s) => ({ ...s, clusterPolicies: [...(s.clusterPolicies ?? []), newCnp()] }),
      cnpDelete: (s) => {
        const list = s.clusterPolicies ?? [];
        const gone = list.length > 0 ? pick(list) : undefined;
        return { ...s, clusterPolicies: list.filter((c) => c !== gone) };
      },
      cnpSubject: (s) => {
        // The same name, another subject: every namespace looked at again.
        const list = s.clusterPolicies ?? [];
        if (list.length === 0) return s;
        const c = pick(list);
        return { ...s, clusterPolicies: list.map((d) => (d === c ? { ...newCnp(), name: c.name } : d)) };
      },
      cnpPriority: (s) => {
        // A new object with the same subject: the subjects stay as they were.
        const list = s.clusterPolicies ?? [];
        if (list.length === 0) return s;
        const c = pick(list);
        return { ...s, clusterPolicies: list.map((d) => (d === c ? { ...c, priority: (c.priority + 3) % 7 } : d)) };
      },
      podOffNode: (s) => ({
        ...s,
        pods: [...s.pods, makePod(pick(NAMESPACES), `r${serial++}`, `10.244.2.${serial % 250}`, onNode('node-2'))],
      }),
    };
    const names = Object.keys(steps);

    const node = settings();
    const compiler = new Compiler();
    const state = new ClusterState();
    const subjects = new ClusterPolicySubjects();
    const seen = new Set<string>();
    for (let step = 0; step <= 150; step++) {
      const way = step === 0 ? 'start' : pick(names);
      if (step > 0) snap = steps[way]!(snap);
      state.update(snap, NODE);
      subjects.update(snap.clusterPolicies ?? [], state);
      for (const c of snap.clusterPolicies ?? []) {
        const got = subjects.of(c.name).map((p) => `${p.namespace}/${p.name}`);
        expect({ step, way, cnp: c.name, subjects: got }).toEqual({ step, way, cnp: c.name, subjects: subjectsByDefinition(c, snap) });
        if (got.length > 0) seen.add(way);
      }
      const incremental = compiler.compile(snap, node);
      const fresh = compile(snap, node);
      expect({ step, way, text: text(incremental.desired) }).toEqual({ step, way, text: text(fresh.desired) });
      expect(incremental.problems).toEqual(fresh.problems);
    }
    // The sequence reached every kind of change with some CNP selecting something.
    expect([...seen].sort()).toEqual(['start', ...names].sort());
  });

  it('hands out the same array while a CNP selects the same pods', () => {
    const state = new ClusterState();
    const subjects = new ClusterPolicySubjects();
    const web = makePod('a', 'web', '10.244.1.1', labels({ app: 'web' }));
    const db = makePod('b', 'db', '10.244.1.2', labels({ app: 'db' }));
    const guard = cnp('guard', 'Admin', 1, podSubject(sel(), sel({ app: 'web' })), {});
    let snap: ClusterSnapshot = {
      nodes: [],
      namespaces: [makeNamespace('a'), makeNamespace('b')],
      pods: [web, db],
      policies: [],
      clusterPolicies: [guard],
    };
    state.update(snap, NODE);
    subjects.update([guard], state);
    const first = subjects.of('guard');
    expect(first).toEqual([web]);
    // Another namespace's pod changed, the CNP replaced by an equal object: the same array.
    snap = { ...snap, pods: [web, { ...db, labels: { app: 'db', v: '2' } }] };
    state.update(snap, NODE);
    subjects.update([{ ...guard, priority: 2 }], state);
    expect(subjects.of('guard')).toBe(first);
    // Every CNP gone, then back after a pod came: worked out from the state as it is now.
    subjects.update([], state);
    expect(subjects.of('guard')).toEqual([]);
    const web2 = makePod('b', 'web2', '10.244.1.3', labels({ app: 'web' }));
    snap = { ...snap, pods: [...snap.pods, web2] };
    state.update(snap, NODE);
    subjects.update([guard], state);
    expect(subjects.of('guard')).toEqual([web, web2]);
  });
});
