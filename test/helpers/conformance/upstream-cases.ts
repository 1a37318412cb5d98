// The upstream NetworkPolicy e2e cases (kubernetes test/e2e/network/netpol/network_policy.go) as data, so
// that every way of reaching a pod (pod IPs, either address family, Service addresses) runs the same
// cases with the same expected matrices. upstream.test.ts documents how they were ported.

import { policyCase, step, tcp80, tcp81, udp80, type ConformanceCase } from './cases.js';
import { netpol, type PeerDoc, type PortDoc } from './manifests.js';
import { hostCidr, nodePodCidr, type Family } from './model.js';
import { ALL, anyPortOf, cidr, expr, namespaces, pods, podsInNamespaces, port, sel } from './policies.js';
import { allReachable, reach } from './reachability.js';

const NS_NAME = 'kubernetes.io/metadata.name';
const podA = sel({ pod: 'a' });

const denyIngress = (ns: string) => netpol(ns, 'deny-ingress', { podSelector: ALL, ingress: [] });
const denyAll = (ns: string) => netpol(ns, 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] });
/** x/a accepts only from `from` (on `ports`, if given). */
const xaIngress = (name: string, from: readonly PeerDoc[] | undefined, ports?: readonly PortDoc[]) =>
  netpol('x', name, { podSelector: podA, ingress: [{ ...(from ? { from } : {}), ...(ports ? { ports } : {}) }] });

// ports 81 from namespace y only (the "based on Ports" policy), and its port-80 twin.
const allowYOnPort = (p: number) => xaIngress(`allow-ns-y-port-${p}`, [namespaces({ ns: 'y' })], [port(p, 'TCP')]);
const onlyYToXa = reach().deny('x/*', 'x/a').deny('z/*', 'x/a');

/**
 * The cases with ipBlocks of `family`'s addresses (the rest do not name addresses): the same matrices
 * hold on IPv4 and on IPv6.
 */
export function upstreamCases(family: Family = 4): readonly ConformanceCase[] {
  const host = (key: string) => hostCidr(key, family);
  const n2 = nodePodCidr('n2', family);
  return [
    policyCase("should support a 'default-deny-ingress' policy", [denyIngress('x')], tcp80(reach().denyIngress('x/*'))),

    policyCase("should support a 'default-deny-all' policy", [denyAll('x')], tcp80(reach().denyIngress('x/*').denyEgress('x/*'))),

    policyCase(
      'should enforce policy to allow traffic from pods within server namespace based on PodSelector',
      [xaIngress('x-a-allows-x-b', [pods({ pod: 'b' })])],
      tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
    ),

    policyCase(
      'should enforce policy to allow ingress traffic for a target',
      [denyIngress('x'), xaIngress('allow-all-to-a', [podsInNamespaces(ALL, ALL)])],
      tcp80(reach().denyIngress(['x/b', 'x/c'])),
    ),

    policyCase(
      'should enforce policy to allow ingress traffic from pods in all namespaces',
      [xaIngress('allow-from-another-ns', [{ namespaceSelector: ALL }])],
      tcp80(allReachable()),
    ),

    policyCase(
      'should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector',
      [xaIngress('allow-client-a-via-ns-selector', [namespaces({ ns: 'y' })])],
      tcp80(onlyYToXa),
    ),

    policyCase(
      'should enforce policy based on PodSelector with MatchExpressions',
      [xaIngress('x-a-allows-x-b', [{ podSelector: expr('pod', 'In', 'b') }])],
      tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
    ),

    policyCase(
      'should enforce policy based on NamespaceSelector with MatchExpressions',
      [xaIngress('allow-ns-y-match-selector', [{ namespaceSelector: expr('ns', 'In', 'y') }])],
      tcp80(onlyYToXa),
    ),

    policyCase(
      'should enforce policy based on PodSelector or NamespaceSelector',
      [xaIngress('allow-ns-not-x-or-pod-b', [{ namespaceSelector: expr(NS_NAME, 'NotIn', 'x') }, pods({ pod: 'b' })])],
      tcp80(reach().deny('x/c', 'x/a')),
    ),

    policyCase(
      'should enforce policy based on PodSelector and NamespaceSelector',
      [xaIngress('allow-ns-not-x-and-pod-b', [podsInNamespaces(sel({ pod: 'b' }), expr(NS_NAME, 'NotIn', 'x'))])],
      tcp80(reach().allowOnlyFrom(['y/b', 'z/b'], 'x/a')),
    ),

    policyCase(
      'should enforce policy based on Multiple PodSelectors and NamespaceSelectors',
      [xaIngress('allow-ns-y-z-pod-b-c', [podsInNamespaces(expr('pod', 'In', 'b', 'c'), expr(NS_NAME, 'NotIn', 'x'))])],
      tcp80(reach().deny('x/*', 'x/a').deny(['y/a', 'z/a'], 'x/a')),
    ),

    policyCase(
      'should enforce policy based on any PodSelectors',
      [xaIngress('allow-ns-x-pod-b-c', [pods({ pod: 'b' }), pods({ pod: 'c' })])],
      tcp80(reach().allowOnlyFrom(['x/b', 'x/c'], 'x/a')),
    ),

    policyCase(
      'should enforce policy to allow traffic only from a pod in a different namespace based on PodSelector and NamespaceSelector',
      [xaIngress('allow-ns-y-pod-a', [podsInNamespaces(podA, sel({ [NS_NAME]: 'y' }))])],
      tcp80(reach().allowOnlyFrom('y/a', 'x/a')),
    ),

    policyCase('should enforce policy based on Ports', [allowYOnPort(81)], tcp81(onlyYToXa), tcp80(reach().denyIngress('x/a'))),

    {
      name: 'should enforce multiple, stacked policies with overlapping podSelectors',
      steps: [
        step('allow namespace y on port 81', (c) => c.setPolicies([allowYOnPort(81)]), tcp81(onlyYToXa), tcp80(reach().denyIngress('x/a'))),
        step('also allow namespace y on port 80', (c) => c.putPolicies(allowYOnPort(80)), tcp80(onlyYToXa), tcp81(onlyYToXa)),
      ],
    },

    policyCase(
      'should support allow-all policy',
      [netpol('x', 'allow-all', { podSelector: ALL, ingress: [{}] })],
      tcp80(allReachable()),
      tcp81(allReachable()),
    ),

    policyCase(
      'should allow ingress access on one named port',
      [netpol('x', 'allow-81-named', { podSelector: ALL, ingress: [{ ports: [port('serve-81-tcp')] }] })],
      tcp81(allReachable()),
      tcp80(reach().denyIngress('x/*')),
    ),

    policyCase(
      'should allow ingress access from namespace on one named port',
      [xaIngress('allow-ns-y-serve-80-tcp', [namespaces({ [NS_NAME]: 'y' })], [port('serve-80-tcp', 'TCP')])],
      tcp80(onlyYToXa),
      tcp81(reach().denyIngress('x/a')),
    ),

    policyCase(
      'should allow egress access on one named port',
      [
        netpol('x', 'allow-egress-serve-80-tcp', {
          podSelector: ALL,
          policyTypes: ['Egress'],
          egress: [{ ports: [port('serve-80-tcp')] }],
        }),
      ],
      tcp80(allReachable()),
      tcp81(reach().denyEgress('x/*')),
    ),

    {
      name: 'should enforce updated policy',
      steps: [
        step(
          'allow all ingress to x',
          (c) => c.setPolicies([netpol('x', 'allow-all-mutate-to-deny-all', { podSelector: ALL, ingress: [{}] })]),
          tcp81(allReachable()),
        ),
        step(
          'update the same policy to ingress: []',
          (c) => c.putPolicies(netpol('x', 'allow-all-mutate-to-deny-all', { podSelector: ALL, ingress: [] })),
          tcp81(reach().denyIngress('x/*')),
        ),
      ],
    },

    {
      name: 'should allow ingress access from updated namespace',
      steps: [
        step(
          'allow x/a from namespaces labelled ns2=updated',
          (c) => c.setPolicies([xaIngress('allow-ns2-updated', [namespaces({ ns2: 'updated' })])]),
          tcp80(reach().denyIngress('x/a')),
        ),
        step(
          'label namespace y ns2=updated',
          (c) => c.setNamespaceLabels('y', { ns: 'y', ns2: 'updated' }),
          tcp80(reach().allowOnlyFrom('y/*', 'x/a')),
        ),
      ],
    },

    {
      name: 'should allow ingress access from updated pod',
      steps: [
        step(
          'allow x/a from pod=b,pod2=updated',
          (c) => c.setPolicies([xaIngress('allow-pod2-updated', [pods({ pod: 'b', pod2: 'updated' })])]),
          tcp80(reach().denyIngress('x/a')),
        ),
        step(
          'label x/b pod2=updated',
          (c) => c.setPodLabels('x/b', { pod: 'b', pod2: 'updated' }),
          tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
        ),
      ],
    },

    policyCase(
      'should deny ingress from pods on other namespaces',
      [netpol('x', 'deny-empty-policy', { podSelector: ALL, ingress: [{ from: [{ podSelector: ALL }] }] })],
      tcp80(reach().deny(['y/*', 'z/*'], 'x/*')),
    ),

    {
      name: 'should deny ingress access to updated pod',
      steps: [
        step(
          'deny ingress to pods labelled target=isolated',
          (c) => c.setPolicies([netpol('x', 'deny-isolated', { podSelector: sel({ target: 'isolated' }), ingress: [] })]),
          tcp80(allReachable()),
        ),
        step(
          'label x/a target=isolated',
          (c) => c.setPodLabels('x/a', { pod: 'a', target: 'isolated' }),
          tcp80(reach().denyIngress('x/a')),
        ),
      ],
    },

    policyCase(
      'should deny egress from pods based on PodSelector',
      [netpol('x', 'deny-egress-pod-a', { podSelector: podA, policyTypes: ['Egress'], egress: [] })],
      tcp80(reach().denyEgress('x/a')),
    ),

    policyCase(
      'should deny egress from all pods in a namespace',
      [netpol('x', 'deny-egress-ns-x', { podSelector: ALL, policyTypes: ['Egress'], egress: [] })],
      tcp80(reach().denyEgress('x/*')),
    ),

    policyCase(
      'should work with Ingress, Egress specified together',
      [
        netpol('x', 'ingress-b-egress-80', {
          podSelector: podA,
          policyTypes: ['Egress', 'Ingress'],
          ingress: [{ from: [pods({ pod: 'b' })] }],
          egress: [{ ports: [port(80)] }],
        }),
      ],
      tcp80(reach().allowOnlyFrom('x/b', 'x/a')),
      tcp81(reach().denyEgress('x/a').allowOnlyFrom('x/b', 'x/a')),
    ),

    policyCase(
      'should support denying of egress traffic on the client side (even if the server explicitly allows this traffic)',
      [
        netpol('x', 'allow-to-ns-y-pod-a', {
          podSelector: podA,
          policyTypes: ['Egress'],
          egress: [{ to: [podsInNamespaces(podA, sel({ [NS_NAME]: 'y' }))] }],
        }),
        netpol('y', 'allow-from-xa-on-ya', { podSelector: podA, ingress: [{ from: [podsInNamespaces(podA, sel({ [NS_NAME]: 'x' }))] }] }),
        netpol('y', 'allow-from-xa-on-yb', {
          podSelector: sel({ pod: 'b' }),
          ingress: [{ from: [podsInNamespaces(podA, sel({ [NS_NAME]: 'x' }))] }],
        }),
      ],
      tcp80(reach().denyEgress('x/a').denyIngress(['y/a', 'y/b']).allow('x/a', 'y/a')),
    ),

    policyCase(
      'should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector',
      [
        netpol('x', 'allow-to-ns-y-pod-a', {
          podSelector: podA,
          policyTypes: ['Egress'],
          egress: [{ to: [podsInNamespaces(podA, sel({ [NS_NAME]: 'y' }))] }],
        }),
      ],
      tcp80(reach().denyEgress('x/a').allow('x/a', 'y/a')),
    ),

    policyCase(
      'should enforce ingress policy allowing any port traffic to a server on a specific protocol',
      [xaIngress('allow-ingress-by-proto', undefined, [anyPortOf('TCP')])],
      tcp80(allReachable()),
      udp80(reach().denyIngress('x/a')),
    ),

    {
      name: 'should enforce multiple ingress policies with ingress allow-all policy taking precedence',
      steps: [
        step(
          'allow ingress to x on port 80 only',
          (c) => c.setPolicies([netpol('x', 'allow-ingress-port-80', { podSelector: ALL, ingress: [{ ports: [port(80)] }] })]),
          tcp81(reach().denyIngress('x/*')),
        ),
        step(
          'add an allow-all ingress policy',
          (c) => c.putPolicies(netpol('x', 'allow-ingress', { podSelector: ALL, ingress: [{}] })),
          tcp81(allReachable()),
        ),
      ],
    },

    {
      name: 'should enforce multiple egress policies with egress allow-all policy taking precedence',
      steps: [
        step(
          'allow egress from x on port 80 only',
          (c) =>
            c.setPolicies([
              netpol('x', 'allow-egress-port-80', { podSelector: ALL, policyTypes: ['Egress'], egress: [{ ports: [port(80)] }] }),
            ]),
          tcp81(reach().denyEgress('x/*')),
        ),
        step(
          'add an allow-all egress policy',
          (c) => c.putPolicies(netpol('x', 'allow-egress', { podSelector: ALL, policyTypes: ['Egress'], egress: [{}] })),
          tcp81(allReachable()),
        ),
      ],
    },

    {
      name: 'should stop enforcing policies after they are deleted',
      steps: [
        step('deny all in and out of x', (c) => c.setPolicies([denyAll('x')]), tcp80(reach().denyIngress('x/*').denyEgress('x/*'))),
        step('delete the policy', (c) => c.deletePolicy('x', 'deny-all'), tcp80(allReachable())),
      ],
    },

    policyCase(
      'should allow egress access to server in CIDR block',
      [
        netpol('x', 'allow-client-a-via-cidr-egress-rule', {
          podSelector: podA,
          policyTypes: ['Egress'],
          egress: [{ to: [cidr(host('y/b'))] }],
        }),
      ],
      tcp80(reach().denyEgress('x/a').allow('x/a', 'y/b')),
    ),

    // x/b lives on n2: n2's pod CIDR (/24, or /64 on IPv6) holds it, so x/a may reach n2's pods except x/b, and
    // nothing on its own node n1.
    policyCase(
      'should enforce except clause while egress access to server in CIDR block',
      [netpol('x', 'allow-n2-except-x-b', { podSelector: podA, policyTypes: ['Egress'], egress: [{ to: [cidr(n2, host('x/b'))] }] })],
      tcp80(reach().denyEgress('x/a').allow('x/a', ['y/a', 'y/c', 'z/b'])),
    ),

    {
      name: 'should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed',
      steps: [
        step(
          'allow n2 except x/b',
          (c) =>
            c.setPolicies([
              netpol('x', 'allow-n2-except-x-b', { podSelector: podA, policyTypes: ['Egress'], egress: [{ to: [cidr(n2, host('x/b'))] }] }),
            ]),
          tcp80(reach().denyEgress('x/a').allow('x/a', ['y/a', 'y/c', 'z/b'])),
        ),
        step(
          'add a policy allowing x/b/32',
          (c) =>
            c.putPolicies(netpol('x', 'allow-x-b', { podSelector: podA, policyTypes: ['Egress'], egress: [{ to: [cidr(host('x/b'))] }] })),
          tcp80(reach().denyEgress('x/a').allow('x/a', ['x/b', 'y/a', 'y/c', 'z/b'])),
        ),
      ],
    },

    {
      name: 'should enforce policies to check ingress and egress policies can be controlled independently based on PodSelector',
      steps: [
        step(
          'allow all egress of x/a',
          (c) => c.setPolicies([netpol('x', 'allow-egress-for-target', { podSelector: podA, policyTypes: ['Egress'], egress: [{}] })]),
          tcp80(allReachable()),
        ),
        step(
          'deny all ingress to x/a',
          (c) => c.putPolicies(netpol('x', 'deny-ingress-via-label-selector', { podSelector: podA, ingress: [] })),
          tcp80(reach().denyIngress('x/a')),
        ),
      ],
    },

    policyCase(
      "should not mistakenly treat 'protocol: SCTP' as 'protocol: TCP', even if the plugin doesn't support SCTP",
      [denyIngress('x'), xaIngress('allow-only-sctp-ingress-on-port-81', undefined, [port(81, 'SCTP')])],
      tcp81(reach().denyIngress('x/*')),
    ),

    policyCase(
      "should properly isolate pods that are selected by a policy allowing SCTP, even if the plugin doesn't support SCTP",
      [xaIngress('allow-only-sctp-ingress-on-port-80', undefined, [port(80, 'SCTP')])],
      tcp81(reach().denyIngress('x/a')),
    ),

    policyCase(
      'should not allow access by TCP when a policy specifies only UDP',
      [xaIngress('allow-only-udp-ingress-on-port-81', undefined, [port(81, 'UDP')])],
      tcp81(reach().denyIngress('x/a')),
    ),

    policyCase(
      'should enforce policy to allow traffic based on NamespaceSelector with MatchLabels using default ns label',
      [xaIngress('allow-ns-y-immutable-label', [namespaces({ [NS_NAME]: 'y' })])],
      tcp80(onlyYToXa),
    ),

    policyCase(
      'should enforce policy based on NamespaceSelector with MatchExpressions using default ns label',
      [
        netpol('x', 'allow-ns-not-y-immutable-label', {
          podSelector: podA,
          policyTypes: ['Egress'],
          egress: [{ to: [{ namespaceSelector: expr(NS_NAME, 'NotIn', 'y') }] }],
        }),
      ],
      tcp80(reach().deny('x/a', 'y/*')),
    ),
  ];
}

export const UPSTREAM_CASES: readonly ConformanceCase[] = upstreamCases(4);
