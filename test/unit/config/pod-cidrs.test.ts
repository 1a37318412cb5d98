// Where this node's pod CIDRs come from: configuration, else the Node's spec.podCIDRs, else flannel's
// subnet.env. One decision (config/load.ts), used by the daemon and by the one-shot commands.

import { discoveredPodCidrs, toNodeSettings } from '../../../src/config/load.js';
import { DEFAULT_CONFIG } from '../../../src/config/schema.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';

const snapshotWith = (podCidrs: string[]): ClusterSnapshot =>
  ({
    nodes: [{ name: 'n1', podCidrs } as unknown as ClusterSnapshot['nodes'][number]],
    namespaces: [],
    pods: [],
    policies: [],
  }) as ClusterSnapshot;

describe('pod CIDR precedence', () => {
  it.each<{ name: string; configured: string[]; node: string[]; flannel: string[]; expected: string[] }>([
    { name: 'configuration wins', configured: ['10.1.0.0/24'], node: ['10.2.0.0/24'], flannel: ['10.3.0.0/24'], expected: ['10.1.0.0/24'] },
    {
      name: "then the Node's spec.podCIDRs",
      configured: [],
      node: ['10.2.0.0/24', 'fd00::/64'],
      flannel: ['10.3.0.0/24'],
      expected: ['10.2.0.0/24', 'fd00::/64'],
    },
    { name: "then flannel's subnet.env", configured: [], node: [], flannel: ['10.3.0.0/24'], expected: ['10.3.0.0/24'] },
    { name: 'none known', configured: [], node: [], flannel: [], expected: [] },
  ])('$name', ({ configured, node, flannel, expected }) => {
    const config = { ...DEFAULT_CONFIG, nodeName: 'n1', podCidrs: configured };
    expect(toNodeSettings(config, discoveredPodCidrs(snapshotWith(node), 'n1', flannel)).podCidrs).toEqual(expected);
  });
});
