// Where `why` places each end: a pod by name, or by address the pod that owns it (a completed or host-network
// pod owns none: "pods that are not running" are no peer), a node's address, an address of a node's pod CIDR
// no pod owns, or the outside. The pods are looked up in an index built once per snapshot (`netfence map`
// asks thousands of questions of one): it must answer as a search of the snapshot's pods in order would.

import { describe, expect, it } from '@jest/globals';
import type { ClusterNode } from '../../../src/model/index.js';
import { locate } from '../../../src/why/endpoints.js';
import { hostNetwork, makePod, onNode, phase, snapshot } from '../../helpers/builders.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-a', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] },
  { name: 'node-b', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'] },
];

describe('locate', () => {
  it('gives an address to the running pod that owns it, not to a completed or host-network pod listed before it', () => {
    const s = snapshot({
      nodes: NODES,
      pods: [
        makePod('shop', 'done', '10.244.1.5', onNode('node-a'), phase('Succeeded')),
        makePod('shop', 'host', '10.244.1.5', onNode('node-a'), hostNetwork),
        makePod('shop', 'web', '10.244.1.5', onNode('node-a')),
        makePod('shop', 'later', '10.244.1.5', onNode('node-b')),
      ],
    });
    expect(locate('10.244.1.5', s, 4)).toEqual({ kind: 'pod', ip: '10.244.1.5', pod: 'shop/web', node: 'node-a' });
    expect(locate('shop/later', s, 4)).toEqual({ kind: 'pod', ip: '10.244.1.5', pod: 'shop/later', node: 'node-b' });
    expect(() => locate('shop/done', s, 4)).toThrow('has no address or is not running');
    expect(locate('10.244.2.9', s, 4)).toEqual({ kind: 'unknown-pod', ip: '10.244.2.9', node: 'node-b' });
    expect(locate('192.168.0.2', s, 4)).toEqual({ kind: 'node', ip: '192.168.0.2', node: 'node-b' });
    expect(locate('8.8.8.8', s, 4)).toEqual({ kind: 'external', ip: '8.8.8.8' });
  });

  it('answers each snapshot from its own pods', () => {
    const before = snapshot({ nodes: NODES, pods: [makePod('shop', 'web', '10.244.1.5', onNode('node-a'))] });
    const after = snapshot({ nodes: NODES, pods: [makePod('shop', 'web', '10.244.2.7', onNode('node-b'))] });
    expect(locate('shop/web', before, 4)).toMatchObject({ ip: '10.244.1.5', node: 'node-a' });
    expect(locate('shop/web', after, 4)).toMatchObject({ ip: '10.244.2.7', node: 'node-b' });
    expect(locate('10.244.1.5', after, 4)).toEqual({ kind: 'unknown-pod', ip: '10.244.1.5', node: 'node-a' });
    expect(() => locate('shop/gone', after, 4)).toThrow('pod shop/gone is not in the cluster');
  });
});
