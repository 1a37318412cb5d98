// ClusterNetworkPolicy conformance on real packets: all 24 tests and 92 subtests of the network-policy-api
// suite (conformance/tests, v1alpha2: 13 Admin-tier, 11 Baseline-tier, including the experimental
// NamedPorts and EgressNodePeers features), ported into the sandbox from the data in
// test/helpers/conformance-cnp/upstream-suite.ts: upstream's manifests, its live changes (rule order swapped,
// action changed to Pass, priority 60 → 40, a namespace relabelled and back, a NetworkPolicy deleted, a rule
// prepended or given a named port) and every PokeServer with upstream's own expectation. One `it` per
// upstream subtest, under a `describe` per upstream test; a test's manifests replace the previous test's and
// its subtests' changes accumulate, as upstream's do.
//
// As upstream, the suite runs against a live implementation: a netfence daemon per node, watching a fake API
// server (with the CRD) that the test writes to as kubectl would (house-daemons.ts). Each change must be
// programmed on both nodes (`netfence diff` in sync) within 10 s of being written; then each poke is judged
// as upstream's PokeServer does: retried until it reads as expected or its 10 s PokeTimeout window closes,
// and a poke expected to fail must time out (a refused connection fails it).
//
// Placement. Upstream runs in kind, where a pod's node is whatever the scheduler picked; here …-0 pods live on
// n1 and …-1 pods on n2, and the hostNetwork centaur-<i> is node n<i+1>'s own agent. Every poke is made as
// written and again from the client's other replica (same namespace and labels, so the same expectation),
// so each upstream assertion is observed both same-node and cross-node.
//
// Pokes from a pod to the centaur on its *own* node go through the node's INPUT chain (CNP's host side,
// src/compile/cluster-policy-host.ts), the cross-node ones through FORWARD: both are asserted, on every
// protocol (the node agents answer UDP and SCTP from the probed address: sandbox-node-replies).
// No upstream subtest uses `domainNames` (netfence's documented gap), so nothing is skipped for it.
//
// Every expectation is also held against the spec oracle (test/helpers/oracle.ts) on the same snapshot;
// a disagreement fails the subtest, since it means the oracle or the transcription is wrong.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns cnp-upstream

import { jest } from '@jest/globals';
import { describeCnpConformance } from '../../helpers/conformance-cnp/run-suite.js';

jest.setTimeout(120_000);

describeCnpConformance(4);
