// The upstream NetworkPolicy e2e cases (upstream.test.ts) once more, over IPv6: the same model on a
// dual-stack sandbox (flannel's EnableIPv6 layout: a /64 per node out of fd00:10:244::/56, cni0 holding
// both gateways), every pod listing its IPv6 address first in podIPs, both pod CIDRs programmed, and
// every matrix probed on the pods' IPv6 addresses, same node and cross node. Before every probe round
// each pod's neighbour cache is flushed, so same-node pairs need neighbour discovery through whatever
// policy the case installs (as upstream's ipv6 kind job exercises it). ipBlock cases use the IPv6
// twins of the IPv4 addresses (a pod's /128, node n2's /64), and the expected matrices are the same.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns upstream-ipv6

import { upstreamCases } from '../../helpers/conformance/upstream-cases.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

describeConformance('conformance: upstream NetworkPolicy e2e cases over IPv6 (TCP)', upstreamCases(6), undefined, { family: 6 });
