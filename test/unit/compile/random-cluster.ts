// Seeded random clusters for the verdict comparison: small label and port vocabularies so selectors,
// named ports and ipBlocks collide often. Only valid policies (the oracle does not validate ports or
// selectors, so an invalid one would make the two disagree by design, not by bug).

import type {
  ClusterSnapshot,
  LabelSelector,
  NetworkPolicy,
  PolicyPeer,
  PolicyPort,
  PolicyRule,
  PolicyType,
  Pod,
} from '../../../src/model/index.js';
import {
  blockPeer,
  containerPorts,
  egress,
  expr,
  hostNetwork,
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPeer,
  nsPodPeer,
  onNode,
  phase,
  podPeer,
  rule,
  sctp,
  sel,
  selectPods,
  snapshot,
  tcp,
  types,
  udp,
} from '../../helpers/builders.js';

/** mulberry32: tiny, seedable, good enough to pick from lists. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const chance = (p: number): boolean => next() < p;
  return { int, pick, chance };
}

const NAMESPACES = ['a', 'b', 'c'];
const APPS = ['w', 'd', 'c'];
const BLOCKS: readonly (() => PolicyPeer)[] = [
  () => blockPeer('10.244.0.0/16', '10.244.1.0/25'),
  () => blockPeer('10.244.2.0/24'),
  () => blockPeer('0.0.0.0/0'),
  () => blockPeer('192.168.0.0/16', '192.168.1.0/24'),
  () => blockPeer('10.244.1.7/32'),
  () => blockPeer('10.244.1.3/30'),
  () => blockPeer('fd00::/16', 'fd00:2::/64'),
];

export function randomCluster(seed: number): ClusterSnapshot {
  const r = rng(seed);
  const selector = (keys: 'pod' | 'ns'): LabelSelector => {
    const [key, values] = keys === 'pod' ? (r.chance(0.7) ? ['app', APPS] : ['tier', ['1', '2']]) : ['team', ['x', 'y']];
    switch (r.int(6)) {
      case 0:
        return sel();
      case 1:
        return sel({ [key]: r.pick(values) });
      case 2:
        return sel({}, [expr(key, 'In', r.pick(values), r.pick(values))]);
      case 3:
        return sel({}, [expr(key, 'NotIn', r.pick(values))]);
      case 4:
        return sel({}, [expr(key, r.pick(['Exists', 'DoesNotExist'] as const))]);
      default:
        return sel({ [key]: r.pick(values) }, [expr(keys === 'pod' ? 'tier' : 'team', 'Exists')]);
    }
  };
  const peer = (): PolicyPeer =>
    r.pick<() => PolicyPeer>([
      () => podPeer(selector('pod')),
      () => nsPeer(selector('ns')),
      () => nsPodPeer(selector('ns'), selector('pod')),
      () => r.pick(BLOCKS)(),
    ])();
  const port = (): PolicyPort =>
    r.pick<() => PolicyPort>([
      () => tcp(r.pick([80, 8080, 443])),
      () => tcp(8000, 8100),
      () => udp(),
      () => udp(53),
      () => tcp('http'),
      () => udp('dns'),
      () => sctp(80),
      () => tcp(),
    ])();
  const list = <T>(make: () => T): T[] | undefined =>
    r.chance(0.25) ? undefined : r.chance(0.1) ? [] : Array.from({ length: 1 + r.int(2) }, make);
  const rules = (): PolicyRule[] => Array.from({ length: r.int(3) }, () => rule(list(peer), list(port)));

  const namespaces = NAMESPACES.map((n) => makeNamespace(n, r.chance(0.8) ? { team: r.pick(['x', 'y']) } : {}));
  const next = { 'node-1': 2, 'node-2': 2 };
  const pods: Pod[] = Array.from({ length: 14 }, (_, i) => {
    const node = r.pick(['node-1', 'node-2'] as const);
    const host = next[node]++;
    const v4 = `10.244.${node === 'node-1' ? 1 : 2}.${host}`;
    const podLabels: Record<string, string> = { app: r.pick(APPS), ...(r.chance(0.5) ? { tier: r.pick(['1', '2']) } : {}) };
    const named = [
      ...(r.chance(0.5)
        ? [{ name: 'http', containerPort: r.pick([80, 8080, 8090]), protocol: r.pick(['TCP', 'TCP', 'UDP'] as const) }]
        : []),
      ...(r.chance(0.3) ? [{ name: 'dns', containerPort: 53, protocol: 'UDP' as const }] : []),
    ];
    const extra = r.int(10);
    return makePod(
      r.pick(NAMESPACES),
      `p${i}`,
      v4,
      onNode(node),
      labels(podLabels),
      containerPorts(...named),
      ...(r.chance(0.3) ? [ips(v4, `fd00:${node === 'node-1' ? 1 : 2}::${host}`)] : []),
      ...(extra === 0 ? [phase('Succeeded')] : extra === 1 ? [hostNetwork, ips(`192.168.50.${i}`)] : []),
    );
  });
  const policies: NetworkPolicy[] = Array.from({ length: 2 + r.int(4) }, (_, i) => {
    const t = r.pick<readonly PolicyType[] | undefined>([undefined, undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']]);
    return makePolicy(
      r.pick(NAMESPACES),
      `pol${i}`,
      selectPods(selector('pod')),
      ingress(...rules()),
      egress(...rules()),
      ...(t ? [types(...t)] : []),
    );
  });
  return snapshot({ namespaces, pods, policies });
}
