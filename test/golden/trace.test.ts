// Every rules/<case>: each packet of packets.yaml, walked by the tracer through the case's rendered rules
// and ipsets, gets the verdict the table expects. Pods map to their IPs; a packet from (to) an address in
// node-1's pod CIDR (the Node's podCIDR in cluster.yaml) enters (leaves) on the bridge, anything else on eth0.
//
// Counting rule: ACCEPT and DROP from our chains count as they are. NO-VERDICT (the packet fell through
// our chains) counts as ACCEPT only if no netfence rule dropped it and the FORWARD policy is ACCEPT —
// which is the policy these tests give the built-in chain, so a NO-VERDICT whose remaining FORWARD
// walk ended in anything but that policy's ACCEPT fails the test.

import { parseIpsetSave } from '../../src/render/index.js';
import { loadRuleset, packetFor, tracePacket, type TraceResult } from '../../src/trace/index.js';
import { goldenCaseNames, loadGoldenCase, packetAddress, packetFamily, type PacketCase } from '../helpers/golden.js';

function effective(result: TraceResult): 'ACCEPT' | 'DROP' | 'UNDECIDED' {
  if (result.verdict !== 'NO-VERDICT') return result.verdict;
  const droppedByUs = result.steps.some((s) => s.owned && s.result === 'match' && /-j (DROP|REJECT)\b/.test(s.text));
  const after = result.after;
  return !droppedByUs && after?.decidedBy.chain === 'FORWARD' && after.decidedBy.ruleIndex === 0 && after.verdict === 'ACCEPT'
    ? 'ACCEPT'
    : 'UNDECIDED';
}

describe.each(goldenCaseNames())('trace rules/%s', (name) => {
  const c = loadGoldenCase(name);
  // The restore payload (`-I FORWARD 1 …`) becomes a FORWARD chain holding only our hook, policy ACCEPT;
  // an IPv6 packet walks the case's IPv6 payload (dual-stack cases only).
  const families = {
    4: { ruleset: loadRuleset(c.rules, { builtinPolicy: 'ACCEPT' }), ipsets: parseIpsetSave(c.ipsets) },
    ...(c.v6 ? { 6: { ruleset: loadRuleset(c.v6.rules, { builtinPolicy: 'ACCEPT' }), ipsets: parseIpsetSave(c.v6.ipsets) } } : {}),
  } as Partial<Record<4 | 6, { ruleset: ReturnType<typeof loadRuleset>; ipsets: ReturnType<typeof parseIpsetSave> }>>;
  const layout = { bridge: c.settings.bridge, uplink: 'eth0', podCidrs: c.settings.podCidrs };

  it('has the pod CIDR of node-1 to decide which end is local', () => expect(c.settings.podCidrs.length).toBeGreaterThan(0));

  if (c.packets.length === 0) return;
  it.each(c.packets.map((p) => [p.name, p] as const))('%s', (_name, p: PacketCase) => {
    const family = packetFamily(p);
    const rules = families[family];
    if (!rules) throw new Error(`packet "${p.name}" is IPv${family}, and rules/${name} has no IPv${family} payload`);
    const packet = packetFor(
      { src: packetAddress(c, p.from, family), dst: packetAddress(c, p.to, family), proto: p.proto, dport: p.port },
      layout,
    );
    const result = tracePacket(rules.ruleset, rules.ipsets, packet);
    expect(result.warnings).toEqual([]);
    expect(result.hookFound).toBe(true);
    expect(effective(result)).toBe(p.expect);
  });
});
