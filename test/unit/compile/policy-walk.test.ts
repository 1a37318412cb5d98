// A change that moves no policy's targets (a remote pod relabelled) must not walk every policy selecting
// a local pod: the policy chains come back as they were, whatever the number of policies. Counted as
// memo look-ups (each policy and direction is one on a walk), not timed.

import { jest } from '@jest/globals';
import { Compiler } from '../../../src/compile/index.js';
import { TupleMap } from '../../../src/compile/memo.js';
import type { ClusterSnapshot, NetworkPolicy, Pod } from '../../../src/model/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
} from '../../../test/helpers/builders.js';

const namespaces = [makeNamespace('app')];
const web = makePod('app', 'web', '10.244.1.5', labels({ app: 'web' }));
const policiesOf = (count: number): NetworkPolicy[] =>
  Array.from({ length: count }, (_, i) =>
    makePolicy('app', `allow-${i}`, selectPods(sel({ app: 'web' })), ingress(rule([podPeer(sel({ role: `client-${i}` }))]))),
  );

/** Memo look-ups made by the compile after `before`, of `after`. */
function lookupsOfChange(policies: number): number {
  const remote = makePod('app', 'client', '10.244.2.7', onNode('node-2'), labels({ role: 'client-0' }));
  const relabelled = { ...remote, labels: { role: 'client-1' } };
  const list = policiesOf(policies);
  const cluster = (remotePod: Pod): ClusterSnapshot => ({ nodes: [], namespaces, pods: [web, remotePod], policies: list });
  const compiler = new Compiler();
  compiler.compile(cluster(remote), settings());
  const after = cluster(relabelled);
  const get = jest.spyOn(TupleMap.prototype, 'get');
  try {
    compiler.compile(after, settings());
    return get.mock.calls.length;
  } finally {
    get.mockRestore();
  }
}

describe('a remote pod relabelled, with many policies selecting a local pod', () => {
  it('costs the same memo look-ups with 20 policies as with 400', () => {
    expect(lookupsOfChange(400)).toBe(lookupsOfChange(20));
  });
});
