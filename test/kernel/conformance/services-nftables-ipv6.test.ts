// The upstream NetworkPolicy e2e cases through kube-proxy in nftables mode, over IPv6: a dual-stack
// sandbox whose kube-proxy runs an IPv6 proxier beside the IPv4 one (table ip6 kube-proxy, the same
// layout as table ip kube-proxy, as kube-proxy's dual-stack meta-proxier does), every
// model Service dual-stack with its IPv6 ClusterIP first, and every matrix probed on the IPv6
// ClusterIPs with the pods' neighbour caches flushed before each round. FORWARD judges the post-DNAT
// endpoint pod and the original client, so the expected matrices are those of the pod-IP run.
// Then the Service paths over IPv6: DNAT seen in conntrack, hairpin, the NodePort source table with the
// client's and the forwarding node's IPv6 addresses (the KUBE-FORWARD reorder is iptables mode only).
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns services-nftables-ipv6

import { upstreamCases } from '../../helpers/conformance/upstream-cases.js';
import { describeServicePaths } from '../../helpers/conformance/service-paths.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

describeConformance(
  'conformance via IPv6 ClusterIP: upstream cases behind kube-proxy (nftables mode, table ip6 kube-proxy)',
  upstreamCases(6),
  describeServicePaths,
  {
    kubeProxy: 'nftables',
    family: 6,
  },
);
