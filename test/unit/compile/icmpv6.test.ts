// The ICMPv6 a link needs passes before policy, and nothing else does. Expectations come from the RFCs'
// receiver checks, not from the compiler: ND (RFC 4861) only with hop limit 255, RA and Redirect only
// from link-local sources; MLD (RFC 2710 §3, RFC 3810 §5) only with hop limit 1 from link-local (or,
// for reports, the unspecified) source. Everything else ICMPv6 is judged by policy, and errors about an
// allowed flow pass as conntrack RELATED.

import { compile } from '../../../src/compile/index.js';
import type { ConntrackState } from '../../../src/model/index.js';
import { icmpPacketFor, rulesetOfDesired, tracePacket } from '../../../src/trace/index.js';
import { evaluate, type EvalPacket } from '../../helpers/eval-desired.js';
import { ips, labels, makePod, makePolicy, sel, selectPods, settings, types } from '../../helpers/builders.js';
import { cluster } from './fixtures.js';

const A = { v4: '10.244.1.50', v6: 'fd00:1::50' };
const B = { v4: '10.244.1.51', v6: 'fd00:1::51' };
const LL_A = 'fe80::a8c1:abff:fe00:50';
const podA = makePod('prod', 'a', A.v4, ips(A.v4, A.v6), labels({ app: 'a' }));
// podIPs in the other order: the family decides, not the position.
const podB = makePod('prod', 'b', B.v6, ips(B.v6, B.v4), labels({ app: 'b' }));
const denyAll = makePolicy('prod', 'deny-all', selectPods(sel()), types('Ingress', 'Egress'));
const node = settings({ podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] });
const { desired } = compile(cluster([denyAll], [podA, podB]), node);

interface IcmpCase {
  readonly name: string;
  readonly type: number;
  readonly hopLimit: number;
  readonly src?: string;
  readonly dst?: string;
  readonly ctstate?: ConntrackState;
  /** NONE: netfence gives no verdict (neither end is a pod address), the rest of FORWARD decides. */
  readonly expect: 'ACCEPT' | 'DROP' | 'NONE';
}

// Bridged between two local pods, both isolated both ways with nothing allowed.
const bridged = (c: IcmpCase): EvalPacket => ({
  src: c.src ?? A.v6,
  dst: c.dst ?? B.v6,
  proto: 'ipv6-icmp',
  dport: 0,
  icmpType: c.type,
  hopLimit: c.hopLimit,
  inIface: 'cni0',
  outIface: 'cni0',
  ctstate: c.ctstate ?? 'UNTRACKED',
});

describe('compile: ICMPv6 the link needs, under default-deny both ways', () => {
  it.each<IcmpCase>([
    // RFC 4861 §7.1.1/§7.1.2: "The IP Hop Limit field has a value of 255".
    { name: 'NS, hop limit 255', type: 135, hopLimit: 255, dst: 'ff02::1:ff00:51', expect: 'ACCEPT' },
    { name: 'NS for DAD from ::', type: 135, hopLimit: 255, src: '::', dst: 'ff02::1:ff00:50', expect: 'ACCEPT' },
    { name: 'NA, hop limit 255', type: 136, hopLimit: 255, expect: 'ACCEPT' },
    { name: 'NS with hop limit 254 (was routed)', type: 135, hopLimit: 254, expect: 'DROP' },
    { name: 'NA with hop limit 64', type: 136, hopLimit: 64, expect: 'DROP' },
    // RFC 4861 §6.1.1: RS hop limit 255, any (or the unspecified) source.
    { name: 'RS to all-routers', type: 133, hopLimit: 255, dst: 'ff02::2', expect: 'ACCEPT' },
    // §6.1.2 and §8.1: RA and Redirect "IP Source Address is a link-local address".
    { name: 'RA from link-local', type: 134, hopLimit: 255, src: LL_A, dst: 'ff02::1', expect: 'ACCEPT' },
    { name: 'RA from a global address', type: 134, hopLimit: 255, dst: 'ff02::1', expect: 'DROP' },
    { name: 'Redirect from link-local', type: 137, hopLimit: 255, src: LL_A, expect: 'ACCEPT' },
    { name: 'Redirect from a global address', type: 137, hopLimit: 255, expect: 'DROP' },
    // RFC 2710 §3: MLD "sent with a link-local IPv6 Source Address, an IPv6 Hop Limit of 1".
    { name: 'MLD query from link-local', type: 130, hopLimit: 1, src: LL_A, dst: 'ff02::1', expect: 'ACCEPT' },
    { name: 'MLD query from :: (no pod address: not ours to accept)', type: 130, hopLimit: 1, src: '::', dst: 'ff02::1', expect: 'NONE' },
    { name: "MLD query from a pod's global address", type: 130, hopLimit: 1, dst: 'ff02::1', expect: 'DROP' },
    { name: 'MLDv1 report from link-local', type: 131, hopLimit: 1, src: LL_A, dst: 'ff02::1:ff00:50', expect: 'ACCEPT' },
    { name: 'MLDv1 done from link-local', type: 132, hopLimit: 1, src: LL_A, dst: 'ff02::2', expect: 'ACCEPT' },
    // RFC 3810 §5.2.13: a v2 Report may come from :: "if the sending interface has not acquired a valid link-local address yet".
    { name: 'MLDv2 report from link-local', type: 143, hopLimit: 1, src: LL_A, dst: 'ff02::16', expect: 'ACCEPT' },
    { name: 'MLDv2 report from ::', type: 143, hopLimit: 1, src: '::', dst: 'ff02::16', expect: 'ACCEPT' },
    {
      name: 'MLDv2 report with hop limit 2 (no pod address: not ours to accept)',
      type: 143,
      hopLimit: 2,
      src: LL_A,
      dst: 'ff02::16',
      expect: 'NONE',
    },
    { name: 'MLDv1 report with hop limit 2 to a pod', type: 131, hopLimit: 2, src: LL_A, expect: 'DROP' },
    { name: 'MLDv2 report from a global address', type: 143, hopLimit: 1, dst: 'ff02::16', expect: 'DROP' },
    // Nothing else is always allowed: echo is policy's to judge (as ping is on IPv4).
    { name: 'echo request', type: 128, hopLimit: 64, ctstate: 'NEW', expect: 'DROP' },
    { name: 'echo request with hop limit 255', type: 128, hopLimit: 255, ctstate: 'NEW', expect: 'DROP' },
    { name: 'node information query (139)', type: 139, hopLimit: 255, ctstate: 'NEW', expect: 'DROP' },
    // Errors: for a flow conntrack knows they are RELATED and pass; unrelated ones are policy's.
    { name: 'packet too big, RELATED', type: 2, hopLimit: 64, ctstate: 'RELATED', expect: 'ACCEPT' },
    { name: 'destination unreachable, RELATED', type: 1, hopLimit: 64, ctstate: 'RELATED', expect: 'ACCEPT' },
    { name: 'time exceeded, RELATED', type: 3, hopLimit: 64, ctstate: 'RELATED', expect: 'ACCEPT' },
    { name: 'packet too big for no known flow', type: 2, hopLimit: 64, ctstate: 'INVALID', expect: 'DROP' },
  ])('$name: $expect', (c) => {
    expect(evaluate(desired.v6, bridged(c)).verdict).toBe(c.expect);
  });

  it('ND that did not cross the bridge (arrived from the uplink) is left to policy', () => {
    const routed = { ...bridged({ name: '', type: 135, hopLimit: 255, expect: 'DROP' }), src: 'fd00:2::9', inIface: 'eth0' };
    expect(evaluate(desired.v6, routed).verdict).toBe('DROP');
  });

  it('TCP between the same pods stays denied: the allowance is ICMPv6 only', () => {
    expect(evaluate(desired.v6, { src: A.v6, dst: B.v6, proto: 'tcp', dport: 80, inIface: 'cni0', outIface: 'cni0' }).verdict).toBe('DROP');
  });

  it('ICMP errors of an allowed IPv4 flow pass as RELATED too (PMTUD on both families)', () => {
    // ICMP "fragmentation needed" has no rule of its own: the conntrack accept is the only way through.
    const pkt: EvalPacket = { src: A.v4, dst: B.v4, proto: 'tcp', dport: 0, inIface: 'cni0', outIface: 'cni0', ctstate: 'RELATED' };
    expect(evaluate(desired.v4, pkt).verdict).toBe('ACCEPT');
  });

  it('the IPv4 ruleset holds no ICMPv6 rule', () => {
    const all = desired.v4.chains.flatMap((c) => c.rules.flatMap((r) => r.match));
    expect(
      all.filter((m) => m.kind === 'icmpv6-type' || m.kind === 'hop-limit' || (m.kind === 'protocol' && m.protocol === 'ipv6-icmp')),
    ).toEqual([]);
  });

  it('the tracer agrees: an NS is accepted by the ND rule, an echo request by nothing', () => {
    const { ruleset, ipsets } = rulesetOfDesired(desired.v6);
    const layout = { bridge: 'cni0', uplink: 'eth0', podCidrs: ['fd00:1::/64'] };
    // To B's solicited-node multicast address (RFC 4861 §7.2.2), as the kernel sends it: no pod's address.
    const ns = tracePacket(
      ruleset,
      ipsets,
      icmpPacketFor({ src: A.v6, dst: 'ff02::1:ff00:51', family: 6, type: 135, hopLimit: 255 }, layout),
    );
    expect(ns.verdict).toBe('ACCEPT');
    expect(ns.decidedBy).toMatchObject({
      chain: 'nf-FORWARD',
      action: 'ACCEPT',
      comment: 'ICMPv6 neighbour solicitation, always allowed on the link',
    });
    const echo = tracePacket(ruleset, ipsets, {
      ...icmpPacketFor({ src: A.v6, dst: B.v6, family: 6, type: 128, hopLimit: 64 }, layout),
      ctstate: 'NEW',
    });
    expect(echo.verdict).toBe('DROP');
    expect(echo.decidedBy?.comment).toMatch(/isolated for egress/);
  });
});
