import { firstPacketBound } from '../../../scripts/bench-lib/first-packet.js';
import { compile } from '../../../src/compile/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
} from '../../helpers/builders.js';

describe('firstPacketBound', () => {
  it('counts dispatch up to the matching goto, the whole workload chain and every policy chain it jumps to', () => {
    const cluster = snapshot({
      namespaces: [makeNamespace('prod')],
      pods: [makePod('prod', 'db', '10.244.1.5', labels({ app: 'db' })), makePod('prod', 'api', '10.244.1.6', labels({ app: 'api' }))],
      policies: [
        makePolicy('prod', 'db-from-api', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'api' }))], [tcp(5432)]))),
      ],
    });
    const state = compile(cluster, settings()).desired.v4;
    const bound = firstPacketBound(state);
    // nf-FORWARD: two established-flow shortcuts (a first packet is NEW), clear mark, egress dispatch, ingress dispatch, accept.
    expect(bound.forward).toBe(6);
    // Ingress of db: dispatch lists pods by address, db (.5) first (1); workload chain: ct established, ct invalid,
    // clear mark, self, jump, return-if-accepted, flow log, drop (8); the policy chain's single set rule (1).
    expect(bound.ingress).toMatchObject({
      pod: 'prod/db',
      dispatch: 1,
      dispatchDepth: 1,
      workload: 8,
      policyChains: 1,
      policies: 1,
      setMatches: 1,
      total: 10,
    });
    // Egress is not isolated; the longest dispatch scan is api's (2), then ct, ct, clear, self, set accept bit (5).
    expect(bound.egress).toMatchObject({ pod: 'prod/api', dispatch: 2, workload: 5, policyChains: 0, policies: 0, total: 7 });
    expect(bound.total).toBe(6 + bound.ingress!.total + bound.egress!.total);
  });

  it('has no sides when the node has no pods', () => {
    const bound = firstPacketBound(compile(snapshot({}), settings()).desired.v4);
    expect(bound).toMatchObject({ egress: undefined, ingress: undefined, total: 6 });
  });
});
