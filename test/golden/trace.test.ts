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
import { goldenCaseNames, loadGoldenCase, type PacketCase } from '../helpers/golden.js';

function effective(result: TraceResult): 'ACCEPT' | 'DROP' | 'UNDECIDED' {
  if (result.verdict !== 'NO-VERDICT') return result.verdict;
  const droppedByUs = result.steps.some((s) => s.owned && s.result === 'match' && /-j (DROP|REJECT)\b/.test(s.text));
  const after = result.after;
  return !droppedByUs && after?.decidedBy.chain === 'FORWARD' && after.decidedBy.ruleIndex === 0 && after.verdict === 'ACCEPT' ? 'ACCEPT' : 'UNDECIDED';
}

describe.each(goldenCaseNames())('trace rules/%s', (name) => {
  const c = loadGoldenCase(name);
  // The restore payload (`-I FORWARD 1 …`) becomes a FORWARD chain holding only our hook, policy ACCEPT.
  const ruleset = loadRuleset(c.rules, { builtinPolicy: 'ACCEPT' });
  const ipsets = parseIpsetSave(c.ipsets);
  const layout = { bridge: c.settings.bridge, uplink: 'eth0', podCidrs: c.settings.podCidrs };
  const ipOf = (ref: string): string => {
    if (!ref.includes('/')) return ref;
    const [ns, pod] = ref.split('/');
    const found = c.snapshot.pods.find((p) => p.namespace === ns && p.name === pod)?.ips[0];
    if (!found) throw new Error(`packets.yaml names unknown pod ${ref}`);
    return found;
  };

  it('has the pod CIDR of node-1 to decide which end is local', () => expect(c.settings.podCidrs.length).toBeGreaterThan(0));

  if (c.packets.length === 0) return;
  it.each(c.packets.map((p) => [p.name, p] as const))('%s', (_name, p: PacketCase) => {
    const packet = packetFor({ src: ipOf(p.from), dst: ipOf(p.to), proto: p.proto, dport: p.port }, layout);
    const result = tracePacket(ruleset, ipsets, packet);
    expect(result.warnings).toEqual([]);
    expect(result.hookFound).toBe(true);
    expect(effective(result)).toBe(p.expect);
  });
});
