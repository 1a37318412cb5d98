// NetworkPolicy semantics the upstream e2e suite leaves implicit, and the cluster changing under a
// programmed node: policyTypes defaults, empty rule lists, unions, selector operators, ipBlocks that
// contain pod IPs (ingress and egress, with except), policy update and delete, pod and namespace
// relabels, pod deletion with its IP reused by another pod, the node reaching its own pods under a
// default deny (kubelet probes), and a pod always reaching itself.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand -- test/kernel/conformance

import { policyCase, sctp80, step, tcp80, udp80, type ConformanceCase } from '../../helpers/conformance/cases.js';
import { netpol, type PeerDoc } from '../../helpers/conformance/manifests.js';
import { MODEL_POD_KEYS, MODEL_PODS, NODES, hostCidr, nodePodCidr, type Family } from '../../helpers/conformance/model.js';
import { ALL, cidr, expr, namespaces, pods, podsInNamespaces, sel } from '../../helpers/conformance/policies.js';
import { Reachability, allReachable, reach } from '../../helpers/conformance/reachability.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

const podA = sel({ pod: 'a' });
const xaFrom = (name: string, from: readonly PeerDoc[]) => netpol('x', name, { podSelector: podA, ingress: [{ from }] });
const denyAll = (ns: string) => netpol(ns, 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] });
const onNode = (node: string) => MODEL_PODS.filter((p) => p.node === node).map((p) => p.key);

// IP reuse: z/c (10.244.1.33 on n1) is deleted and y/d takes its address.
const AFTER_REUSE = MODEL_POD_KEYS.map((k) => (k === 'z/c' ? 'y/d' : k));

// The nodes probe too: node:nX is the node's own network namespace (kubelet's probes come from there).
const NODE_KEYS = NODES.map((n) => `node:${n.name}`);

const SEMANTICS: readonly ConformanceCase[] = [
  // "If no policyTypes are specified … Egress will be set if the NetworkPolicy has any egress rules"; Ingress always.
  policyCase(
    'policyTypes default: a policy with only egress rules isolates ingress too',
    [netpol('x', 'egress-within-x', { podSelector: podA, egress: [{ to: [{ podSelector: ALL }] }] })],
    tcp80(reach().denyIngress('x/a').deny('x/a', ['y/*', 'z/*'])),
  ),
  policyCase(
    'policyTypes [Egress] leaves ingress open even with ingress: [] written',
    [netpol('x', 'egress-only', { podSelector: ALL, policyTypes: ['Egress'], ingress: [], egress: [{ to: [namespaces({ ns: 'x' })] }] })],
    tcp80(reach().deny('x/*', ['y/*', 'z/*'])),
  ),
  policyCase(
    'policyTypes [Ingress] ignores egress: [] (no egress isolation)',
    [netpol('x', 'ingress-only', { podSelector: podA, policyTypes: ['Ingress'], ingress: [{}], egress: [] })],
    tcp80(allReachable()),
  ),
  {
    name: 'an empty ingress list denies, one empty rule allows',
    steps: [
      step(
        'ingress: []',
        (c) => c.setPolicies([netpol('x', 'flip', { podSelector: podA, ingress: [] })]),
        tcp80(reach().denyIngress('x/a')),
      ),
      step(
        'update to ingress: [{}]',
        (c) => c.putPolicies(netpol('x', 'flip', { podSelector: podA, ingress: [{}] })),
        tcp80(allReachable()),
      ),
    ],
  },
  policyCase(
    'a policy that selects no pod changes nothing',
    [netpol('x', 'selects-nobody', { podSelector: sel({ pod: 'nobody' }), policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] })],
    tcp80(allReachable()),
  ),
  policyCase(
    'a policy isolates pods of its own namespace only',
    [netpol('z', 'deny-ingress-pod-a', { podSelector: podA, ingress: [] })],
    tcp80(reach().denyIngress('z/a')),
  ),
  policyCase(
    'policies selecting the same pod are unioned',
    [xaFrom('from-x-b', [pods({ pod: 'b' })]), xaFrom('from-ns-y', [namespaces({ ns: 'y' })])],
    tcp80(reach().allowOnlyFrom(['x/b', 'y/*'], 'x/a')),
  ),
  policyCase(
    'podSelector NotIn',
    [xaFrom('pod-not-b', [{ podSelector: expr('pod', 'NotIn', 'b') }])],
    tcp80(reach().allowOnlyFrom('x/c', 'x/a')),
  ),
  {
    name: 'podSelector Exists across all namespaces',
    steps: [
      step(
        'label y/b role=db; allow x/a from any pod with a role',
        (c) => {
          c.setPodLabels('y/b', { pod: 'b', role: 'db' });
          c.setPolicies([xaFrom('from-any-role', [podsInNamespaces(expr('role', 'Exists'), ALL)])]);
        },
        tcp80(reach().allowOnlyFrom('y/b', 'x/a')),
      ),
    ],
  },
  {
    name: 'namespaceSelector DoesNotExist',
    steps: [
      step(
        'label namespace z restricted=true; allow x/a from unrestricted namespaces',
        (c) => {
          c.setNamespaceLabels('z', { ns: 'z', restricted: 'true' });
          c.setPolicies([xaFrom('from-unrestricted', [{ namespaceSelector: expr('restricted', 'DoesNotExist') }])]);
        },
        tcp80(reach().deny('z/*', 'x/a')),
      ),
    ],
  },
  {
    name: 'matchLabels and matchExpressions in one selector must both hold',
    steps: [
      step(
        'label x/b and x/c tier=web; allow x/a from pod=b with tier In [web]',
        (c) => {
          c.setPodLabels('x/b', { pod: 'b', tier: 'web' });
          c.setPodLabels('x/c', { pod: 'c', tier: 'web' });
          c.setPolicies([
            xaFrom('from-b-web', [
              { podSelector: { matchLabels: { pod: 'b' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['web'] }] } },
            ]),
          ]);
        },
        tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
      ),
    ],
  },
];

/** The ipBlock cases in the addresses of one family (the IPv6 cluster CIDR is flannel's /56, a node's CIDR its /64). */
function ipBlockCases(family: Family): readonly ConformanceCase[] {
  const host = (key: string) => hostCidr(key, family);
  const cluster = family === 6 ? 'fd00:10:244::/56' : '10.244.0.0/16';
  return [
    // ipBlocks match pod IPs too: the except must shut out exactly that pod, the rest of the CIDR stays open.
    policyCase(
      'ingress ipBlock (cluster CIDR) with a pod IP in except',
      [xaFrom('from-cluster-except-y-b', [cidr(cluster, host('y/b'))])],
      tcp80(reach().deny('y/b', 'x/a')),
    ),
    policyCase(
      "ingress ipBlock (n2's pod CIDR) with a pod IP in except",
      [xaFrom('from-n2-except-z-b', [cidr(nodePodCidr('n2', family), host('z/b'))])],
      tcp80(reach().allowOnlyFrom(['x/b', 'y/a', 'y/c'], 'x/a')),
    ),
    policyCase(
      'egress ipBlock (cluster CIDR) except a whole node CIDR',
      [
        netpol('x', 'to-cluster-except-n1', {
          podSelector: podA,
          policyTypes: ['Egress'],
          egress: [{ to: [cidr(cluster, nodePodCidr('n1', family))] }],
        }),
      ],
      tcp80(reach().denyEgress('x/a').allow('x/a', onNode('n2'))),
    ),
    policyCase(
      'ipBlock OR podSelector peers in one rule',
      [xaFrom('from-y-b-ip-or-pod-c', [cidr(host('y/b')), pods({ pod: 'c' })])],
      tcp80(reach().allowOnlyFrom(['y/b', 'x/c'], 'x/a')),
    ),
  ];
}

const LIFECYCLE: readonly ConformanceCase[] = [
  {
    name: 'policy update moves isolation to other pods',
    steps: [
      step(
        'isolate pod=a',
        (c) => c.setPolicies([netpol('x', 'isolate', { podSelector: podA, ingress: [] })]),
        tcp80(reach().denyIngress('x/a')),
      ),
      step(
        'update the selector to pod=b',
        (c) => c.putPolicies(netpol('x', 'isolate', { podSelector: sel({ pod: 'b' }), ingress: [] })),
        tcp80(reach().denyIngress('x/b')),
      ),
    ],
  },
  {
    name: 'deleting one of two policies shrinks the union',
    steps: [
      step(
        'allow x/a from x/b and from namespace y',
        (c) => c.setPolicies([xaFrom('from-x-b', [pods({ pod: 'b' })]), xaFrom('from-ns-y', [namespaces({ ns: 'y' })])]),
        tcp80(reach().allowOnlyFrom(['x/b', 'y/*'], 'x/a')),
      ),
      step('delete the namespace-y policy', (c) => c.deletePolicy('x', 'from-ns-y'), tcp80(reach().allowOnlyFrom('x/b', 'x/a'))),
    ],
  },
  {
    name: 'a pod relabelled out of a policy selection loses its isolation',
    steps: [
      step(
        'isolate pod=a',
        (c) => c.setPolicies([netpol('x', 'isolate-a', { podSelector: podA, ingress: [] })]),
        tcp80(reach().denyIngress('x/a')),
      ),
      step('relabel x/a to pod=q', (c) => c.setPodLabels('x/a', { pod: 'q' }), tcp80(allReachable())),
    ],
  },
  {
    name: 'a peer pod relabelled out of a selector loses access',
    steps: [
      step(
        'allow x/a from pod=b in x',
        (c) => c.setPolicies([xaFrom('from-b', [pods({ pod: 'b' })])]),
        tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
      ),
      step(
        'relabel x/b to pod=q and x/c to pod=b',
        (c) => (c.setPodLabels('x/b', { pod: 'q' }), c.setPodLabels('x/c', { pod: 'b' })),
        tcp80(reach().allowOnlyFrom('x/c', 'x/a')),
      ),
    ],
  },
  {
    name: 'a namespace relabelled out of a selector loses access',
    steps: [
      step(
        'allow x/a from namespace ns=y',
        (c) => c.setPolicies([xaFrom('from-ns-y', [namespaces({ ns: 'y' })])]),
        tcp80(reach().allowOnlyFrom('y/*', 'x/a')),
      ),
      step(
        'relabel namespace y to ns=w, z to ns=y',
        (c) => (c.setNamespaceLabels('y', { ns: 'w' }), c.setNamespaceLabels('z', { ns: 'y' })),
        tcp80(reach().allowOnlyFrom('z/*', 'x/a')),
      ),
    ],
  },
  {
    name: 'a deleted pod IP reused by a pod of another namespace gets none of the old pod policies',
    steps: [
      step(
        'allow x/a only from z/c; isolate z/c',
        (c) =>
          c.setPolicies([
            xaFrom('from-z-c', [podsInNamespaces(sel({ pod: 'c' }), sel({ ns: 'z' }))]),
            netpol('z', 'isolate-c', { podSelector: sel({ pod: 'c' }), ingress: [] }),
          ]),
        tcp80(reach().allowOnlyFrom('z/c', 'x/a').denyIngress('z/c')),
      ),
      step(
        'delete z/c; start y/d (pod=d) on its IP',
        async (c) => {
          await c.replacePod('z/c', { namespace: 'y', name: 'd', labels: { pod: 'd' } });
        },
        tcp80(reach(AFTER_REUSE).denyIngress('x/a')),
        udp80(reach(AFTER_REUSE).denyIngress('x/a')),
      ),
    ],
  },
  {
    // "When the pod is isolated for ingress, the only allowed connections into the pod are those from
    // the pod's node and those allowed by the ingress list": the other node gets no exemption. The
    // pod-to-own-node direction is DESIGN §3 ("always allowed: traffic between a pod and its own
    // node"); the Kubernetes docs exempt the node for ingress only, upstream e2e tests neither.
    name: 'a node and its own pods reach each other under deny-all (kubelet probes), isolated pods of the other node stay shut',
    steps: [
      step(
        'deny all in and out of x',
        (c) => c.setPolicies([denyAll('x')]),
        tcp80(
          new Reachability([...NODE_KEYS, ...MODEL_POD_KEYS], [...MODEL_POD_KEYS, ...NODE_KEYS])
            .denyIngress('x/*')
            .denyEgress('x/*')
            .allow('node:n1', onNode('n1'))
            .allow(onNode('n1'), 'node:n1')
            .allow('node:n2', onNode('n2'))
            .allow(onNode('n2'), 'node:n2'),
        ),
      ),
    ],
  },
  {
    name: 'a pod always reaches itself, even with deny-all everywhere',
    steps: [
      step(
        'deny all in and out of x, y and z',
        (c) => c.setPolicies(['x', 'y', 'z'].map(denyAll)),
        tcp80(reach().denyIngress('*')),
        udp80(reach().denyIngress('*')),
        sctp80(reach().denyIngress('*')),
      ),
    ],
  },
];

describeConformance('conformance: semantics and a changing cluster', [...SEMANTICS, ...ipBlockCases(4), ...LIFECYCLE], (cluster) => {
  it('lays the model out with same-node and cross-node pairs, within and across namespaces', () => {
    const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
    const placed = cluster()
      .sandbox.pods()
      .map((p) => ({ key: p.key, node: p.node, ip: p.ip }))
      .sort(byKey);
    expect(placed).toEqual(MODEL_PODS.map((p) => ({ key: p.key, node: p.node, ip: p.ip })).sort(byKey));
    const kinds = new Set<string>();
    for (const a of MODEL_PODS) {
      for (const b of MODEL_PODS) {
        if (a.key === b.key) continue;
        kinds.add(`${a.node === b.node ? 'same-node' : 'cross-node'} ${a.namespace === b.namespace ? 'same-ns' : 'cross-ns'}`);
      }
    }
    expect([...kinds].sort()).toEqual(['cross-node cross-ns', 'cross-node same-ns', 'same-node cross-ns', 'same-node same-ns']);
  });
});

// The same over IPv6 on a dual-stack sandbox (see upstream-ipv6.test.ts), nodes probing on their IPv6
// underlay addresses, neighbour caches flushed before each probe round.
describeConformance(
  'conformance: semantics and a changing cluster over IPv6',
  [...SEMANTICS, ...ipBlockCases(6), ...LIFECYCLE],
  undefined,
  { family: 6 },
);
