// trace on a `domainNames` rule (golden case rules/domain-names-egress): with the destination learned in
// the pod's own set, the verdict names the rule and says for which queried name, when and until when (from
// the member's comment and remaining timeout); without it, the drop names the rule a lookup would open.

import { learnedComment, readComment, ruleComment } from '../../../src/model/index.js';
import { parseIpsetSave } from '../../../src/render/index.js';
import { formatReport, inspectRuleset } from '../../../src/inspect/index.js';
import { formatTrace, loadRuleset, packetFor, tracePacket } from '../../../src/trace/index.js';
import { loadGoldenCase } from '../../helpers/golden.js';

const c = loadGoldenCase('domain-names-egress');
const ruleset = loadRuleset(c.rules, { builtinPolicy: 'ACCEPT' });
const layout = { bridge: 'cni0', uplink: 'eth0', podCidrs: c.settings.podCidrs };
const setOf = (pod: string) => c.result.desired.dns!.sets.find((s) => s.pod === pod)!.setName;
const LEARNED_AT = Date.UTC(2026, 10, 28, 12, 0, 1) / 1000;
const NOW = Date.UTC(2026, 10, 28, 12, 0, 31);
const withLearned = parseIpsetSave(
  `${c.ipsets}add ${setOf('shop/client-0')} 198.51.100.10 timeout 30 comment "${learnedComment({ name: 'good.example', learnedAt: LEARNED_AT })}"\n`,
);
const packet = (from: string, dport = 443) =>
  packetFor(
    { src: c.snapshot.pods.find((p) => `${p.namespace}/${p.name}` === from)!.ips[0]!, dst: '198.51.100.10', proto: 'tcp', dport },
    layout,
  );
const text = (r: ReturnType<typeof tracePacket>, from: string, now?: number) =>
  formatTrace(r, packet(from), { ruleset, chainPrefix: 'nf-', ...(now !== undefined ? { now } : {}) }).replace(/\s+/g, ' ');

describe('trace through a domainNames rule', () => {
  it('allowed: names the rule, the learned name, the pod, when it was learned and until when', () => {
    const result = tracePacket(ruleset, withLearned, packet('shop/client-0'));
    expect(result.verdict).toBe('ACCEPT');
    expect(result.decidedBy).toMatchObject({ policy: 'ClusterNetworkPolicy shop-egress', rule: 'egress:0 payment-api Accept' });
    expect(text(result, 'shop/client-0', NOW)).toContain(
      "allowed: 198.51.100.10 learned for good.example from shop/client-0's lookup at 12:00:01, until 12:01:01",
    );
    expect(text(result, 'shop/client-0')).toContain("from shop/client-0's lookup at 12:00:01, 30 s left");
  });

  it('another pod, or another port: dropped, and the rule a lookup would open is named', () => {
    const other = tracePacket(ruleset, withLearned, packet('shop/client-1'));
    expect(other.verdict).toBe('DROP');
    expect(other.decidedBy).toMatchObject({ rule: 'egress:1 nothing-else Deny' });
    expect(text(other, 'shop/client-1')).toContain(
      'would be allowed by ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept, after shop/client-1 looks up good.example or *.cdn.example',
    );
    // Port 80 is not the rule's: no lookup would open it.
    const port = tracePacket(ruleset, withLearned, packet('shop/client-0', 80));
    expect(port.verdict).toBe('DROP');
    expect(port.afterLookup).toBeUndefined();
  });

  it('the comment names the pod and the names; a wildcard survives sanitizing; too many names end in "..."', () => {
    expect(readComment(ruleComment.cnpLearned('cnp p egress:0 r', 'x/a', ['a.example', '*.b.example']).replace('*', '_'))).toMatchObject({
      kind: 'cluster-policy-rule',
      rule: 'egress:0 r',
      action: 'Accept',
      learned: { pod: 'x/a', names: ['a.example', '*.b.example'] },
    });
    const many = Array.from({ length: 25 }, (_, i) => `name-${i}.long-domain-name.example`);
    const comment = ruleComment.cnpLearned('cnp p egress:0', 'x/a', many);
    expect(comment.length).toBeLessThanOrEqual(200);
    expect(readComment(comment)).toMatchObject({ learned: { pod: 'x/a', names: expect.arrayContaining(['...']) } });
  });
});

describe('inspect on a domainNames rule', () => {
  it('lists what each pod learned per rule: the address, the name, the time left; or nothing yet', () => {
    const report = inspectRuleset(ruleset, withLearned, { chainPrefix: 'nf-' });
    const rules = report.policies.find((p) => p.policy === 'ClusterNetworkPolicy shop-egress')!.rules;
    expect(rules.filter((r) => r.learned).map((r) => r.learned)).toEqual([
      {
        pod: 'shop/client-0',
        names: ['good.example', '*.cdn.example'],
        addresses: [{ address: '198.51.100.10', name: 'good.example', learnedAt: LEARNED_AT, remainingSeconds: 30 }],
      },
      { pod: 'shop/client-1', names: ['good.example', '*.cdn.example'], addresses: [] },
    ]);
    const text = formatReport(report).replace(/\s+/g, ' ');
    expect(text).toContain('learned by shop/client-0 for good.example, *.cdn.example: 198.51.100.10 (good.example, 30 s left)');
    expect(text).toContain('learned by shop/client-1 for good.example, *.cdn.example: nothing learned yet');
  });
});
