// inspect on the INPUT side (ClusterNetworkPolicy egress to the pod's own node): a pod's `toNode` chain lists
// the CNP chains it consults, and a missing INPUT jump (or a foreign rule above it) is reported.

import { compile } from '../../../src/compile/index.js';
import { formatReport, inspectRuleset } from '../../../src/inspect/index.js';
import type { ClusterNode } from '../../../src/model/index.js';
import { parseIpsetSave, parseSavedRule, renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import { loadRuleset } from '../../../src/trace/index.js';
import { settings, snapshot } from '../../helpers/builders.js';
import { cnp, cRule, house, houseNamespaces, housePods, nodesPeer, nsSubject } from '../../helpers/cnp-builders.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'], labels: {} },
  { name: 'node-2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'], labels: {} },
];
const guard = cnp('no-nodes', 'Admin', 1, nsSubject(house('gryffindor')), {
  egress: [cRule('Deny', [nodesPeer({ matchLabels: {}, matchExpressions: [] })])],
});
const desired = compile(
  snapshot({ nodes: [...NODES], namespaces: houseNamespaces(), pods: housePods(), clusterPolicies: [guard] }),
  settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] }),
).desired.v4;
/** As `iptables-save` would print it: rendered, then parsed back (hash comments included). */
const rulesetOfDesired = (state: typeof desired) => ({
  ruleset: loadRuleset(renderFullRestore(state)),
  ipsets: parseIpsetSave(renderIpsetRestore(state.ipsets)),
});
const state = desired;

describe('inspect: pods to their own node', () => {
  it("shows the subject pod's chain to its node and the CNP in it; other pods have none; no problems", () => {
    const { ruleset, ipsets } = rulesetOfDesired(state);
    const report = inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' });
    expect(report.problems).toEqual([]);
    const g = report.pods.find((p) => p.pod === 'network-policy-conformance-gryffindor/gryffindor-0')!;
    expect(g.toNode?.policies).toEqual(['ClusterNetworkPolicy no-nodes']);
    expect(report.pods.find((p) => p.pod === 'network-policy-conformance-slytherin/slytherin-0')!.toNode).toBeUndefined();
    const text = formatReport(report);
    expect(text).toMatch(/ {2}to node {2}ClusterNetworkPolicy egress \(1 chain, nf-fh-/);
    expect(text.split('\n').filter((l) => l.length > 80)).toEqual([]);
  });

  it('reports a missing INPUT jump, and a foreign rule above it', () => {
    const { ruleset, ipsets } = rulesetOfDesired(state);
    const input = ruleset.chains.get('INPUT')!;
    ruleset.chains.set('INPUT', { ...input, rules: [] });
    expect(inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' }).problems.map((p) => `${p.kind} ${p.chain}`)).toEqual([
      'missing-hook INPUT',
      'unreferenced-chain nf-INPUT',
    ]);
    const foreign = { ...parseSavedRule('-j ACCEPT', ['-j', 'ACCEPT']), rule: { match: [], action: { kind: 'accept' as const } } };
    ruleset.chains.set('INPUT', { ...input, rules: [foreign, ...input.rules] });
    expect(inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' }).problems.map((p) => `${p.kind} ${p.chain} #${p.ruleIndex}`)).toEqual([
      'foreign-above-hook INPUT #1',
    ]);
  });
});
