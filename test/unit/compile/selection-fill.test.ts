// A selector peer's pods are worked out when first asked for (ClusterState.fill), starting from the pods that
// carry one label the podSelector asks for (a label index kept from one snapshot to the next) when fewer carry it
// than the namespaces in scope hold. Checked after every step of a random sequence of pod changes (labels
// edited, pods added, removed, moved between namespaces, finished) and namespace relabels: a selection filled
// then equals its definition. A label index that missed a change (a relabelled pod still found by its old
// label, or not by its new one) would put a pod in a set it does not belong to: a peer rule that lets it in.

import { ClusterState } from '../../../src/compile/cluster-state.js';
import { selectorMatches } from '../../../src/compile/selectors.js';
import type { ClusterSnapshot, LabelSelector, Namespace, Pod, PolicyPeer } from '../../../src/model/index.js';
import { mulberry32 } from '../../../scripts/bench-lib/prng.js';
import { expr, labels, makeNamespace, makePod, NODE, sel } from '../../helpers/builders.js';

const NAMESPACES = ['a', 'b', 'c'];
const APPS = ['web', 'db'];
const TIERS = ['front', 'back'];

/** The definition, written out: peer pods (running, with an address) in scope whose labels the podSelector matches. */
function byDefinition(peer: PolicyPeer, policyNamespace: string, snap: ClusterSnapshot): string[] {
  const nsLabels = new Map(snap.namespaces.map((n) => [n.name, n.labels]));
  return snap.pods
    .filter((p) => p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed')
    .filter((p) =>
      peer.namespaceSelector
        ? selectorMatches(peer.namespaceSelector, nsLabels.get(p.namespace) ?? { 'kubernetes.io/metadata.name': p.namespace })
        : p.namespace === policyNamespace,
    )
    .filter((p) => !peer.podSelector || selectorMatches(peer.podSelector, p.labels))
    .map((p) => `${p.namespace}/${p.name}`)
    .sort();
}

describe.each([true, false])('selections filled (label index: %s)', (labelIndex) => {
  it('equal their definition after every step of a 300-step random sequence of pod and namespace changes', () => {
    const rng = mulberry32(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
    const podLabels = (): Record<string, string> => (rng.next() < 0.7 ? { app: pick(APPS), tier: pick(TIERS) } : { app: pick(APPS) });
    let serial = 0;
    const newPod = (ns = pick(NAMESPACES), name = `p${serial++}`): Pod =>
      makePod(ns, name, `10.244.1.${(serial % 250) + 1}`, labels(podLabels()));
    let pods: Pod[] = Array.from({ length: 12 }, () => newPod());
    let namespaces: Namespace[] = NAMESPACES.map((n) => makeNamespace(n, { team: pick(['red', 'blue']) }));
    const state = new ClusterState({ labelIndex });
    for (let step = 0; step < 300; step++) {
      const r = rng.next();
      // A new list every step (the state diffs the last one it saw against it).
      pods = [...pods];
      const at = Math.floor(rng.next() * pods.length);
      const was = pods[at];
      if (r < 0.35 && was) pods[at] = { ...was, labels: podLabels() };
      else if (r < 0.5) pods = [...pods, newPod()];
      else if (r < 0.6 && was) pods = pods.filter((_, i) => i !== at);
      else if (r < 0.7 && was) pods[at] = newPod(pick(NAMESPACES), was.name);
      else if (r < 0.8 && was) pods[at] = { ...was, ...(rng.next() < 0.5 ? { phase: 'Succeeded' } : { ips: [] }) };
      else if (r < 0.9) namespaces = namespaces.map((n) => (rng.next() < 0.5 ? makeNamespace(n.name, { team: pick(['red', 'blue']) }) : n));
      const snap: ClusterSnapshot = { nodes: [], namespaces, pods, policies: [] };
      state.update(snap, NODE);
      // A selector not asked for before (its key names the step), so it is filled now, from the index.
      const fresh = expr('step', 'NotIn', String(step));
      const podSelector: LabelSelector =
        rng.next() < 0.5 ? sel({ app: pick(APPS) }, [fresh]) : sel({ app: pick(APPS), tier: pick(TIERS) }, [fresh]);
      const peers: PolicyPeer[] = [
        { namespaceSelector: sel(), podSelector },
        { namespaceSelector: sel({ team: pick(['red', 'blue']) }), podSelector },
        { podSelector },
      ];
      const policyNamespace = pick(NAMESPACES);
      for (const peer of peers)
        expect([...state.select(peer, policyNamespace).pods.keys()].sort()).toEqual(byDefinition(peer, policyNamespace, snap));
    }
  });

  it('a relabelled pod is found by its new label and no longer by its old one', () => {
    const before = makePod('a', 'x', '10.244.1.5', labels({ app: 'web' }));
    const others = ['a', 'b', 'c'].flatMap((ns) => Array.from({ length: 5 }, (_, i) => makePod(ns, `o${i}`, `10.244.2.${i}`)));
    const state = new ClusterState({ labelIndex });
    const snap = (pod: Pod): ClusterSnapshot => ({ nodes: [], namespaces: [], pods: [pod, ...others], policies: [] });
    state.update(snap(before), NODE);
    state.update(snap({ ...before, labels: { app: 'db' } }), NODE);
    const everywhere = (app: string): PolicyPeer => ({ namespaceSelector: sel(), podSelector: sel({ app }) });
    expect([...state.select(everywhere('db'), 'a').pods.keys()]).toEqual(['a/x']);
    expect([...state.select(everywhere('web'), 'a').pods.keys()]).toEqual([]);
    // Gone: not found by its label either (a selector not asked for before, so filled now).
    state.update({ nodes: [], namespaces: [], pods: others, policies: [] }, NODE);
    const again: PolicyPeer = { namespaceSelector: sel(), podSelector: sel({ app: 'db' }, [expr('k', 'DoesNotExist')]) };
    expect([...state.select(again, 'a').pods.keys()]).toEqual([]);
  });
});
