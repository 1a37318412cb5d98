// The ported ClusterNetworkPolicy conformance suite (cnp-upstream.test.ts: all 24 upstream tests, 92
// subtests, same-node and cross-node, live daemons, 10 s windows, Deny must time out) run again over IPv6,
// as upstream's IPv6 job runs the same Go tests on an IPv6 cluster: the houses are dual-stack with IPv6
// listed first, so every pod's podIP and every node's first InternalIP is IPv6 and every poke targets an
// IPv6 address; the inline-CIDR rule is `/128` (upstream: `mask = "/128"` when the podIP is not IPv4); the
// manifests' `networks` already list both families' `/0` as upstream's YAML does. Every pod's IPv6
// neighbour cache is flushed before each probe round, so every poke resolves its peer (pod or gateway)
// with ND first, through the policy.
//
// A pod's pokes to the centaur on its own node go through INPUT (CNP's host side, with the pod's ND/MLD to
// the node let through first), the cross-node ones through FORWARD: all asserted, on TCP, UDP and SCTP.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns cnp-upstream-ipv6

import { jest } from '@jest/globals';
import { describeCnpConformance } from '../../helpers/conformance-cnp/run-suite.js';

jest.setTimeout(120_000);

describeCnpConformance(6);
