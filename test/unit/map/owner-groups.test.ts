// Grouping by owner (the default): a pod's controller is its workload, so two workloads with one label set
// are two groups, a rollout's two ReplicaSets are one Deployment; still exact, since a workload is cut where
// the rules tell its pods apart (and the map says why). `--group-by labels` groups by label set as before.

import { describe, expect, it } from '@jest/globals';
import { buildMap, groupOfPod } from '../../../src/map/index.js';
import { defaultNodeSettings, type ClusterSnapshot } from '../../../src/model/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  onNode,
  ownedBy,
  podPeer,
  rule,
  sel,
  selectPods,
  snapshot,
  tcp,
} from '../../helpers/builders.js';

const NODES = [{ name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] }];
const settingsFor = (node: string) => defaultNodeSettings(node, NODES.find((n) => n.name === node)?.podCidrs ?? []);
const mapOf = (s: ClusterSnapshot, groupBy?: string) => buildMap(s, settingsFor, groupBy !== undefined ? { groupBy } : {}).map;
const fe = { app: 'web', tier: 'frontend' };

// shop/web (a Deployment mid-rollout: two ReplicaSets) and shop/web-canary (a StatefulSet) share their labels.
const cluster = (extra: Parameters<typeof snapshot>[0]['policies'] = []) =>
  snapshot({
    nodes: NODES,
    namespaces: [makeNamespace('shop')],
    pods: [
      makePod('shop', 'web-h1-a', '10.244.1.10', onNode('n1'), labels({ ...fe, 'pod-template-hash': 'h1' }), ownedBy('Deployment', 'web')),
      makePod('shop', 'web-h2-b', '10.244.1.11', onNode('n1'), labels({ ...fe, 'pod-template-hash': 'h2' }), ownedBy('Deployment', 'web')),
      makePod('shop', 'canary-0', '10.244.1.12', onNode('n1'), labels(fe), ownedBy('StatefulSet', 'web-canary')),
      makePod(
        'shop',
        'db-0',
        '10.244.1.20',
        onNode('n1'),
        labels({ app: 'db', 'statefulset.kubernetes.io/pod-name': 'db-0' }),
        ownedBy('StatefulSet', 'db'),
      ),
      makePod(
        'shop',
        'db-1',
        '10.244.1.21',
        onNode('n1'),
        labels({ app: 'db', 'statefulset.kubernetes.io/pod-name': 'db-1' }),
        ownedBy('StatefulSet', 'db'),
      ),
      makePod('shop', 'debug', '10.244.1.30', onNode('n1'), labels({ app: 'toolbox' })),
    ],
    policies: extra,
  });

describe('grouping by owner', () => {
  it('is the default: one group per controller, a rollout one Deployment, an ownerless pod by its labels', () => {
    const map = mapOf(cluster());
    expect(groupOfPod(map, 'shop/web-h1-a')).toMatchObject({
      id: 'shop/web',
      owner: { kind: 'Deployment', name: 'web' },
      pods: ['shop/web-h1-a', 'shop/web-h2-b'],
    });
    expect(groupOfPod(map, 'shop/canary-0')).toMatchObject({ id: 'shop/web-canary', pods: ['shop/canary-0'] });
    expect(groupOfPod(map, 'shop/db-0')?.pods).toEqual(['shop/db-0', 'shop/db-1']);
    expect(groupOfPod(map, 'shop/debug')).toMatchObject({ id: 'shop/toolbox', pods: ['shop/debug'] });
    expect(groupOfPod(map, 'shop/debug')?.owner).toBeUndefined();
    expect(map.splits).toEqual([]);
  });

  it('--group-by labels joins the two workloads with one label set', () => {
    const map = mapOf(cluster(), 'labels');
    expect(groupOfPod(map, 'shop/web-h1-a')?.pods).toEqual(['shop/canary-0', 'shop/web-h1-a', 'shop/web-h2-b']);
    expect(groupOfPod(map, 'shop/web-h1-a')?.owner).toBeUndefined();
  });

  it('stays exact: an owner whose pods a policy tells apart splits, and the map says why', () => {
    // "podSelector … selects the grouping of pods to which the policy applies": db-0 only.
    const map = mapOf(
      cluster([
        makePolicy(
          'shop',
          'db-0-from-web',
          selectPods(sel({ 'statefulset.kubernetes.io/pod-name': 'db-0' })),
          ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(5432)])),
        ),
      ]),
    );
    expect(map.splits).toEqual([
      {
        workload: 'shop/db',
        groups: ['shop/db', 'shop/db#2'],
        why: 'their ingress is judged differently (policies: shop/db-0-from-web / none)',
      },
    ]);
    expect(groupOfPod(map, 'shop/db-0')?.pods).toEqual(['shop/db-0']);
    expect(groupOfPod(map, 'shop/db-1')?.pods).toEqual(['shop/db-1']);
  });

  it('names two owners of one name in a namespace by kind and name', () => {
    const s = cluster();
    const twin = makePod('shop', 'web-0', '10.244.1.40', onNode('n1'), labels(fe), ownedBy('StatefulSet', 'web'));
    const map = mapOf({ ...s, pods: [...s.pods, twin] });
    expect(groupOfPod(map, 'shop/web-0')?.id).toBe('shop/StatefulSet/web');
    expect(groupOfPod(map, 'shop/web-h1-a')?.id).toBe('shop/Deployment/web');
  });
});
