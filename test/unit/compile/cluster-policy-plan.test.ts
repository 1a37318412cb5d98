// Live ClusterNetworkPolicy changes as the planner sees them: a rule swap or a priority change rewrites
// only the chains it touches, in one transaction, and `diff` groups them under the CNP.

import { compile } from '../../../src/compile/index.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';
import { formatPlanDiff } from '../../../src/plan/diff.js';
import { expectedObserved, planFamily } from '../../../src/plan/index.js';
import { settings, snapshot } from '../../helpers/builders.js';
import { cnp, cRule, house, houseNamespaces, housePods, nsPeerC, nsSubject } from '../../helpers/cnp-builders.js';

const s = settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] });
const own = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const G = house('gryffindor');
const guard = cnp('guard', 'Admin', 10, nsSubject(G), {
  ingress: [cRule('Accept', [nsPeerC(house('ravenclaw'))]), cRule('Deny', [nsPeerC(house('ravenclaw'))])],
});
const other = cnp('other', 'Admin', 20, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(house('slytherin'))])] });
const cluster = (...cnps: (typeof guard)[]): ClusterSnapshot =>
  snapshot({ namespaces: houseNamespaces(), pods: housePods(), clusterPolicies: cnps });

function plan(before: ClusterSnapshot, after: ClusterSnapshot) {
  const was = compile(before, s).desired.v4;
  return planFamily(compile(after, s).desired.v4, expectedObserved(was), own, was);
}

describe('ClusterNetworkPolicy changes in the plan', () => {
  it("a rule swap rewrites only that CNP's chain, grouped under it in the diff", () => {
    const p = plan(cluster(guard, other), cluster({ ...guard, ingress: [...guard.ingress].reverse() }, other));
    expect(p.changes.map((c) => [c.object, c.owner])).toEqual([['chain', 'ClusterNetworkPolicy guard']]);
    expect(formatPlanDiff([p])).toContain('### IPv4 ClusterNetworkPolicy guard');
  });

  it("a priority change reorders the jumps of the subjects' workload chains and nothing else", () => {
    const p = plan(cluster(guard, other), cluster({ ...guard, priority: 30 }, other));
    const owners = [...new Set(p.changes.map((c) => c.owner))].sort();
    expect(owners).toEqual(['pod network-policy-conformance-gryffindor/gryffindor-0']);
  });
});
