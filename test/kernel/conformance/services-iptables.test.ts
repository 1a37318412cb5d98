// The upstream NetworkPolicy e2e cases again, every probe dialling the destination pod's ClusterIP
// through kube-proxy in iptables mode (sandbox/kube-proxy): DNAT in nat PREROUTING, so FORWARD
// judges the endpoint pod, same node and across nodes, with exactly the expected matrices of the
// pod-IP run. The diagonal is hairpin: a pod reaching itself through its own Service, always allowed.
// Then the Service paths the matrix cannot show: NodePort sources per externalTrafficPolicy, hairpin
// under deny-all, and (iptables mode) the KUBE-FORWARD reorder bypass and its repair.
//
// Run: node --experimental-vm-modules node_modules/jest/bin/jest.js --selectProjects kernel --runInBand --testPathPatterns services-iptables

import { UPSTREAM_CASES } from '../../helpers/conformance/upstream-cases.js';
import { describeServicePaths } from '../../helpers/conformance/service-paths.js';
import { describeConformance } from '../../helpers/conformance/suite.js';

describeConformance('conformance via ClusterIP: upstream cases behind kube-proxy (iptables mode)', UPSTREAM_CASES, describeServicePaths, {
  kubeProxy: 'iptables',
});
