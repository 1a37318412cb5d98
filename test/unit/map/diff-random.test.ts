// `map --diff` reuses what a change did not touch: each node is compiled for the new cluster right after the
// old one by the same compiler (unchanged objects carried over, each side giving the other its delta), the new
// cluster keeps the old one's profiles and address classes where the objects are the same, and only the rows
// and columns of the classes a change moved are looked at (diff.ts sameJudging). All of it is checked here
// against an oracle without them: two maps built on their own, each with every edge, compared pod class by pod
// class. Seeded random clusters and changes (policies replaced, added or removed, pods relabelled, added or
// removed, named ports moved, namespace labels moved), IPv4 and IPv6.

import { describe, expect, it } from '@jest/globals';
import { buildMap } from '../../../src/map/build.js';
import { diffClusters } from '../../../src/map/diff.js';
import { mapAllows, PROTOCOLS, type ConnectivityMap, type PortRange } from '../../../src/map/model.js';
import { joinRanges, subtract } from '../../../src/map/ports.js';
import { defaultNodeSettings, type ClusterSnapshot, type IpFamily } from '../../../src/model/index.js';
import { randomCluster } from '../compile/random-cluster.js';

const NODES = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'], addresses: ['192.168.0.1'] },
  { name: 'node-2', podCidrs: ['10.244.2.0/24', 'fd00:2::/64'], addresses: ['192.168.0.2'] },
];
const settingsFor = (node: string) => defaultNodeSettings(node, NODES.find((n) => n.name === node)?.podCidrs ?? []);

/** A seeded change of `base`: policies from another random cluster mixed in, and some pods and namespaces relabelled. */
function changed(base: ClusterSnapshot, seed: number): ClusterSnapshot {
  const other = randomCluster(seed + 1000);
  const pick = (i: number) => (seed * 31 + i * 17) % 7;
  const policies = [
    ...base.policies.filter((_, i) => pick(i) !== 0),
    ...other.policies.filter((_, i) => pick(i + 3) < 2).map((p) => ({ ...p, name: `${p.name}-new` })),
  ];
  // Some pods relabelled, some gone, and a few new ones (copies of others, on their node, at unused addresses).
  const kept = base.pods.filter((_, i) => pick(i + 7) !== 1);
  const relabelled = kept.map((p, i) => (pick(i + 5) === 0 ? { ...p, labels: { ...p.labels, app: 'moved' } } : p));
  // Some named ports moved (80 to 81): a named-port set's members change while the chains that match it do not.
  const moved = relabelled.map((p, i) =>
    pick(i + 19) === 0 && p.ports.some((c) => c.name)
      ? { ...p, ports: p.ports.map((c) => (c.name ? { ...c, containerPort: c.containerPort + 1 } : c)) }
      : p,
  );
  const added = base.pods
    .filter((p, i) => pick(i + 13) === 2 && !p.hostNetwork)
    .map((p, k) => {
      const n = p.nodeName === 'node-1' ? 1 : 2;
      return { ...p, name: `${p.name}-new`, ips: [`10.244.${n}.${200 + k}`, `fd00:${n}::${200 + k}`] };
    });
  const pods = [...moved, ...added];
  const namespaces = base.namespaces.map((n, i) => (pick(i + 11) === 0 ? { ...n, labels: { ...n.labels, team: 'z' } } : n));
  return { ...base, policies, pods, namespaces };
}

const ALL: readonly PortRange[] = PROTOCOLS.map((proto) => ({ proto, from: 1, to: 65535 }));

/** The ports a map allows from one group to another: its edge, or every port from open egress to open ingress. */
function allowedPorts(map: ConnectivityMap, from: string, to: string): PortRange[] {
  const edge = map.edges.find((e) => e.from === from && e.to === to);
  if (edge) return joinRanges(edge.ports);
  return mapAllows(map, from, to, 'tcp', 1) ? [...ALL] : [];
}

/** What the two maps say changed, per pair of new groups, from their edges alone. */
function oracle(before: ConnectivityMap, after: ConnectivityMap): Map<string, { opened: PortRange[]; closed: PortRange[] }> {
  const memberOf = (map: ConnectivityMap) => {
    const out = new Map<string, string>();
    for (const g of map.groups) {
      for (const pod of g.pods) out.set(pod, g.id);
      for (const block of g.cidrs ?? []) out.set(`outside ${block}`, g.id);
    }
    return out;
  };
  const [was, now] = [memberOf(before), memberOf(after)];
  const members = [...now.keys()].filter((m) => was.has(m));
  const out = new Map<string, { opened: PortRange[]; closed: PortRange[] }>();
  for (const a of members)
    for (const b of members) {
      if (a === b) continue;
      const old = allowedPorts(before, was.get(a)!, was.get(b)!);
      const neu = allowedPorts(after, now.get(a)!, now.get(b)!);
      const opened = subtract(neu, old);
      const closed = subtract(old, neu);
      if (opened.length === 0 && closed.length === 0) continue;
      const key = `${now.get(a)} -> ${now.get(b)}`;
      const entry = out.get(key) ?? { opened: [], closed: [] };
      out.set(key, { opened: joinRanges([...entry.opened, ...opened]), closed: joinRanges([...entry.closed, ...closed]) });
    }
  return out;
}

describe('map --diff against two maps built on their own', () => {
  for (const family of [4, 6] as const satisfies readonly IpFamily[]) {
    it(`IPv${family}: the same connections opened and closed over 30 seeded changes`, () => {
      let compared = 0;
      for (let seed = 1; seed <= 30; seed++) {
        const before: ClusterSnapshot = { ...randomCluster(seed), nodes: NODES };
        const after = changed(before, seed);
        const { diff } = diffClusters({ snapshot: before, settingsFor }, { snapshot: after, settingsFor }, { family });
        // The oracle's maps are cut at the blocks either side names, as the diff's are.
        const m0 = buildMap(before, settingsFor, { family });
        const m1 = buildMap(after, settingsFor, { family });
        const cidrs = [...m0.prepared.addresses.netCidrs(), ...m1.prepared.addresses.netCidrs()];
        const expected = oracle(
          buildMap(before, settingsFor, { family, extraCidrs: cidrs }).map,
          buildMap(after, settingsFor, { family, extraCidrs: cidrs }).map,
        );
        const got = new Map(diff.changes.map((c) => [`${c.from} -> ${c.to}`, { opened: [...c.opened], closed: [...c.closed] }]));
        expect({ seed, changes: Object.fromEntries(got) }).toEqual({ seed, changes: Object.fromEntries(expected) });
        compared += expected.size;
      }
      // The changes do open and close connections (the comparison is not of two empty lists).
      expect(compared).toBeGreaterThan(30);
    });
  }
});
