// `why` and `trace` in audit mode: each side states the verdict that stands (audited objects are not
// enforced) and, where the audited objects would decide otherwise, what they would do and which they are.

import {
  defaultNodeSettings,
  type ClusterNode,
  type ClusterSnapshot,
  type NetworkPolicy,
  type ClusterNetworkPolicy,
} from '../../../src/model/index.js';
import { whyConnection, formatAnswer } from '../../../src/why/index.js';
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
  snapshot,
  types,
} from '../../helpers/builders.js';
import { cnp, cRule, nsPeerC, nsSubject } from '../../helpers/cnp-builders.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-a', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] },
  { name: 'node-b', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'] },
];
const audited = <T extends NetworkPolicy | ClusterNetworkPolicy>(o: T): T => ({ ...o, audit: true });

const shop = (policies: NetworkPolicy[], clusterPolicies: ClusterNetworkPolicy[] = []): ClusterSnapshot =>
  snapshot({
    nodes: [...NODES],
    namespaces: [makeNamespace('shop', { team: 'shop' }), makeNamespace('ops', { team: 'ops' })],
    pods: [
      makePod('shop', 'web', '10.244.1.10', onNode('node-a'), labels({ app: 'web' })),
      makePod('shop', 'db', '10.244.2.20', onNode('node-b'), labels({ app: 'db' })),
      makePod('ops', 'api', '10.244.1.30', onNode('node-a'), labels({ app: 'api' })),
    ],
    policies,
    clusterPolicies,
  });

const why = (snap: ClusterSnapshot, src: string, dst: string) =>
  whyConnection(snap, (node) => defaultNodeSettings(node, snap.nodes.find((n) => n.name === node)?.podCidrs ?? []), {
    src,
    dst,
    proto: 'tcp',
    port: 5432,
  });

const defaultDeny = audited(makePolicy('shop', 'default-deny', types('Ingress')));

describe('why in audit mode', () => {
  it('allowed now; the audited default-deny would drop it', () => {
    const a = why(shop([defaultDeny]), 'ops/api', 'shop/db');
    expect(a.verdict).toBe('allowed');
    const ingressSide = a.sides.find((s) => s.direction === 'ingress')!;
    expect(ingressSide.verdict).toBe('allowed');
    expect(ingressSide.audit).toBe('would be DROPPED by policy shop/default-deny (audit)');
    expect(formatAnswer(a).replace(/\s+/g, ' ')).toContain('allowed now; would be DROPPED by policy shop/default-deny (audit)');
    // The egress side has nothing audited.
    expect(a.sides.find((s) => s.direction === 'egress')!.audit).toBeUndefined();
  });

  it('a connection the audited policy also allows has no audit note', () => {
    const allowWeb = audited(
      makePolicy('shop', 'db-from-web', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))]))),
    );
    const a = why(shop([defaultDeny, allowWeb]), 'shop/web', 'shop/db');
    expect(a.verdict).toBe('allowed');
    expect(a.sides.every((s) => s.audit === undefined)).toBe(true);
    // ops/api is still allowed now, and would be dropped by both.
    const b = why(shop([defaultDeny, allowWeb]), 'ops/api', 'shop/db');
    expect(b.sides.find((s) => s.direction === 'ingress')!.audit).toBe(
      'would be DROPPED by policy shop/db-from-web (audit), policy shop/default-deny (audit)',
    );
  });

  it('dropped now; an audited allow would let it in', () => {
    const enforced = makePolicy('shop', 'db-from-web', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))])));
    const opening = audited(
      makePolicy('shop', 'db-from-ops', selectPods(sel({ app: 'db' })), ingress(rule([{ namespaceSelector: sel({ team: 'ops' }) }]))),
    );
    const a = why(shop([enforced, opening]), 'ops/api', 'shop/db');
    expect(a.verdict).toBe('dropped');
    const side = a.sides.find((s) => s.direction === 'ingress')!;
    expect(side.verdict).toBe('dropped');
    expect(side.audit).toBe('would be ALLOWED by policy shop/db-from-ops (audit)');
    expect(formatAnswer(a).replace(/\s+/g, ' ')).toContain('dropped now; would be ALLOWED by policy shop/db-from-ops (audit)');
  });

  it('the side that stands is attributed to the enforced policy, never to an audited one consulted after it', () => {
    // Chains are consulted in policy key order: the audited aa-… before the enforced zz-… in the second pass.
    const fromOps = (name: string) =>
      makePolicy('shop', name, selectPods(sel({ app: 'db' })), ingress(rule([{ namespaceSelector: sel({ team: 'ops' }) }])));
    const a = why(shop([audited(fromOps('aa-audited')), fromOps('zz-enforced')]), 'ops/api', 'shop/db');
    const side = a.sides.find((s) => s.direction === 'ingress')!;
    expect(side).toMatchObject({ verdict: 'allowed', policy: 'shop/zz-enforced' });
    expect(side.audit).toBeUndefined();
  });

  it('a drop names only the enforced policies that isolate the pod', () => {
    const enforced = makePolicy('shop', 'db-from-web', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))])));
    const a = why(shop([enforced, defaultDeny]), 'ops/api', 'shop/db');
    const side = a.sides.find((s) => s.direction === 'ingress')!;
    expect(side.verdict).toBe('dropped');
    expect(side.because).toContain('shop/db is isolated for ingress by shop/db-from-web;');
  });

  it('an audited Admin Deny: allowed now, would be dropped by the ClusterNetworkPolicy', () => {
    const guard = audited(
      cnp('guard', 'Admin', 10, nsSubject(sel({ team: 'shop' })), { ingress: [cRule('Deny', [nsPeerC(sel({ team: 'ops' }))])] }),
    );
    const a = why(shop([], [guard]), 'ops/api', 'shop/db');
    expect(a.verdict).toBe('allowed');
    expect(a.sides.find((s) => s.direction === 'ingress')!.audit).toBe('would be DROPPED by ClusterNetworkPolicy guard (audit)');
  });

  it('an enforced Admin Deny beside an audited ClusterNetworkPolicy: the drop is the Deny, with flow logs on or off', () => {
    const subject = nsSubject(sel({ team: 'shop' }));
    const guard = audited(cnp('guard', 'Admin', 5, subject, { ingress: [cRule('Deny', [nsPeerC(sel({ team: 'nobody' }))])] }));
    const lock = cnp('lock', 'Admin', 10, subject, { ingress: [cRule('Deny', [nsPeerC(sel({ team: 'ops' }))], undefined, 'no-ops')] });
    const snap = shop([], [guard, lock]);
    for (const flowLog of [true, false]) {
      const a = whyConnection(
        snap,
        (node) => ({
          ...defaultNodeSettings(node, snap.nodes.find((n) => n.name === node)?.podCidrs ?? []),
          ...(flowLog ? {} : { flowLog: undefined }),
        }),
        { src: 'ops/api', dst: 'shop/db', proto: 'tcp', port: 5432 },
      );
      // Not "isolated": no NetworkPolicy selects shop/db; the enforced pass's Deny decided.
      expect(a.sides.find((s) => s.direction === 'ingress')).toMatchObject({ verdict: 'dropped', policy: 'ClusterNetworkPolicy lock' });
      expect(formatAnswer(a).replace(/\s+/g, ' ')).toContain('ClusterNetworkPolicy lock (Admin tier) rule ingress:0 no-ops Deny');
    }
  });

  it('without the annotation the same policy drops it, and there is no audit note', () => {
    const { audit: _a, ...enforced } = defaultDeny;
    const a = why(shop([enforced]), 'ops/api', 'shop/db');
    expect(a.verdict).toBe('dropped');
    expect(a.sides.every((s) => s.audit === undefined)).toBe(true);
  });
});
