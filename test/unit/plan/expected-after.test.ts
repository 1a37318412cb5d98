// The tracker's "programmed" state after a sync, patched from the plan (expectedAfter), must be exactly what
// deriving it again from the whole desired state gives (expectedObserved): the drift check compares the
// kernel against it, so a wrong patch would read as drift (or hide it). Checked over a run of changes of every
// kind a daemon sees, each planned against the patched state of the change before, as the syncer does.

import { Compiler } from '../../../src/compile/index.js';
import type { ClusterSnapshot, FamilyState, NetworkPolicy, Pod } from '../../../src/model/index.js';
import { expectedAfter, expectedObserved, planFamily, type ObservedFamily } from '../../../src/plan/index.js';
import {
  blockPeer,
  containerPorts,
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPodPeer,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
  types,
} from '../../helpers/builders.js';

const own = { chainPrefix: 'nf-', ipsetPrefix: '' };
const namespaces = [makeNamespace('a', { team: 'x' }), makeNamespace('b')];
const web = (port: number): NetworkPolicy =>
  makePolicy(
    'a',
    'web',
    selectPods(sel({ app: 'web' })),
    types('Ingress'),
    ingress(rule([podPeer(sel({ role: 'client' })), nsPodPeer(sel({ team: 'x' }), sel({}))], [tcp(port), tcp('http')])),
  );
const blocks = makePolicy('b', 'blocks', selectPods(sel({})), types('Ingress'), ingress(rule([blockPeer('10.0.0.0/8', '10.244.2.0/24')])));
const pod = (ns: string, name: string, ip: string, l: Record<string, string>, node = 'node-1'): Pod =>
  makePod(ns, name, ip, labels(l), onNode(node), containerPorts({ name: 'http', containerPort: 8080, protocol: 'TCP' }));

const steps: { readonly name: string; readonly cluster: Partial<ClusterSnapshot> }[] = [];
let pods: Pod[] = [
  pod('a', 'web-1', '10.244.1.2', { app: 'web' }),
  pod('a', 'client-1', '10.244.1.3', { role: 'client' }),
  pod('b', 'db-1', '10.244.1.4', {}),
  pod('b', 'remote-1', '10.244.2.2', { role: 'client' }, 'node-2'),
];
let policies: NetworkPolicy[] = [web(80), blocks];
const step = (name: string): void => void steps.push({ name, cluster: { namespaces, pods: [...pods], policies: [...policies] } });
step('start');
pods = pods.map((p) => (p.name === 'remote-1' ? { ...p, labels: {} } : p));
step('a remote pod leaves a peer set (label flip)');
pods = [...pods.filter((p) => p.name !== 'web-1'), pod('a', 'web-2', '10.244.1.9', { app: 'web' })];
step('a local pod replaced by one with a new name and address');
policies = [web(443), blocks];
step("a policy's port edited");
pods = [...pods, pod('b', 'db-2', '10.244.1.10', {})];
step('a local pod added');
policies = [web(443)];
step('a policy removed (its chains and sets go)');
pods = pods.filter((p) => p.name !== 'client-1');
step('a local pod removed');
policies = [web(443), blocks];
step('a policy added again');

describe('expectedAfter: the programmed state patched from each plan', () => {
  it('equals the programmed state derived afresh after every change', () => {
    const compiler = new Compiler();
    let previous: FamilyState | undefined;
    let expected: ObservedFamily | undefined;
    for (const { name, cluster } of steps) {
      const state = compiler.compile(snapshot(cluster), settings()).desired.v4;
      const observed = expected ?? expectedObserved({ ...state, chains: [], ipsets: [], hooks: [] });
      const plan = planFamily(state, observed, own, previous);
      expected = previous ? expectedAfter(observed, plan, state) : expectedObserved(state);
      expect({ step: name, expected }).toEqual({ step: name, expected: expectedObserved(state) });
      previous = state;
    }
  });
});
