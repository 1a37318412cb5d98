// Which established flows strict mode revokes, from the spec's point of view: after the change, the
// server pod accepts ingress only from app=client pods on TCP 7003 ("If this field is empty or missing,
// this rule matches all sources" does not apply: the rule names a peer and a port). A flow is revoked
// iff a new connection with its tuple would now be refused; the bit comes off a flow allowed again.

import { compile } from '../../../src/compile/index.js';
import type { CtEntry, CtTuple } from '../../../src/dataplane/ctnetlink.js';
import { markUpdates, planRevocations } from '../../../src/revoke/plan.js';
import { rulesetOfDesired, tracePacket, type NodeLayout } from '../../../src/trace/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
} from '../../helpers/builders.js';

const BIT = 0x100000;
const CLIENT = '10.244.1.2';
const SERVER = '10.244.1.3';
const OTHER = '10.244.1.4';
const REMOTE = '10.244.2.9';
const CLUSTER_IP = '10.96.0.10';

const node = settings({ revokeMark: BIT });
const { desired } = compile(
  snapshot({
    nodes: [{ name: node.nodeName, podCidrs: node.podCidrs, addresses: [] }],
    namespaces: [makeNamespace('x')],
    pods: [
      makePod('x', 'client', CLIENT, labels({ app: 'client' })),
      makePod('x', 'server', SERVER, labels({ app: 'server' })),
      makePod('x', 'other', OTHER, labels({ app: 'other' })),
    ],
    policies: [
      makePolicy('x', 'server-in', selectPods(sel({ app: 'server' })), ingress(rule([podPeer(sel({ app: 'client' }))], [tcp(7003)]))),
    ],
  }),
  node,
);
const { ruleset, ipsets } = rulesetOfDesired(desired.v4);
const refuses = (p: Parameters<typeof tracePacket>[2]) => tracePacket(ruleset, ipsets, p).verdict === 'DROP';
const layout: NodeLayout = { bridge: node.bridge, uplink: 'eth0', podCidrs: node.podCidrs };

const PROTO = { tcp: 6, udp: 17, sctp: 132, icmp: 1 } as const;
/** A flow without NAT: the reply tuple mirrors the original. */
function flow(src: string, dst: string, proto: keyof typeof PROTO, dport: number, mark = 0): CtEntry {
  const ports = proto === 'icmp' ? {} : { sport: 40000, dport };
  const orig: CtTuple = { src, dst, proto: PROTO[proto], ...ports };
  const reply: CtTuple = { src: dst, dst: src, proto: PROTO[proto], ...(proto === 'icmp' ? {} : { sport: dport, dport: 40000 }) };
  return { family: 4, orig, reply, mark, zone: 0 };
}
/** A Service flow: the client dialled the ClusterIP; conntrack's reply tuple names the pod that serves. */
function serviceFlow(src: string, pod: string, servicePort: number, podPort: number): CtEntry {
  return {
    family: 4,
    orig: { src, dst: CLUSTER_IP, proto: 6, sport: 40001, dport: servicePort },
    reply: { src: pod, dst: src, proto: 6, sport: podPort, dport: 40001 },
    mark: 0,
    zone: 0,
  };
}

type Outcome = 'revoke' | 'restore' | 'untouched';

describe('planRevocations', () => {
  it.each<{ name: string; entry: CtEntry; expect: Outcome }>([
    { name: 'client → server on a port the policy no longer names', entry: flow(CLIENT, SERVER, 'tcp', 7000), expect: 'revoke' },
    { name: 'client → server UDP: the policy names TCP only', entry: flow(CLIENT, SERVER, 'udp', 7003), expect: 'revoke' },
    { name: 'client → server SCTP', entry: flow(CLIENT, SERVER, 'sctp', 7002), expect: 'revoke' },
    { name: 'client → server on the allowed port', entry: flow(CLIENT, SERVER, 'tcp', 7003), expect: 'untouched' },
    { name: 'other pod → server on the allowed port: not a client', entry: flow(OTHER, SERVER, 'tcp', 7003), expect: 'revoke' },
    { name: 'remote pod → server', entry: flow(REMOTE, SERVER, 'tcp', 7003), expect: 'revoke' },
    {
      name: 'server → client: the server initiated it, and nothing isolates its egress or the client',
      entry: flow(SERVER, CLIENT, 'tcp', 7000),
      expect: 'untouched',
    },
    { name: 'client → other: other is not isolated', entry: flow(CLIENT, OTHER, 'tcp', 7000), expect: 'untouched' },
    { name: 'revoked earlier, allowed now: the bit comes off', entry: flow(CLIENT, SERVER, 'tcp', 7003, BIT), expect: 'restore' },
    { name: 'revoked earlier and still refused: nothing to do', entry: flow(CLIENT, SERVER, 'tcp', 7000, BIT | 0x1), expect: 'untouched' },
    { name: 'other bits of the mark do not count', entry: flow(CLIENT, SERVER, 'tcp', 7003, 0x1), expect: 'untouched' },
    { name: 'ICMP is never judged', entry: flow(CLIENT, SERVER, 'icmp', 0), expect: 'untouched' },
    { name: 'a flow between two other hosts is not ours', entry: flow('192.0.2.1', '192.0.2.2', 'tcp', 7000), expect: 'untouched' },
    { name: 'a flow not ours that carries the bit loses it', entry: flow('192.0.2.1', '192.0.2.2', 'tcp', 7000, BIT), expect: 'restore' },
    {
      name: 'Service flow judged on the pod and its port (post-DNAT): refused',
      entry: serviceFlow(CLIENT, SERVER, 80, 7000),
      expect: 'revoke',
    },
    {
      name: 'Service flow judged on the pod and its port (post-DNAT): allowed',
      entry: serviceFlow(CLIENT, SERVER, 80, 7003),
      expect: 'untouched',
    },
  ])('$name', ({ entry, expect: expected }) => {
    const plan = planRevocations([entry], layout, BIT, refuses);
    const outcome: Outcome = plan.revoke.includes(entry) ? 'revoke' : plan.restore.includes(entry) ? 'restore' : 'untouched';
    expect(outcome).toBe(expected);
  });

  it('walks the rules once per (src, dst, proto, dport), however many flows share it', () => {
    let walks = 0;
    const counting = (p: Parameters<typeof refuses>[0]) => (walks++, refuses(p));
    const entries = Array.from({ length: 50 }, (_, i) => ({
      ...flow(CLIENT, SERVER, 'tcp', 7000),
      orig: { ...flow(CLIENT, SERVER, 'tcp', 7000).orig, sport: 30000 + i },
    }));
    const plan = planRevocations(entries, layout, BIT, counting);
    expect({ walks, revoked: plan.revoke.length, judged: plan.judged, seen: plan.seen }).toEqual({
      walks: 1,
      revoked: 50,
      judged: 1,
      seen: 50,
    });
  });

  it('turns a plan into set and clear updates of the one bit', () => {
    const revoked = flow(CLIENT, SERVER, 'tcp', 7000);
    const restored = flow(CLIENT, SERVER, 'tcp', 7003, BIT);
    const updates = markUpdates(planRevocations([revoked, restored], layout, BIT, refuses), BIT);
    expect(updates).toEqual([
      { family: 4, orig: revoked.orig, zone: 0, value: BIT, mask: BIT },
      { family: 4, orig: restored.orig, zone: 0, value: 0, mask: BIT },
    ]);
  });
});

describe('the compiled ruleset in strict mode', () => {
  it('drops flows carrying the bit first thing in nf-FORWARD, and not at all without strict mode', () => {
    const forward = desired.v4.chains.find((c) => c.name === 'nf-FORWARD')!;
    expect(forward.rules[0]).toMatchObject({ match: [{ kind: 'connmark', value: BIT, mask: BIT }], action: { kind: 'drop' } });
    const plain = compile(snapshot({}), settings()).desired.v4.chains.find((c) => c.name === 'nf-FORWARD')!;
    expect(plain.rules.some((r) => r.match.some((m) => m.kind === 'connmark'))).toBe(false);
  });
});
