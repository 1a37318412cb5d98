// `why` across the cluster: which nodes judge a connection, what each side decided, and the closest rule.
// Each case's verdict is written from the spec and also held against the spec oracle (test/helpers/oracle.ts,
// independent of src/compile); cells with a node address are judged by the spec sentence the oracle does
// not model ("traffic to and from the node where a Pod is running is always allowed").

import { defaultNodeSettings, type ClusterNode, type ClusterSnapshot, type NodeSettings } from '../../../src/model/index.js';
import { whyConnection, type Answer, type CompiledRules, type WhyQuery } from '../../../src/why/index.js';
import {
  containerPorts,
  egress,
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
  tcp,
  types,
} from '../../helpers/builders.js';
import { cnp, cRule, cTcp, nsPeerC, nsSubject } from '../../helpers/cnp-builders.js';
import { Oracle } from '../../helpers/oracle.js';
import { randomCluster } from '../compile/random-cluster.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-a', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'], addresses: ['192.168.0.1'] },
  { name: 'node-b', podCidrs: ['10.244.2.0/24', 'fd00:2::/64'], addresses: ['192.168.0.2'] },
];

function settingsFor(snap: ClusterSnapshot) {
  const asked: string[] = [];
  const fn = (node: string): NodeSettings => {
    asked.push(node);
    return defaultNodeSettings(node, snap.nodes.find((n) => n.name === node)?.podCidrs ?? []);
  };
  return { fn, asked };
}

const why = (snap: ClusterSnapshot, q: Omit<WhyQuery, 'proto'> & { proto?: WhyQuery['proto'] }): Answer =>
  whyConnection(snap, settingsFor(snap).fn, { proto: 'tcp', ...q });

const shop = snapshot({
  nodes: NODES,
  namespaces: [makeNamespace('shop', { team: 'shop' }), makeNamespace('ops', { team: 'ops' })],
  pods: [
    makePod('shop', 'web', '10.244.1.10', onNode('node-a'), labels({ app: 'web' })),
    makePod('shop', 'api', '10.244.2.11', onNode('node-b'), labels({ app: 'api' })),
    makePod(
      'shop',
      'db',
      '10.244.2.20',
      onNode('node-b'),
      labels({ app: 'db' }),
      containerPorts({ name: 'pg', containerPort: 5432, protocol: 'TCP' }),
    ),
    makePod('ops', 'api', '10.244.1.30', onNode('node-a'), labels({ app: 'api' })),
  ],
  policies: [
    makePolicy('shop', 'db-ingress', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'api' }))], [tcp(5432)]))),
    makePolicy(
      'shop',
      'web-egress',
      selectPods(sel({ app: 'web' })),
      types('Egress'),
      egress(rule([podPeer(sel({ app: 'db' }))], [tcp('pg')])),
    ),
  ],
});

interface SideWant {
  readonly node: string;
  readonly direction: 'egress' | 'ingress';
  readonly verdict: string;
  readonly policy?: string;
  readonly rule?: string;
  readonly tier?: string;
}

interface Case {
  readonly name: string;
  readonly snap: ClusterSnapshot;
  readonly q: Omit<WhyQuery, 'proto'> & { proto?: WhyQuery['proto'] };
  readonly allowed: boolean;
  readonly droppedAt?: string;
  readonly sides: readonly SideWant[];
  /** The nodes that must be compiled, and no others. */
  readonly compiles: readonly string[];
  /** The one field the closest rule differs in (its words start so). */
  readonly closest?: string;
  /** The oracle has a verdict for this cell (both ends pods or outside the cluster). */
  readonly oracle?: boolean;
}

const cases: Case[] = [
  {
    name: 'cross-node: egress allowed on the source node, ingress dropped on the destination node; closest rule differs in a label',
    snap: shop,
    q: { src: 'shop/web', dst: 'shop/db', port: 5432 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'allowed', policy: 'shop/web-egress', rule: 'egress:0', tier: 'NetworkPolicy' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped', policy: 'shop/db-ingress', tier: 'NetworkPolicy' },
    ],
    compiles: ['node-a', 'node-b'],
    closest: 'one label: app=web, not app=api',
    oracle: true,
  },
  {
    name: 'closest rule differs in a label named like an object property: the pod has none of it',
    snap: {
      ...shop,
      policies: [
        makePolicy(
          'shop',
          'db-ingress',
          selectPods(sel({ app: 'db' })),
          ingress(rule([podPeer(sel({ constructor: 'api' }))], [tcp(5432)])),
        ),
      ],
    },
    q: { src: 'shop/web', dst: 'shop/db', port: 5432 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped', policy: 'shop/db-ingress', tier: 'NetworkPolicy' },
    ],
    compiles: ['node-a', 'node-b'],
    closest: 'one label: constructor=(unset), not constructor=api',
  },
  {
    name: 'same node: walked once, on one node, both directions',
    snap: shop,
    q: { src: 'shop/api', dst: 'shop/db', port: 5432 },
    allowed: true,
    sides: [
      { node: 'node-b', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'allowed', policy: 'shop/db-ingress', rule: 'ingress:0' },
    ],
    compiles: ['node-b'],
    oracle: true,
  },
  {
    name: 'closest rule differs in the port',
    snap: shop,
    q: { src: 'shop/api', dst: 'shop/db', port: 5433 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-b', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped', policy: 'shop/db-ingress' },
    ],
    compiles: ['node-b'],
    closest: 'the port: 5433, not 5432',
    oracle: true,
  },
  {
    name: 'closest rule differs in the protocol',
    snap: shop,
    q: { src: 'shop/api', dst: 'shop/db', port: 5432, proto: 'udp' },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-b', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped' },
    ],
    compiles: ['node-b'],
    closest: 'the protocol: udp, not tcp',
    oracle: true,
  },
  {
    name: 'closest rule differs in the namespace (a podSelector peer alone means the policy’s namespace)',
    snap: shop,
    q: { src: 'ops/api', dst: 'shop/db', port: 5432 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped' },
    ],
    compiles: ['node-a', 'node-b'],
    closest: 'the namespace: ops, not shop',
    oracle: true,
  },
  {
    name: 'to an address outside the cluster: only the source node is walked, and its egress isolation drops it',
    snap: shop,
    q: { src: 'shop/web', dst: '8.8.8.8', port: 53, proto: 'udp' },
    allowed: false,
    droppedAt: 'node-a',
    sides: [{ node: 'node-a', direction: 'egress', verdict: 'dropped', policy: 'shop/web-egress' }],
    compiles: ['node-a'],
    oracle: true,
  },
  {
    name: 'from an address outside the cluster: only the destination node is walked',
    snap: shop,
    q: { src: '203.0.113.5', dst: 'shop/db', port: 5432 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [{ node: 'node-b', direction: 'ingress', verdict: 'dropped', policy: 'shop/db-ingress' }],
    compiles: ['node-b'],
    oracle: true,
  },
  {
    // docs/operations.md "What was dropped": an unknown address of a node's pod CIDR fails closed on that node.
    name: "from an address of a node's pod CIDR that no pod owns: that node's egress fails closed",
    snap: shop,
    q: { src: '10.244.1.99', dst: 'shop/api', port: 80 },
    allowed: false,
    droppedAt: 'node-a',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'dropped' },
      { node: 'node-b', direction: 'ingress', verdict: 'not reached' },
    ],
    compiles: ['node-a', 'node-b'],
  },
  {
    // "traffic to and from the node where a Pod is running is always allowed, regardless of the IP address of the Pod or the node"
    name: 'to its own node: INPUT, not FORWARD; NetworkPolicy always allows a pod its own node',
    snap: shop,
    q: { src: 'shop/web', dst: '192.168.0.1', port: 10250 },
    allowed: true,
    sides: [{ node: 'node-a', direction: 'egress', verdict: 'not policed' }],
    compiles: ['node-a'],
  },
  {
    // Another node's address is an ordinary destination for the pod's egress policy.
    name: "to another node's address: the source's egress isolation decides on its node",
    snap: shop,
    q: { src: 'shop/web', dst: '192.168.0.2', port: 10250 },
    allowed: false,
    droppedAt: 'node-a',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'dropped', policy: 'shop/web-egress' },
      { node: 'node-b', direction: 'ingress', verdict: 'not policed' },
    ],
    compiles: ['node-a', 'node-b'],
  },
];

// ClusterNetworkPolicy tiers: "Policy tiers are evaluated in this order: Admin, NetworkPolicy, Baseline."
const tiers = snapshot({
  ...shop,
  clusterPolicies: [
    cnp('admin-deny-ops', 'Admin', 10, nsSubject(sel({ team: 'shop' })), {
      ingress: [cRule('Deny', [nsPeerC(sel({ team: 'ops' }))], [cTcp(80)], 'no-ops')],
    }),
    cnp('baseline-ops', 'Baseline', 10, nsSubject(sel({ team: 'ops' })), {
      ingress: [cRule('Deny', [nsPeerC(sel({ team: 'shop' }))], undefined, 'no-shop')],
    }),
    cnp('admin-allow-db', 'Admin', 5, nsSubject(sel({ team: 'shop' })), {
      ingress: [cRule('Accept', [nsPeerC(sel({ team: 'ops' }))], [cTcp(5432)], 'ops-db')],
    }),
  ],
});

cases.push(
  {
    name: 'CNP Admin tier denies, cross-node',
    snap: tiers,
    q: { src: 'ops/api', dst: 'shop/api', port: 80 },
    allowed: false,
    droppedAt: 'node-b',
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'dropped', policy: 'ClusterNetworkPolicy admin-deny-ops', tier: 'Admin' },
    ],
    compiles: ['node-a', 'node-b'],
    oracle: true,
  },
  {
    name: 'CNP Admin Accept wins over the NetworkPolicy that would isolate',
    snap: tiers,
    q: { src: 'ops/api', dst: 'shop/db', port: 5432 },
    allowed: true,
    sides: [
      { node: 'node-a', direction: 'egress', verdict: 'allowed' },
      { node: 'node-b', direction: 'ingress', verdict: 'allowed', policy: 'ClusterNetworkPolicy admin-allow-db', tier: 'Admin' },
    ],
    compiles: ['node-a', 'node-b'],
    oracle: true,
  },
  {
    name: 'CNP Baseline tier denies a pod no NetworkPolicy selects, same node',
    snap: tiers,
    q: { src: 'shop/web', dst: 'ops/api', port: 8080 },
    allowed: false,
    droppedAt: 'node-a',
    sides: [
      // web's egress policy allows only db: dropped on egress first.
      { node: 'node-a', direction: 'egress', verdict: 'dropped', policy: 'shop/web-egress' },
      { node: 'node-a', direction: 'ingress', verdict: 'not reached' },
    ],
    compiles: ['node-a'],
    oracle: true,
  },
  {
    name: 'CNP Baseline tier denies, cross-node, the source not isolated',
    snap: tiers,
    q: { src: 'shop/api', dst: 'ops/api', port: 8080 },
    allowed: false,
    droppedAt: 'node-a',
    sides: [
      { node: 'node-b', direction: 'egress', verdict: 'allowed' },
      { node: 'node-a', direction: 'ingress', verdict: 'dropped', policy: 'ClusterNetworkPolicy baseline-ops', tier: 'Baseline' },
    ],
    compiles: ['node-a', 'node-b'],
    oracle: true,
  },
);

describe('why: one connection across the cluster', () => {
  it.each(cases.map((c) => ({ ...c, title: c.name })))('$title', (c) => {
    const s = settingsFor(c.snap);
    const answer = whyConnection(c.snap, s.fn, { proto: 'tcp', ...c.q });
    if (c.oracle) {
      const ip = (ref: string) => c.snap.pods.find((p) => `${p.namespace}/${p.name}` === ref)?.ips[0] ?? ref;
      const spec = new Oracle(c.snap).allows({ src: ip(c.q.src), dst: ip(c.q.dst), proto: c.q.proto ?? 'tcp', port: c.q.port });
      expect(spec).toBe(c.allowed);
    }
    expect(answer.verdict).toBe(c.allowed ? 'allowed' : 'dropped');
    expect(answer.droppedAt).toBe(c.droppedAt);
    expect(answer.sides.map((x) => [x.node, x.direction, x.verdict])).toEqual(c.sides.map((x) => [x.node, x.direction, x.verdict]));
    c.sides.forEach((want, i) => expect(answer.sides[i]).toMatchObject(want));
    expect([...new Set(s.asked)].sort()).toEqual([...c.compiles].sort());
    expect(answer.compiled.slice().sort()).toEqual([...c.compiles].sort());
    if (c.closest !== undefined)
      expect(answer.sides.flatMap((x) => x.closest ?? []).map((x) => x.differs)).toEqual([expect.stringContaining(c.closest)]);
    else expect(answer.sides.flatMap((x) => x.closest ?? [])).toEqual([]);
  });

  it('questions sharing a cache compile each node once and answer as they would alone', () => {
    const s = settingsFor(shop);
    const compiled: CompiledRules = new Map();
    const questions: WhyQuery[] = [
      { src: 'shop/web', dst: 'shop/db', proto: 'tcp', port: 5432 },
      { src: 'ops/api', dst: 'shop/web', proto: 'tcp', port: 80 },
      { src: 'shop/api', dst: 'shop/db', proto: 'tcp', port: 5432 },
    ];
    const answers = questions.map((q) => whyConnection(shop, s.fn, q, compiled));
    // One compiled ruleset per node for all three questions (IPv4 only here).
    expect(compiled.size).toBe(2);
    answers.forEach((answer, i) => expect(answer).toEqual(whyConnection(shop, settingsFor(shop).fn, questions[i]!)));
    // Each answer names the nodes it consulted, not every node the cache holds.
    expect(answers.map((a) => a.compiled.slice().sort())).toEqual([['node-a', 'node-b'], ['node-a'], ['node-b']]);
  });

  it('names the pods, nodes and rules in words', () => {
    const answer = why(shop, { src: 'shop/web', dst: 'shop/db', port: 5432 });
    const [egressSide, ingressSide] = answer.sides;
    expect(egressSide!.because).toBe('NetworkPolicy shop/web-egress rule egress:0 (to app=db on tcp/pg)');
    expect(ingressSide!.because).toBe('shop/db is isolated for ingress by shop/db-ingress; no rule admits shop/web (app=web) on tcp/5432');
    expect(ingressSide!.closest).toEqual([
      { policy: 'shop/db-ingress', rule: 'ingress:0', admits: 'app=api on tcp/5432', differs: 'one label: app=web, not app=api' },
    ]);
  });

  it('a rule two fields away is no closest rule', () => {
    // ops/api -> shop/db:5433 misses ingress:0 (app=api from shop on tcp/5432) in the namespace and the port.
    const answer = why(shop, { src: 'ops/api', dst: 'shop/db', port: 5433 });
    expect(answer.verdict).toBe('dropped');
    expect(answer.sides.flatMap((s) => s.closest ?? [])).toEqual([]);
  });

  it('refuses what it cannot place: an unknown pod, two addresses outside the cluster, no common family', () => {
    expect(() => why(shop, { src: 'shop/nope', dst: 'shop/db', port: 1 })).toThrow('pod shop/nope is not in the cluster');
    expect(() => why(shop, { src: '8.8.8.8', dst: '1.1.1.1', port: 1 })).toThrow('neither 8.8.8.8 nor 1.1.1.1 is a pod');
    expect(() => why(shop, { src: 'shop/web', dst: 'fd00:2::5', port: 1 })).toThrow('no IP family in common');
  });
});

describe('why agrees with the spec oracle on random clusters, every pod pair', () => {
  const alive = (p: ClusterSnapshot['pods'][number]) =>
    p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';
  it.each(Array.from({ length: 8 }, (_, i) => i + 1))('seed %i', (seed) => {
    const snap: ClusterSnapshot = { ...randomCluster(seed), nodes: NODES };
    const oracle = new Oracle(snap);
    const pods = snap.pods.filter(alive);
    const wrong: string[] = [];
    for (const [proto, port] of [
      ['tcp', 80],
      ['tcp', 8090],
      ['udp', 53],
      ['sctp', 80],
    ] as const)
      for (const a of pods)
        for (const b of pods) {
          if (a === b) continue;
          const src = a.ips[0]!;
          const dst = b.ips[0]!;
          const answer = why(snap, { src: `${a.namespace}/${a.name}`, dst: `${b.namespace}/${b.name}`, port, proto, family: 4 });
          const spec = oracle.allows({ src, dst, proto, port });
          if ((answer.verdict === 'allowed') !== spec)
            wrong.push(`${a.name} -> ${b.name} ${proto}/${port}: why ${answer.verdict}, spec ${spec ? 'allowed' : 'dropped'}`);
        }
    expect(wrong).toEqual([]);
  });
});
