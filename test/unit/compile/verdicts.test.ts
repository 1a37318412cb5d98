// The strongest compiler check: compile every node of a cluster, walk packets through the compiled chains
// (test/helpers/eval-desired.ts, over structured values) on each node they cross, and compare the verdict
// with the spec oracle for every (src, dst, proto, port) of a handful of clusters.

import { compile } from '../../../src/compile/index.js';
import type { ClusterSnapshot, DesiredState, FamilyState, L4Protocol, Pod } from '../../../src/model/index.js';
import {
  blockPeer,
  containerPorts,
  egress,
  expr,
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPeer,
  nsPodPeer,
  onNode,
  podPeer,
  rule,
  sctp,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
  types,
  udp,
} from '../../helpers/builders.js';
import { evaluate, evaluateCluster, type ClusterPacket } from '../../helpers/eval-desired.js';
import { Oracle } from '../../helpers/oracle.js';
import { cluster as shopPods } from './fixtures.js';
import { randomCluster } from './random-cluster.js';

const NODES = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] },
  { name: 'node-2', podCidrs: ['10.244.2.0/24', 'fd00:2::/64'] },
] as const;

type Probe = readonly [L4Protocol, number];

interface ClusterCase {
  readonly name: string;
  readonly snapshot: ClusterSnapshot;
  /** Addresses outside the cluster to send from and to. */
  readonly external: readonly string[];
  readonly probes: readonly Probe[];
}

const alive = (p: Pod) => p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';
const isV6 = (ip: string) => ip.includes(':');

function harness(snap: ClusterSnapshot, unknownPods: 'fail-closed' | 'fail-open') {
  const compiled = new Map<string, DesiredState>();
  const stateOf = (node: string, family: 4 | 6): FamilyState => {
    let d = compiled.get(node);
    if (!d) {
      const podCidrs = NODES.find((n) => n.name === node)?.podCidrs ?? [];
      d = compile(snap, settings({ nodeName: node, podCidrs, unknownPods })).desired;
      compiled.set(node, d);
    }
    return family === 4 ? d.v4 : d.v6;
  };
  const nodeOf = (ip: string): string | undefined =>
    snap.pods.find((p) => alive(p) && p.ips.includes(ip))?.nodeName ?? NODES.find((n) => n.podCidrs.some((c) => sameSubnet(ip, c)))?.name;
  return (pkt: ClusterPacket) => evaluateCluster(stateOf, nodeOf, pkt);
}

/** Good enough for the /24 and /64 node CIDRs above (the oracle's inCidr is the general one). */
const sameSubnet = (ip: string, cidr: string): boolean =>
  isV6(cidr) ? isV6(ip) && ip.startsWith(cidr.split('::')[0]! + ':') : ip.startsWith(cidr.split('.').slice(0, 3).join('.') + '.');

// --- clusters ------------------------------------------------------------------------------------------

const shop: ClusterCase = {
  name: 'shop: selectors, named ports, ipBlock egress, default deny, cross-namespace',
  snapshot: shopPods([
    makePolicy(
      'prod',
      'db-in',
      selectPods(sel({ app: 'db' })),
      ingress(rule([podPeer(sel({ app: 'web' }))], [tcp('pg'), tcp(9000, 9010)]), rule([nsPeer(sel({ team: 'ops' }))])),
    ),
    makePolicy(
      'prod',
      'web',
      selectPods(sel({ app: 'web' })),
      ingress(rule(undefined, [tcp('http')])),
      egress(
        rule([podPeer(sel({ app: 'db' }))], [tcp(5432)]),
        rule([blockPeer('0.0.0.0/0', '10.0.0.0/8')], [tcp(443)]),
        rule([podPeer(sel({ app: 'api' }))], [udp('dns')]),
      ),
    ),
    makePolicy('dev', 'default-deny', types('Ingress', 'Egress')),
    makePolicy('dev', 'same-ns', ingress(rule([podPeer(sel())])), egress(rule([podPeer(sel())]))),
    makePolicy('ops', 'scrape', egress(rule([nsPeer(sel())], [tcp('metrics'), tcp(9100)]))),
    makePolicy(
      'prod',
      'api-in',
      selectPods(sel({}, [expr('app', 'NotIn', 'db', 'web')])),
      ingress(rule([nsPodPeer(sel({ env: 'dev' }), sel({ app: 'tool' }))], [sctp(5432), udp()])),
    ),
  ]),
  external: ['8.8.8.8', '10.9.9.9', '192.168.1.1'],
  probes: [
    ['tcp', 5432],
    ['tcp', 9005],
    ['tcp', 9011],
    ['tcp', 8080],
    ['tcp', 8081],
    ['tcp', 443],
    ['tcp', 9100],
    ['udp', 5353],
    ['udp', 53],
    ['sctp', 5432],
  ],
};

const netPods = [
  makePod('net', 'server', '10.244.1.10', labels({ role: 'server' })),
  makePod('net', 'client', '10.244.1.20', labels({ role: 'client' })),
  makePod('net', 'low', '10.244.1.5', labels({ role: 'other' })),
  makePod('net', 'far', '10.244.2.10', onNode('node-2'), labels({ role: 'other' })),
  makePod('net', 'open', '10.244.2.20', onNode('node-2'), labels({ role: 'open' })),
];
const ipBlocks: ClusterCase = {
  name: 'ipBlocks: except, non-canonical, /32, /0, pod IPs inside blocks',
  snapshot: snapshot({
    namespaces: [makeNamespace('net')],
    pods: netPods,
    policies: [
      makePolicy(
        'net',
        'server',
        selectPods(sel({ role: 'server' })),
        ingress(
          rule([blockPeer('10.244.0.0/16', '10.244.2.0/24'), blockPeer('192.168.7.3/16')]),
          rule([blockPeer('8.8.8.8/32')], [udp(53)]),
        ),
      ),
      makePolicy(
        'net',
        'client',
        selectPods(sel({ role: 'client' })),
        types('Egress'),
        egress(rule([blockPeer('0.0.0.0/0', '10.244.1.0/25')], [tcp()])),
      ),
      makePolicy(
        'net',
        'open',
        selectPods(sel({ role: 'open' })),
        egress(rule([blockPeer('0.0.0.0/0')])),
        ingress(rule([blockPeer('10.244.1.0/28', '10.244.1.8/29')])),
      ),
    ],
  }),
  external: ['192.168.200.1', '8.8.8.8', '8.8.4.4', '172.16.0.1'],
  probes: [
    ['tcp', 80],
    ['udp', 53],
    ['sctp', 1],
  ],
};

const appPods = [
  makePod('app', 's1', '10.244.1.10', labels({ role: 'server' }), containerPorts({ name: 'web', containerPort: 8080, protocol: 'TCP' })),
  makePod(
    'app',
    's2',
    '10.244.2.10',
    onNode('node-2'),
    labels({ role: 'server' }),
    containerPorts({ name: 'web', containerPort: 9090, protocol: 'TCP' }),
  ),
  makePod('app', 's3', '10.244.1.11', labels({ role: 'server' }), containerPorts({ name: 'web', containerPort: 8080, protocol: 'UDP' })),
  makePod('app', 's4', '10.244.1.12', labels({ role: 'server' })),
  makePod('app', 'c1', '10.244.1.20', labels({ role: 'client' })),
  makePod('app', 'c2', '10.244.2.20', onNode('node-2'), labels({ role: 'client' })),
];
const namedPorts: ClusterCase = {
  name: 'named ports: per-pod numbers, protocol must match, pods without the name',
  snapshot: snapshot({
    namespaces: [makeNamespace('app')],
    pods: appPods,
    policies: [
      makePolicy('app', 'servers-in', selectPods(sel({ role: 'server' })), ingress(rule([podPeer(sel({ role: 'client' }))], [tcp('web')]))),
      makePolicy(
        'app',
        'clients-out',
        selectPods(sel({ role: 'client' })),
        types('Egress'),
        egress(rule([podPeer(sel({ role: 'server' }))], [tcp('web')]), rule(undefined, [udp('web')])),
      ),
    ],
  }),
  external: ['192.168.1.1'],
  probes: [
    ['tcp', 8080],
    ['tcp', 9090],
    ['tcp', 80],
    ['udp', 8080],
    ['udp', 9090],
  ],
};

const dsPods = [
  makePod('ds', 'a', '10.244.1.10', ips('10.244.1.10', 'fd00:1::10'), labels({ app: 'target' })),
  makePod('ds', 'b', '10.244.1.11', ips('10.244.1.11', 'fd00:1::11'), labels({ app: 'friend' })),
  makePod('ds', 'c', '10.244.2.10', onNode('node-2'), ips('10.244.2.10', 'fd00:2::10'), labels({ app: 'friend' })),
  makePod('ds', 'd', '10.244.2.9', onNode('node-2'), ips('10.244.2.9', 'fd00:2::9')),
  makePod('ds', 'e', 'fd00:2::20', onNode('node-2'), labels({ app: 'v6only' })),
];
const dualStack: ClusterCase = {
  name: 'dual-stack: v6 sets and chains, v6 ipBlocks with except',
  snapshot: snapshot({
    namespaces: [makeNamespace('ds')],
    pods: dsPods,
    policies: [
      makePolicy(
        'ds',
        'target',
        selectPods(sel({ app: 'target' })),
        ingress(rule([blockPeer('fd00:2::/64', 'fd00:2::9/128'), podPeer(sel({ app: 'friend' }))], [tcp(80)])),
        egress(rule([blockPeer('2001:db8::/32')], [tcp(443)]), rule([podPeer(sel({ app: 'friend' }))])),
      ),
      makePolicy('ds', 'v6only', selectPods(sel({ app: 'v6only' })), ingress(rule([blockPeer('fd00:1::/120')]))),
    ],
  }),
  external: ['2001:db8::1', '2001:db9::1', '8.8.8.8'],
  probes: [
    ['tcp', 80],
    ['tcp', 443],
    ['udp', 80],
  ],
};

// Even pods are dual-stack, so the v6 dispatch tree (20 local pods) is exercised too.
const crowdPods = Array.from({ length: 50 }, (_, i) => {
  const [v4, v6] =
    i < 40 ? [`10.244.1.${10 + i * 5}`, `fd00:1::${(10 + i * 5).toString(16)}`] : [`10.244.2.${i}`, `fd00:2::${i.toString(16)}`];
  return makePod(
    i % 2 ? 'blue' : 'green',
    `p${i}`,
    v4,
    onNode(i < 40 ? 'node-1' : 'node-2'),
    labels({ tier: `t${i % 4}` }),
    ...(i % 2 ? [] : [ips(v4, v6)]),
  );
});
const manyPorts = Array.from({ length: 20 }, (_, i) => tcp(1000 + 10 * i));
const crowd: ClusterCase = {
  name: 'crowd: 40 local pods (v4 and v6 dispatch trees), multiport chunks, matchExpressions',
  snapshot: snapshot({
    namespaces: [makeNamespace('blue', { color: 'blue' }), makeNamespace('green', { color: 'green' })],
    pods: crowdPods,
    policies: [
      makePolicy(
        'blue',
        'ports',
        selectPods(sel({}, [expr('tier', 'In', 't1', 't3')])),
        ingress(rule([nsPeer(sel({ color: 'green' }))], [...manyPorts, tcp(5000, 5005)])),
      ),
      makePolicy(
        'green',
        'egress',
        selectPods(sel({}, [expr('tier', 'NotIn', 't0')])),
        egress(rule([nsPodPeer(sel(), sel({}, [expr('tier', 'In', 't1', 't2')]))])),
      ),
      makePolicy('green', 'deny-t0', selectPods(sel({ tier: 't0' }))),
    ],
  }),
  external: ['1.1.1.1'],
  probes: [
    ['tcp', 1000],
    ['tcp', 1140],
    ['tcp', 1190],
    ['tcp', 1195],
    ['tcp', 5003],
    ['udp', 1000],
  ],
};

const loadError = { object: 'NetworkPolicy bad/loaded', field: 'spec.ingress', message: 'bad', severity: 'error' } as const;
const invalid: ClusterCase = {
  name: 'invalid policies fail closed; valid ones beside them still allow',
  snapshot: snapshot({
    namespaces: [makeNamespace('bad')],
    pods: [
      makePod('bad', 'x', '10.244.1.10', labels({ app: 'x' })),
      makePod('bad', 'y', '10.244.1.11', labels({ app: 'y' })),
      makePod('bad', 'z', '10.244.2.10', onNode('node-2'), labels({ app: 'z' })),
    ],
    policies: [
      makePolicy('bad', 'cidr', selectPods(sel({ app: 'x' })), ingress(rule([blockPeer('10.244.0.0/33')]), rule())),
      makePolicy('bad', 'ok', selectPods(sel({ app: 'x' })), ingress(rule([podPeer(sel({ app: 'z' }))]))),
      { ...makePolicy('bad', 'loaded', selectPods(sel({ app: 'y' })), ingress(rule())), problems: [loadError] },
    ],
  }),
  external: ['8.8.8.8'],
  probes: [['tcp', 80]],
};

// --- the comparison -------------------------------------------------------------------------------------

function packetsOf(c: ClusterCase): ClusterPacket[] {
  const podIps = c.snapshot.pods.filter(alive).flatMap((p) => p.ips);
  const endpoints = [...podIps, ...c.external];
  const out: ClusterPacket[] = [];
  for (const src of endpoints) {
    for (const dst of endpoints) {
      if (isV6(src) !== isV6(dst)) continue;
      if (!podIps.includes(src) && !podIps.includes(dst)) continue;
      for (const [proto, dport] of c.probes) out.push({ src, dst, proto, dport });
    }
  }
  return out;
}

function compare(c: ClusterCase, unknownPods: 'fail-closed' | 'fail-open') {
  const run = harness(c.snapshot, unknownPods);
  const oracle = new Oracle(c.snapshot);
  const mismatches: string[] = [];
  let allowed = 0;
  const packets = packetsOf(c);
  for (const pkt of packets) {
    const got = run(pkt);
    const want = oracle.allows({ src: pkt.src, dst: pkt.dst, proto: pkt.proto, port: pkt.dport });
    if (want) allowed++;
    if (got.allowed !== want) {
      const path = got.hops.map(
        (h) => `${h.node}[${h.packet.inIface}→${h.packet.outIface}] ${h.result.verdict}: ${h.result.path.join(' ')}`,
      );
      mismatches.push(
        `${pkt.src} → ${pkt.dst} ${pkt.proto}/${pkt.dport}: oracle ${want ? 'ALLOW' : 'DENY'}, compiled ${got.allowed ? 'ALLOW' : 'DENY'}\n  ${path.join('\n  ')}`,
      );
    }
  }
  return { mismatches, allowed, total: packets.length };
}

describe.each(['fail-closed', 'fail-open'] as const)('verdicts match the oracle (%s)', (unknownPods) => {
  it.each([shop, ipBlocks, namedPorts, dualStack, crowd, invalid].map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const { mismatches, allowed, total } = compare(c, unknownPods);
    expect(mismatches.slice(0, 20)).toEqual([]);
    // The cluster must exercise both outcomes, or the comparison proves little.
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThan(total);
  });
});

describe('verdicts match the oracle on seeded random clusters', () => {
  const seeds = Array.from({ length: 40 }, (_, i) => i + 1);
  const outcomes = { allowed: 0, total: 0 };

  it.each(seeds)('seed %i', (seed) => {
    const c: ClusterCase = {
      name: `seed ${seed}`,
      snapshot: randomCluster(seed),
      external: ['192.168.1.5', '192.168.9.9', '8.8.8.8', '2001:db8::1'],
      probes: [
        ['tcp', 80],
        ['tcp', 8080],
        ['tcp', 8090],
        ['tcp', 443],
        ['udp', 53],
        ['udp', 80],
        ['sctp', 80],
      ],
    };
    const { mismatches, allowed, total } = compare(c, 'fail-closed');
    outcomes.allowed += allowed;
    outcomes.total += total;
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  it('the seeds exercise both outcomes', () => {
    expect(outcomes.allowed).toBeGreaterThan(outcomes.total / 10);
    expect(outcomes.allowed).toBeLessThan(outcomes.total - outcomes.total / 10);
  });
});

describe('verdicts: paths through the chains', () => {
  const run = harness(shop.snapshot, 'fail-closed');

  it('same-node pod → pod runs the sender egress chain and the receiver ingress chain in one pass', () => {
    // prod/web → prod/db on 5432: web's egress allows it, db's ingress only allows the named port pg (5432).
    const ok = run({ src: '10.244.1.11', dst: '10.244.1.10', proto: 'tcp', dport: 5432 });
    expect(ok.hops).toHaveLength(1);
    expect(ok.allowed).toBe(true);
    const chains = ok.hops[0]!.result.path.map((p) => p.split('#')[0]);
    expect(chains.filter((c) => c?.startsWith('nf-fw-'))).not.toHaveLength(0);
    expect(chains.filter((c) => c?.startsWith('nf-tw-'))).not.toHaveLength(0);
    // 9011 is allowed by neither side's rules towards db: web's egress drops first.
    const denied = run({ src: '10.244.1.11', dst: '10.244.1.10', proto: 'tcp', dport: 9011 });
    expect(denied.hops[0]!.result.verdict).toBe('DROP');
  });

  it('egress allowed but ingress denies: dropped in the receiver chain', () => {
    // dev/web (isolated both ways, same-ns only) → dev/web itself is allowed; prod/bare → dev/web is not.
    const r = run({ src: '10.244.1.12', dst: '10.244.1.20', proto: 'tcp', dport: 80 });
    expect(r.allowed).toBe(false);
    const last = r.hops[0]!.result.path.at(-1)!;
    expect(last).toMatch(/^nf-tw-/);
  });

  it.each([
    { name: 'a pod reaching itself', src: '10.244.1.20', dst: '10.244.1.20', allowed: true },
    {
      name: 'established reply to a denied direction',
      src: '10.244.1.12',
      dst: '10.244.1.20',
      ctstate: 'ESTABLISHED' as const,
      allowed: true,
    },
    { name: 'INVALID packet from an open pod', src: '10.244.1.12', dst: '10.244.2.10', ctstate: 'INVALID' as const, allowed: false },
  ])('$name', ({ src, dst, ctstate, allowed }) => {
    expect(run({ src, dst, proto: 'tcp', dport: 1, ...(ctstate ? { ctstate } : {}) }).allowed).toBe(allowed);
  });

  it.each([
    {
      name: 'unknown local source, fail-closed',
      unknownPods: 'fail-closed' as const,
      src: '10.244.1.200',
      dst: '10.244.1.12',
      allowed: false,
    },
    {
      name: 'unknown local destination, fail-closed',
      unknownPods: 'fail-closed' as const,
      src: '10.244.1.12',
      dst: '10.244.1.200',
      allowed: false,
    },
    { name: 'unknown local source, fail-open', unknownPods: 'fail-open' as const, src: '10.244.1.200', dst: '10.244.1.12', allowed: true },
    {
      name: 'unknown local destination, fail-open',
      unknownPods: 'fail-open' as const,
      src: '10.244.1.12',
      dst: '10.244.1.200',
      allowed: true,
    },
    {
      name: 'unknown pod on the other node is dropped by that node',
      unknownPods: 'fail-closed' as const,
      src: '10.244.2.200',
      dst: '10.244.1.12',
      allowed: false,
    },
    {
      name: 'unknown pod on the other node, fail-open',
      unknownPods: 'fail-open' as const,
      src: '10.244.2.200',
      dst: '10.244.1.12',
      allowed: true,
    },
  ])('$name', ({ unknownPods, src, dst, allowed }) => {
    // No policies: every known pod is open, so only the unknown-pod handling decides.
    expect(harness(shopPods([]), unknownPods)({ src, dst, proto: 'tcp', dport: 80 }).allowed).toBe(allowed);
  });

  it.each([
    { name: 'external → remote pod routed through this node', src: '8.8.8.8', dst: '10.244.2.10', inIface: 'eth0', outIface: 'flannel.1' },
    {
      name: 'remote pod → remote pod routed through this node',
      src: '10.244.2.10',
      dst: '10.244.2.20',
      inIface: 'flannel.1',
      outIface: 'flannel.1',
    },
  ])('no verdict from our chains when no pod of this node is involved: $name', ({ src, dst, inIface, outIface }) => {
    const state = compile(shop.snapshot, settings({ podCidrs: ['10.244.1.0/24'] })).desired.v4;
    expect(evaluate(state, { src, dst, proto: 'tcp', dport: 80, inIface, outIface }).verdict).toBe('NONE');
  });
});
