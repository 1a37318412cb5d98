// The operator tools on ClusterNetworkPolicy chains (golden case rules/cluster-network-policy-tiers):
// trace names the CNP and rule that decided and the Pass on the way; inspect lists a pod's chains in tier
// order; the plan groups chain changes by ClusterNetworkPolicy.

import { inspectRuleset, formatReport } from '../../../src/inspect/index.js';
import { parseIpsetSave } from '../../../src/render/index.js';
import { formatTrace, loadRuleset, packetFor, tracePacket } from '../../../src/trace/index.js';
import { loadGoldenCase } from '../../helpers/golden.js';

const c = loadGoldenCase('cluster-network-policy-tiers');
const ruleset = loadRuleset(c.rules, { builtinPolicy: 'ACCEPT' });
const ipsets = parseIpsetSave(c.ipsets);
const layout = { bridge: 'cni0', uplink: 'eth0', podCidrs: c.settings.podCidrs };
const ipOf = (name: string) => c.snapshot.pods.find((p) => p.name === name)!.ips[0]!;

describe('trace through ClusterNetworkPolicy tiers', () => {
  it('names the CNP and rule that denied', () => {
    const packet = packetFor({ src: ipOf('ravenclaw-1'), dst: ipOf('gryffindor-0'), proto: 'tcp', dport: 80 }, layout);
    const result = tracePacket(ruleset, ipsets, packet);
    expect(result.verdict).toBe('DROP');
    expect(result.decidedBy).toMatchObject({
      policy: 'ClusterNetworkPolicy admin-guard',
      rule: 'ingress:1 deny-ravenclaw Deny',
      direction: 'ingress',
    });
    const text = formatTrace(result, packet, { ruleset, chainPrefix: 'nf-' }).replace(/\s+/g, ' ');
    expect(text).toContain('verdict DROP: denied by ClusterNetworkPolicy admin-guard rule ingress:1 deny-ravenclaw Deny');
  });

  it('shows the Pass that handed the packet to the NetworkPolicy that accepted it', () => {
    const packet = packetFor({ src: ipOf('slytherin-0'), dst: ipOf('gryffindor-0'), proto: 'tcp', dport: 80 }, layout);
    const result = tracePacket(ruleset, ipsets, packet);
    expect(result.verdict).toBe('ACCEPT');
    expect(result.allowedBy.map((a) => [a.policy, a.rule])).toEqual(
      expect.arrayContaining([
        ['ClusterNetworkPolicy admin-guard', 'ingress:0 pass-slytherin-web Pass'],
        ['gryffindor/web-from-slytherin', 'ingress:0'],
      ]),
    );
    expect(result.decidedBy).toMatchObject({ policy: 'gryffindor/web-from-slytherin', rule: 'ingress:0' });
  });
});

describe('inspect with ClusterNetworkPolicy tiers', () => {
  const report = inspectRuleset(ruleset, ipsets, { chainPrefix: 'nf-' });

  it("lists a pod's chains in evaluation order: Admin by priority, NetworkPolicy, Baseline", () => {
    const g = report.pods.find((p) => p.pod === 'gryffindor/gryffindor-0')!;
    expect(g.ingress?.policies).toEqual(['ClusterNetworkPolicy admin-guard', 'gryffindor/web-from-slytherin']);
    expect(g.egress?.policies).toEqual(['ClusterNetworkPolicy admin-dns', 'ClusterNetworkPolicy admin-guard']);
    const h = report.pods.find((p) => p.pod === 'hufflepuff/hufflepuff-0')!;
    expect(h.ingress).toMatchObject({ isolated: false, policies: ['ClusterNetworkPolicy baseline-hufflepuff'] });
  });

  it('shows each CNP rule with its action', () => {
    const guard = report.policies.find((p) => p.policy === 'ClusterNetworkPolicy admin-guard' && p.direction === 'ingress')!;
    expect(guard.rules.map((r) => r.rule)).toEqual(['ingress:0 pass-slytherin-web Pass', 'ingress:1 deny-ravenclaw Deny']);
    expect(guard.usedBy).toEqual(['gryffindor/gryffindor-0']);
    expect(formatReport(report)).toContain('ClusterNetworkPolicy admin-guard');
  });
});
