// `why` on egress a ClusterNetworkPolicy `domainNames` rule governs: what is learned lives in one node's
// kernel, which `why` does not read, so a connection to an address outside every other rule is dropped and
// the answer names the rule that would allow it once the pod looks up one of its names.

import { defaultNodeSettings, type ClusterNode, type ClusterSnapshot } from '../../../src/model/index.js';
import { formatAnswer, whyConnection } from '../../../src/why/index.js';
import { labels, makeNamespace, makePod, onNode, sel, snapshot } from '../../helpers/builders.js';
import { cnp, cRule, cTcp, domains, networks, podSubject } from '../../helpers/cnp-builders.js';

const NODES: readonly ClusterNode[] = [{ name: 'node-a', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] }];

const shop: ClusterSnapshot = snapshot({
  nodes: [...NODES],
  namespaces: [makeNamespace('shop')],
  pods: [makePod('shop', 'web', '10.244.1.10', onNode('node-a'), labels({ app: 'web' }))],
  clusterPolicies: [
    cnp('by-name', 'Admin', 1, podSubject(sel(), sel({ app: 'web' })), {
      egress: [cRule('Accept', [domains('good.example', '*.cdn.example')], [cTcp(443)], 'api'), cRule('Deny', [networks('0.0.0.0/0')])],
    }),
  ],
});

const why = (port: number) =>
  whyConnection(shop, (node) => defaultNodeSettings(node, NODES.find((n) => n.name === node)?.podCidrs ?? []), {
    src: 'shop/web',
    dst: '198.51.100.10',
    proto: 'tcp',
    port,
  });

describe('why and domainNames', () => {
  it('dropped by the Deny, and names the domainNames rule a lookup would open', () => {
    const a = why(443);
    expect(a.verdict).toBe('dropped');
    const egress = a.sides.find((s) => s.direction === 'egress')!;
    expect(egress.afterLookup).toBe(
      'would be allowed by ClusterNetworkPolicy by-name rule egress:0 api Accept, after shop/web looks up good.example or *.cdn.example',
    );
    expect(formatAnswer(a).replace(/\s+/g, ' ')).toContain('after shop/web looks up good.example or *.cdn.example');
  });

  it('a port the rule does not name: no lookup would help, none is suggested', () => {
    expect(why(80).sides.find((s) => s.direction === 'egress')!.afterLookup).toBeUndefined();
  });
});
