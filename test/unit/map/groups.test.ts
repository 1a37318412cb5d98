// Grouping is exact: pods of one workload are drawn as one group only when every compiled rule treats them
// the same, and the map says why a workload splits; the outside world is cut at the blocks the policies name.
// Each expectation follows from the spec sentence quoted beside it.

import { describe, expect, it } from '@jest/globals';
import { buildMap, groupOfPod, mapAllows } from '../../../src/map/index.js';
import { defaultNodeSettings, type ClusterSnapshot } from '../../../src/model/index.js';
import {
  blockPeer,
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

const NODES = [
  { name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] },
  { name: 'n2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'] },
];
const settingsFor = (node: string) => defaultNodeSettings(node, NODES.find((n) => n.name === node)?.podCidrs ?? []);
const mapOf = (s: ClusterSnapshot, groupBy?: string) => buildMap(s, settingsFor, groupBy !== undefined ? { groupBy } : {}).map;

describe('groups', () => {
  it('keeps replicas on different nodes in one group when the rules treat them alike', () => {
    const s = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [
        makePod('shop', 'web-0', '10.244.1.10', onNode('n1'), labels({ app: 'web', 'pod-template-hash': 'a1' })),
        makePod('shop', 'web-1', '10.244.2.10', onNode('n2'), labels({ app: 'web', 'pod-template-hash': 'a1' })),
        makePod('shop', 'db', '10.244.2.20', onNode('n2'), labels({ app: 'db' })),
      ],
      policies: [makePolicy('shop', 'db', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(5432)])))],
    });
    const map = mapOf(s);
    expect(groupOfPod(map, 'shop/web-0')?.pods).toEqual(['shop/web-0', 'shop/web-1']);
    expect(map.splits).toEqual([]);
    expect(mapAllows(map, 'shop/web', 'shop/db', 'tcp', 5432)).toBe(true);
    expect(mapAllows(map, 'shop/web', 'shop/db', 'tcp', 5433)).toBe(false);
  });

  it('splits a workload whose named port resolves to different numbers, and says so', () => {
    // "port ... If this is a string, it will be the named port on the destination pod".
    const s = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [
        makePod(
          'shop',
          'api-0',
          '10.244.1.10',
          onNode('n1'),
          labels({ app: 'api' }),
          containerPorts({ name: 'http', containerPort: 80, protocol: 'TCP' }),
        ),
        makePod(
          'shop',
          'api-1',
          '10.244.2.10',
          onNode('n2'),
          labels({ app: 'api' }),
          containerPorts({ name: 'http', containerPort: 8080, protocol: 'TCP' }),
        ),
        makePod('shop', 'web', '10.244.2.20', onNode('n2'), labels({ app: 'web' })),
      ],
      policies: [makePolicy('shop', 'api', selectPods(sel({ app: 'api' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp('http')])))],
    });
    const map = mapOf(s);
    const [a, b] = [groupOfPod(map, 'shop/api-0')!, groupOfPod(map, 'shop/api-1')!];
    expect(a.id).not.toBe(b.id);
    expect(map.splits).toEqual([
      { workload: 'shop/api', groups: [a.id, b.id], why: 'a named port resolves differently (tcp:80 vs tcp:8080)' },
    ]);
    expect(mapAllows(map, 'shop/web', a.id, 'tcp', 80)).toBe(true);
    expect(mapAllows(map, 'shop/web', a.id, 'tcp', 8080)).toBe(false);
    expect(mapAllows(map, 'shop/web', b.id, 'tcp', 8080)).toBe(true);
    expect(mapAllows(map, 'shop/web', b.id, 'tcp', 80)).toBe(false);
  });

  it('splits a workload (by one label) whose pods another label makes a policy select differently', () => {
    // "podSelector selects the pods to which this NetworkPolicy object applies".
    const s = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [
        makePod('shop', 'web-0', '10.244.1.10', onNode('n1'), labels({ app: 'web' })),
        makePod('shop', 'web-1', '10.244.1.11', onNode('n1'), labels({ app: 'web', canary: 'yes' })),
      ],
      policies: [makePolicy('shop', 'canary-closed', selectPods(sel({ canary: 'yes' })), types('Ingress', 'Egress'))],
    });
    const map = mapOf(s, 'app');
    expect(map.splits).toHaveLength(1);
    expect(map.splits[0]!.why).toBe(
      'their egress is judged differently (policies: none / shop/canary-closed); their ingress is judged differently (policies: none / shop/canary-closed)',
    );
    const canary = groupOfPod(map, 'shop/web-1')!;
    expect(canary.egress).toBe('policed');
    expect(mapAllows(map, 'shop/web', canary.id, 'tcp', 80)).toBe(false);
  });

  it('by a label named like an object property (constructor): a pod without it is a workload of its own', () => {
    const s = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [
        makePod('shop', 'a', '10.244.1.10', onNode('n1'), labels({ app: 'a' })),
        makePod('shop', 'b', '10.244.1.11', onNode('n1'), labels({ app: 'b' })),
        makePod('shop', 'c', '10.244.1.12', onNode('n1'), labels({ constructor: 'x' })),
      ],
      policies: [],
    });
    const map = mapOf(s, 'constructor');
    expect(['shop/a', 'shop/b', 'shop/c'].map((pod) => groupOfPod(map, pod)!.id)).toEqual(['shop/a', 'shop/b', 'shop/x']);
  });
});

describe('the outside world', () => {
  it('is cut at an ipBlock and its except, each block judged on its own', () => {
    // "ipBlock defines policy on a particular IPBlock ... except is a slice of CIDRs that should not be included".
    const s = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [makePod('shop', 'web', '10.244.1.10', onNode('n1'), labels({ app: 'web' }))],
      policies: [
        makePolicy(
          'shop',
          'web-out',
          selectPods(sel({ app: 'web' })),
          types('Egress'),
          egress(rule([blockPeer('0.0.0.0/0', '10.0.0.0/8')], [tcp(443)])),
        ),
      ],
    });
    const map = mapOf(s);
    const outside = map.groups.filter((g) => g.kind === 'outside');
    expect(outside.map((g) => g.cidrs)).toEqual([['0.0.0.0/0 except 10.0.0.0/8'], ['10.0.0.0/8']]);
    const [world, tenNet] = outside.map((g) => g.id);
    expect(mapAllows(map, 'shop/web', world!, 'tcp', 443)).toBe(true);
    expect(mapAllows(map, 'shop/web', world!, 'tcp', 80)).toBe(false);
    expect(mapAllows(map, 'shop/web', tenNet!, 'tcp', 443)).toBe(false);
  });
});
