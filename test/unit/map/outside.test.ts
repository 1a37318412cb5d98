// The outside world as the rules cut it (src/map/outside.ts): each block gets an address no smaller block and
// no cluster address holds. Pod addresses inside a node's pod CIDR are held by that CIDR already; a pod
// outside every node's CIDR still counts on its own.

import { describe, expect, it } from '@jest/globals';
import { outsideBlocks } from '../../../src/map/outside.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';
import { makePod, onNode } from '../../helpers/builders.js';

describe('outside blocks', () => {
  it('keeps clear of pod addresses outside every node CIDR, and of the node CIDRs', () => {
    const snapshot: ClusterSnapshot = {
      nodes: [{ name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] }],
      namespaces: [],
      pods: [makePod('a', 'inside', '10.244.1.5', onNode('n1')), makePod('a', 'stray', '10.99.0.1', onNode('n1'))],
      policies: [],
    };
    expect(outsideBlocks(snapshot, 4, ['10.99.0.0/30', '10.244.1.4/30', '192.168.0.0/31'])).toEqual([
      { text: '0.0.0.0/0 except 10.99.0.0/30, 10.244.1.4/30, 192.168.0.0/31', ip: '0.0.0.1' },
      // 10.99.0.1 is the stray pod's: the block's address is the next one.
      { text: '10.99.0.0/30', ip: '10.99.0.2' },
      // 192.168.0.1 is the node's own address; the /31's other one is free.
      { text: '192.168.0.0/31', ip: '192.168.0.0' },
    ]);
  });
});
