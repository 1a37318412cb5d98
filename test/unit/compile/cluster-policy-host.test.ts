// ClusterNetworkPolicy egress to the local node's own addresses. Such packets are delivered through INPUT,
// never FORWARD, so netfence hooks INPUT (only while some CNP exists) and runs the pod's CNP egress tiers
// there. Expectations from the API's words:
//   nodes: "selects the nodeIPs … by matching on the IPs present in the node.Status.Addresses field";
//   networks: "cluster-internal traffic will be checked against the rule as well";
//   Admin → NetworkPolicy → Baseline, and NetworkPolicy "always makes a final decision for selected pods" —
//   for a pod's own node that decision is allow: "traffic to and from the node where a Pod is running is
//   always allowed, regardless of the IP address of the Pod or the node" (Kubernetes NetworkPolicy docs).
// Each packet walks the compiled rules from the built-in chain it would meet (INPUT to node-1's own
// address, FORWARD to node-2's).

import { compile } from '../../../src/compile/index.js';
import type { ClusterNetworkPolicy, ClusterNode, ClusterSnapshot, FamilyState, NetworkPolicy } from '../../../src/model/index.js';
import { icmpPacketFor, packetFor, rulesetOfDesired, tracePacket, type Packet } from '../../../src/trace/index.js';
import { egress, makePolicy, nsPeer, rule, settings, snapshot, tcp, types } from '../../helpers/builders.js';
import {
  cnp,
  cRule,
  cTcp,
  house,
  houseNamespaces,
  housePods,
  networks,
  nodesPeer,
  nsPeerC,
  nsSubject,
} from '../../helpers/cnp-builders.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'], labels: { 'kubernetes.io/hostname': 'node-1' } },
  { name: 'node-2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'], labels: { 'kubernetes.io/hostname': 'node-2' } },
];
const NODE1 = '192.168.0.1';
const NODE2 = '192.168.0.2';
/** Pods on node-1 (housePods: <house>-0 on node-1). */
const GRYFFINDOR = '10.244.1.10';
const SLYTHERIN = '10.244.1.11';
const G = house('gryffindor');
const ALL_NODES = { matchLabels: {}, matchExpressions: [] };

function cluster(cnps: ClusterNetworkPolicy[], policies: NetworkPolicy[] = []): ClusterSnapshot {
  return snapshot({ nodes: [...NODES], namespaces: houseNamespaces(), pods: housePods(), policies, clusterPolicies: cnps });
}

const compiled = (snap: ClusterSnapshot, family: 4 | 6 = 4): FamilyState => {
  const d = compile(snap, settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] })).desired;
  return family === 4 ? d.v4 : d.v6;
};

/** The verdict of a new TCP connection from a node-1 pod, walked the way the kernel delivers it. */
function allowed(state: FamilyState, src: string, dst: string, port = 80): boolean {
  const { ruleset, ipsets } = rulesetOfDesired(state);
  const local = dst === NODE1;
  const layout = { bridge: 'cni0', uplink: 'eth0', podCidrs: ['10.244.1.0/24'] };
  const packet = { ...packetFor({ src, dst, proto: 'tcp', dport: port }, layout), ...(local ? { outIface: '' } : {}) };
  if (local && !ruleset.chains.has('INPUT')) return true; // nothing of netfence's in INPUT
  const result = tracePacket(ruleset, ipsets, packet, local ? { startChain: 'INPUT' } : {});
  // INPUT: netfence only ever drops; anything else is for the rest of INPUT (policy ACCEPT here).
  if (result.verdict === 'NO-VERDICT') return result.after?.verdict !== 'DROP';
  return result.verdict === 'ACCEPT';
}

const denyNodes = (tier: 'Admin' | 'Baseline', selector = ALL_NODES) =>
  cnp(`${tier.toLowerCase()}-deny-nodes`, tier, 10, nsSubject(G), { egress: [cRule('Deny', [nodesPeer(selector)])] });

describe('ClusterNetworkPolicy egress to the local node (INPUT)', () => {
  it('without any ClusterNetworkPolicy nothing is hooked into INPUT (a cluster without the CRD runs as before)', () => {
    const state = compiled(cluster([], [makePolicy('network-policy-conformance-gryffindor', 'deny-egress', types('Egress'))]));
    expect(state.hooks.map((h) => h.chain)).toEqual(['FORWARD']);
    expect(state.chains.map((c) => c.name).filter((n) => /INPUT|host|fh-/.test(n))).toEqual([]);
    // NetworkPolicy egress isolation does not reach the pod's own node: "always allowed".
    expect(allowed(state, GRYFFINDOR, NODE1)).toBe(true);
  });

  it('an Admin Deny of every node drops the subject pod to its own node (INPUT) and to the other node (FORWARD); non-subjects pass', () => {
    const state = compiled(cluster([denyNodes('Admin')]));
    expect(state.hooks.map((h) => h.chain)).toEqual(['FORWARD', 'INPUT']);
    expect(allowed(state, GRYFFINDOR, NODE1)).toBe(false);
    expect(allowed(state, GRYFFINDOR, NODE2)).toBe(false);
    expect(allowed(state, SLYTHERIN, NODE1)).toBe(true);
    expect(allowed(state, SLYTHERIN, NODE2)).toBe(true);
  });

  it('a nodes selector picks nodes by label: denying node-2 leaves the own node open', () => {
    const state = compiled(cluster([denyNodes('Admin', { matchLabels: { 'kubernetes.io/hostname': 'node-2' }, matchExpressions: [] })]));
    expect(allowed(state, GRYFFINDOR, NODE1)).toBe(true);
    expect(allowed(state, GRYFFINDOR, NODE2)).toBe(false);
  });

  it('a networks peer covering the node address denies it too, per port when it names one', () => {
    const state = compiled(
      cluster([cnp('deny-underlay-80', 'Admin', 5, nsSubject(G), { egress: [cRule('Deny', [networks('192.168.0.0/24')], [cTcp(80)])] })]),
    );
    expect(allowed(state, GRYFFINDOR, NODE1, 80)).toBe(false);
    expect(allowed(state, GRYFFINDOR, NODE1, 8080)).toBe(true);
    expect(allowed(state, GRYFFINDOR, NODE2, 80)).toBe(false);
  });

  it('rule order and priority hold: an Accept first (or in a higher-precedence CNP) lets it through', () => {
    const acceptFirst = cnp('accept-then-deny', 'Admin', 5, nsSubject(G), {
      egress: [cRule('Accept', [nodesPeer(ALL_NODES)]), cRule('Deny', [nodesPeer(ALL_NODES)])],
    });
    expect(allowed(compiled(cluster([acceptFirst])), GRYFFINDOR, NODE1)).toBe(true);
    const earlier = cnp('accept-early', 'Admin', 1, nsSubject(G), { egress: [cRule('Accept', [networks(`${NODE1}/32`)])] });
    expect(allowed(compiled(cluster([earlier, denyNodes('Admin')])), GRYFFINDOR, NODE1)).toBe(true);
    expect(allowed(compiled(cluster([earlier, denyNodes('Admin')])), GRYFFINDOR, NODE2)).toBe(false);
  });

  it('Baseline denies the own node only where no NetworkPolicy selects the pod for egress: NetworkPolicy decides (allow) first', () => {
    const adminPass = cnp('admin-pass', 'Admin', 1, nsSubject(G), { egress: [cRule('Pass', [nodesPeer(ALL_NODES)])] });
    const adminDeny = cnp('admin-deny-later', 'Admin', 2, nsSubject(G), { egress: [cRule('Deny', [nodesPeer(ALL_NODES)])] });
    const baseline = denyNodes('Baseline');
    // "Pass … passes evaluation to the next tier": no NetworkPolicy, so Baseline's Deny decides.
    expect(allowed(compiled(cluster([adminPass, adminDeny, baseline])), GRYFFINDOR, NODE1)).toBe(false);
    // A NetworkPolicy isolating gryffindor's egress to slytherin only: to the own node its decision is
    // "always allowed"; to the other node it is isolated and nothing allows it.
    const np = makePolicy(
      'network-policy-conformance-gryffindor',
      'egress-to-slytherin',
      types('Egress'),
      egress(rule([nsPeer(house('slytherin'))], [tcp(80)])),
    );
    const state = compiled(cluster([adminPass, adminDeny, baseline], [np]));
    expect(allowed(state, GRYFFINDOR, NODE1)).toBe(true);
    expect(allowed(state, GRYFFINDOR, NODE2)).toBe(false);
    expect(allowed(state, GRYFFINDOR, SLYTHERIN)).toBe(true);
  });

  it('an Admin Deny still beats a NetworkPolicy on the own node ("No further ClusterNetworkPolicy or NetworkPolicy rules will be processed")', () => {
    const np = makePolicy('network-policy-conformance-gryffindor', 'egress-all', types('Egress'), egress(rule([], [])));
    expect(allowed(compiled(cluster([denyNodes('Admin')], [np])), GRYFFINDOR, NODE1)).toBe(false);
  });

  it('a CNP with only namespaces/pods peers never matches a node address ("host-networked pods are not included"): not consulted on INPUT', () => {
    const denyAllPods = cnp('deny-all-pods', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [nsPeerC(ALL_NODES)])] });
    const state = compiled(cluster([denyAllPods, denyNodes('Baseline')]));
    expect(allowed(state, GRYFFINDOR, SLYTHERIN)).toBe(false);
    expect(allowed(state, GRYFFINDOR, NODE1)).toBe(false); // the Baseline nodes Deny still decides
    const host = state.chains.find((c) => c.role.kind === 'host-workload' && c.role.ip === GRYFFINDOR)!;
    const cnpChainOf = (name: string) => state.chains.find((c) => c.role.kind === 'cluster-policy' && c.role.policy === name)!.name;
    const jumps = host.rules.flatMap((r) => (r.action.kind === 'jump' ? [r.action.target] : []));
    expect(jumps).toEqual([cnpChainOf('baseline-deny-nodes')]);
    // With only the pod-peer CNP, the pod needs no chain to its node at all.
    const alone = compiled(cluster([denyAllPods]));
    expect(alone.chains.filter((c) => c.role.kind === 'host-workload')).toEqual([]);
    expect(allowed(alone, GRYFFINDOR, NODE1)).toBe(true);
  });

  it('an address of the pod CIDR that no known pod has is dropped at INPUT too (fail-closed), only while CNPs exist', () => {
    expect(allowed(compiled(cluster([denyNodes('Admin')])), '10.244.1.200', NODE1)).toBe(false);
  });
});

// The same on IPv6 (dual-stack nodes and pods), where the pod's neighbour discovery to its node also
// arrives in INPUT: NS/NA/RS/MLD are untracked (no ESTABLISHED to ride on) and are nobody's egress, so
// they must pass a Deny of `::/0` or the pod loses its gateway. The RFCs pin each message (icmpv6.ts):
// RFC 4861 §7.1.1/§7.1.2/§6.1.1: NS, NA, RS "The IP Hop Limit field has a value of 255"; RFC 2710 §3 /
// RFC 3810 §5: MLD "sent with a link-local IPv6 Source Address, an IPv6 Hop Limit of 1" (§5.2.13: a
// v2 Report may come from ::). A locally delivered packet's hop limit is not decremented.
describe('ClusterNetworkPolicy egress to the local node over IPv6 (INPUT)', () => {
  const NODE1_V6 = 'fd00:99::1';
  const NODE2_V6 = 'fd00:99::2';
  const GATEWAY_V6 = 'fd00:10:244:1::1';
  const v6Of = (v4: string) => `fd00:10:244:${v4.split('.')[2]}::${v4.split('.')[3]}`;
  const G6 = v6Of(GRYFFINDOR);
  const S6 = v6Of(SLYTHERIN);
  const LL_G = 'fe80::a8c1:abff:fe00:10';
  const PODS = housePods().map((p) => ({ ...p, ips: [...p.ips, v6Of(p.ips[0]!)] }));
  const NODES_V6: readonly ClusterNode[] = NODES.map((n, i) => ({
    ...n,
    podCidrs: [...n.podCidrs, `fd00:10:244:${i + 1}::/64`],
    addresses: [...n.addresses, `fd00:99::${i + 1}`],
  }));
  const LAYOUT = { bridge: 'cni0', uplink: 'eth0', podCidrs: ['fd00:10:244:1::/64'] };

  const compiled6 = (cnps: ClusterNetworkPolicy[]): FamilyState =>
    compile(
      snapshot({ nodes: [...NODES_V6], namespaces: houseNamespaces(), pods: PODS, policies: [], clusterPolicies: cnps }),
      settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] }),
    ).desired.v6;
  /** INPUT's verdict: netfence only drops; anything it returns goes on to the rest of INPUT (policy ACCEPT here). */
  const delivered = (state: FamilyState, packet: Packet): boolean => {
    const { ruleset, ipsets } = rulesetOfDesired(state);
    if (!ruleset.chains.has('INPUT')) return true;
    const result = tracePacket(ruleset, ipsets, { ...packet, outIface: '' }, { startChain: 'INPUT' });
    return result.verdict === 'NO-VERDICT' ? result.after?.verdict !== 'DROP' : result.verdict === 'ACCEPT';
  };
  const tcpTo = (src: string, dst: string, port = 80): Packet => packetFor({ src, dst, proto: 'tcp', dport: port }, LAYOUT);
  const icmp = (src: string, dst: string, type: number, hopLimit: number): Packet =>
    icmpPacketFor({ src, dst, family: 6, type, hopLimit, toNode: true }, LAYOUT);
  const denyAllV6 = cnp('admin-deny-v6', 'Admin', 10, nsSubject(G), { egress: [cRule('Deny', [networks('::/0')])] });

  it("is hooked only while a CNP exists, as on IPv4, and an Admin Deny of every node drops the subject to its own node's IPv6 address", () => {
    expect(compiled6([]).hooks.map((h) => h.chain)).toEqual(['FORWARD']);
    const state = compiled6([denyNodes('Admin')]);
    expect(state.hooks.map((h) => h.chain)).toEqual(['FORWARD', 'INPUT']);
    expect(delivered(state, tcpTo(G6, NODE1_V6))).toBe(false);
    expect(delivered(state, tcpTo(S6, NODE1_V6))).toBe(true);
    // The other node's address is routed: FORWARD, not INPUT (the node peer's set holds it).
    const { ruleset, ipsets } = rulesetOfDesired(state);
    expect(tracePacket(ruleset, ipsets, { ...tcpTo(G6, NODE2_V6), outIface: 'eth0' }).verdict).toBe('DROP');
  });

  it.each([
    { name: "NS to the gateway's solicited-node group", src: G6, dst: 'ff02::1:ff00:1', type: 135, hopLimit: 255, pass: true },
    { name: 'NS to the gateway (NUD, unicast)', src: G6, dst: GATEWAY_V6, type: 135, hopLimit: 255, pass: true },
    // From :: or a link-local source no pod dispatch matches anyway; the rule is what saves the pod's own address.
    { name: 'NS for DAD from ::', src: '::', dst: 'ff02::1:ff00:10', type: 135, hopLimit: 255, pass: true },
    { name: 'NA to the gateway', src: G6, dst: GATEWAY_V6, type: 136, hopLimit: 255, pass: true },
    { name: 'RS to all-routers', src: LL_G, dst: 'ff02::2', type: 133, hopLimit: 255, pass: true },
    { name: 'MLDv2 report from link-local', src: LL_G, dst: 'ff02::16', type: 143, hopLimit: 1, pass: true },
    { name: 'MLDv2 report from ::', src: '::', dst: 'ff02::16', type: 143, hopLimit: 1, pass: true },
    // Not ND/MLD as the RFCs define them: judged by the pod's CNP like any packet.
    { name: 'NS with hop limit 254', src: G6, dst: GATEWAY_V6, type: 135, hopLimit: 254, pass: false },
    { name: 'MLDv2 report from a global address', src: G6, dst: 'ff02::16', type: 143, hopLimit: 1, pass: false },
    { name: 'echo request to the gateway', src: G6, dst: GATEWAY_V6, type: 128, hopLimit: 64, pass: false },
  ])('a pod denied ::/0 by an Admin CNP: $name → delivered: $pass', ({ src, dst, type, hopLimit, pass }) => {
    const packet = { ...icmp(src, dst, type, hopLimit), ...(type === 128 ? { ctstate: 'NEW' as const } : {}) };
    expect(delivered(compiled6([denyAllV6]), packet)).toBe(pass);
  });

  it("the ND allowance returns, never accepts (the host's own INPUT rules still decide), and sits on the IPv6 INPUT chain only", () => {
    const input6 = compiled6([denyAllV6]).chains.find((c) => c.name === 'nf-INPUT')!;
    const icmpRules = input6.rules.filter((r) => r.match.some((m) => m.kind === 'icmpv6-type'));
    expect(icmpRules.length).toBe(11);
    expect(icmpRules.every((r) => r.action.kind === 'return' && !r.match.some((m) => m.kind === 'out-iface'))).toBe(true);
    const input4 = compiled(cluster([denyNodes('Admin')])).chains.find((c) => c.name === 'nf-INPUT')!;
    expect(input4.rules.filter((r) => r.match.some((m) => m.kind === 'icmpv6-type'))).toEqual([]);
  });
});
