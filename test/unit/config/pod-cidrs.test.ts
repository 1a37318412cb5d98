// Where this node's pod CIDRs come from: configuration, else the Node's spec.podCIDRs, else flannel's
// subnet.env, else (trace, reading a ruleset) the ranges the dispatch chains fail-close. One decision
// (config/load.ts podCidrsOf), used by the daemon, the one-shot commands and trace.

import { podCidrsOf } from '../../../src/config/load.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';

const snapshotWith = (podCidrs: string[]): ClusterSnapshot =>
  ({
    nodes: [{ name: 'n1', podCidrs } as unknown as ClusterSnapshot['nodes'][number]],
    namespaces: [],
    pods: [],
    policies: [],
  }) as ClusterSnapshot;

describe('pod CIDR precedence', () => {
  it.each<{ name: string; configured: string[]; node: string[]; flannel: string[]; programmed: string[]; expected: string[] }>([
    {
      name: 'configuration wins',
      configured: ['10.1.0.0/24'],
      node: ['10.2.0.0/24'],
      flannel: ['10.3.0.0/24'],
      programmed: ['10.4.0.0/24'],
      expected: ['10.1.0.0/24'],
    },
    {
      name: "then the Node's spec.podCIDRs",
      configured: [],
      node: ['10.2.0.0/24', 'fd00::/64'],
      flannel: ['10.3.0.0/24'],
      programmed: ['10.4.0.0/24'],
      expected: ['10.2.0.0/24', 'fd00::/64'],
    },
    {
      name: "then flannel's subnet.env",
      configured: [],
      node: [],
      flannel: ['10.3.0.0/24'],
      programmed: ['10.4.0.0/24'],
      expected: ['10.3.0.0/24'],
    },
    { name: 'then the programmed ruleset', configured: [], node: [], flannel: [], programmed: ['10.4.0.0/24'], expected: ['10.4.0.0/24'] },
    { name: 'none known', configured: [], node: [], flannel: [], programmed: [], expected: [] },
  ])('$name', ({ configured, node, flannel, programmed, expected }) => {
    const config = { nodeName: 'n1', podCidrs: configured };
    expect(podCidrsOf(config, snapshotWith(node), { flannel, programmed })).toEqual(expected);
  });

  it("another node's spec.podCIDRs are not this node's", () => {
    expect(podCidrsOf({ nodeName: 'n2', podCidrs: [] }, snapshotWith(['10.2.0.0/24']), { flannel: ['10.3.0.0/24'] })).toEqual([
      '10.3.0.0/24',
    ]);
  });

  it('no snapshot (a saved dump without manifests): configuration, then what was learned', () => {
    expect(podCidrsOf({ nodeName: 'n1', podCidrs: [] }, undefined, { programmed: ['10.4.0.0/24'] })).toEqual(['10.4.0.0/24']);
  });
});
