// The upstream NetworkPolicy e2e suite ("Netpol NetworkPolicy between server and client",
// kubernetes test/e2e/network/netpol/network_policy.go), ported case by case onto the sandbox: two
// flannel-like nodes, namespaces x/y/z with pods a/b/c each, real TCP/UDP/SCTP packets. Each case's
// expected matrix is written here from the spec, as upstream writes its truth tables; unlike upstream
// the full 9-pod model is probed in every case, so every matrix also says "and nothing else changed".
// Upstream's SetSpecIngressRules/SetSpecEgressRules also set policyTypes; the policies here spell
// policyTypes out wherever upstream's would differ from the API default (Ingress, plus Egress iff
// egress rules are present), which lifecycle.test.ts checks on its own.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand -- test/kernel/conformance

import { UPSTREAM_CASES } from '../../helpers/conformance/upstream-cases.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

describeConformance('conformance: upstream NetworkPolicy e2e cases (TCP)', UPSTREAM_CASES);
