// ClusterNetworkPolicy tiers in the compiler. Every case states its expectations from the API's words
// (quoted), walks packets through the compiled chains of both nodes (eval-desired.ts), and also checks the
// whole pod × port matrix against the spec oracle (test/helpers/oracle.ts).

import { compile, Compiler } from '../../../src/compile/index.js';
import type {
  ClusterNetworkPolicy,
  ClusterNode,
  ClusterSnapshot,
  DesiredState,
  FamilyState,
  L4Protocol,
  NetworkPolicy,
  Pod,
} from '../../../src/model/index.js';
import {
  hostNetwork,
  ingress,
  ips,
  labels,
  makePod,
  makePolicy,
  nsPeer,
  onNode,
  rule,
  sel,
  settings,
  snapshot,
  tcp,
} from '../../helpers/builders.js';
import {
  cnp,
  cRule,
  cSctp,
  cTcp,
  cUdp,
  house,
  houseNamespaces,
  housePods,
  named,
  networks,
  nodesPeer,
  nsPeerC,
  nsSubject,
  podPeerC,
  podSubject,
} from '../../helpers/cnp-builders.js';
import { evaluate, evaluateCluster } from '../../helpers/eval-desired.js';
import { Oracle } from '../../helpers/oracle.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'], labels: { 'kubernetes.io/hostname': 'node-1', zone: 'a' } },
  { name: 'node-2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'], labels: { 'kubernetes.io/hostname': 'node-2', zone: 'b' } },
];

const NS = (h: string) => `network-policy-conformance-${h}`;

function cluster(cnps: ClusterNetworkPolicy[], policies: NetworkPolicy[] = [], extraPods: Pod[] = []): ClusterSnapshot {
  return snapshot({
    nodes: [...NODES],
    namespaces: houseNamespaces(),
    pods: [...housePods(), ...extraPods],
    policies,
    clusterPolicies: cnps,
  });
}

const alive = (p: Pod) => p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';

function verdicts(snap: ClusterSnapshot) {
  const compiled = new Map<string, DesiredState>();
  const stateOf = (node: string, family: 4 | 6): FamilyState => {
    let d = compiled.get(node);
    if (!d) {
      const podCidrs = NODES.find((n) => n.name === node)!.podCidrs;
      d = compile(snap, settings({ nodeName: node, podCidrs })).desired;
      compiled.set(node, d);
    }
    return family === 4 ? d.v4 : d.v6;
  };
  const nodeOf = (ip: string): string | undefined =>
    snap.pods.find((p) => alive(p) && p.ips.includes(ip))?.nodeName ??
    NODES.find((n) => ip.startsWith(n.podCidrs[0]!.split('.').slice(0, 3).join('.') + '.'))?.name;
  return (src: string, dst: string, proto: L4Protocol, port: number): boolean =>
    evaluateCluster(stateOf, nodeOf, { src, dst, proto, dport: port }).allowed;
}

/** `house-n` → its IP. */
const ip = (snap: ClusterSnapshot, pod: string): string => snap.pods.find((p) => p.name === pod)!.ips[0]!;

const PROBES: readonly (readonly [L4Protocol, number])[] = [
  ['tcp', 80],
  ['tcp', 8080],
  ['udp', 53],
  ['udp', 5353],
  ['sctp', 9003],
  ['sctp', 9005],
];

/** Every pod pair and probe: the compiled chains agree with the oracle. */
function expectMatchesOracle(snap: ClusterSnapshot): void {
  const allowed = verdicts(snap);
  const oracle = new Oracle(snap);
  const pods = snap.pods.filter(alive);
  const mismatches: string[] = [];
  for (const a of pods) {
    for (const b of pods) {
      if (a === b) continue;
      for (const [proto, port] of PROBES) {
        const want = oracle.allows({ src: a.ips[0]!, dst: b.ips[0]!, proto, port });
        const got = allowed(a.ips[0]!, b.ips[0]!, proto, port);
        if (want !== got) mismatches.push(`${a.name} → ${b.name} ${proto}/${port}: oracle ${want}, compiled ${got}`);
      }
    }
  }
  expect(mismatches).toEqual([]);
}

/** Checks explicit expectations and the oracle matrix. */
function check(snap: ClusterSnapshot, cases: readonly (readonly [string, string, L4Protocol, number, boolean])[]): void {
  const allowed = verdicts(snap);
  const got = cases.map(([a, b, proto, port]) => [a, b, proto, port, allowed(ip(snap, a), ip(snap, b), proto, port)]);
  expect(got).toEqual(cases);
  expectMatchesOracle(snap);
}

const G = house('gryffindor');
const S = house('slytherin');
const H = house('hufflepuff');
const R = house('ravenclaw');

describe('ClusterNetworkPolicy tiers', () => {
  it('Admin Pass hands over to NetworkPolicy, and without one to Baseline', () => {
    // "Pass: Skips all further ClusterNetworkPolicy rules in the current tier … and passes evaluation to
    // the next tier." "If [Admin] Pass … NetworkPolicy will apply next or if there is no NetworkPolicy
    // match, Baseline policies will be evaluated."
    const admin = cnp('admin-pass', 'Admin', 10, nsSubject(G), { ingress: [cRule('Pass', [nsPeerC(S)])] });
    const adminDenyLater = cnp('admin-deny', 'Admin', 20, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)])] });
    const baseline = cnp('baseline-deny', 'Baseline', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)])] });
    const np = makePolicy(NS('gryffindor'), 'allow-80-from-slytherin', ingress(rule([nsPeer(S)], [tcp(80)])));
    check(cluster([admin, adminDenyLater, baseline], [np]), [
      ['slytherin-0', 'gryffindor-0', 'tcp', 80, true], // passed over admin-deny, NP allows 80
      ['slytherin-1', 'gryffindor-0', 'tcp', 8080, false], // NP isolates: final
      ['hufflepuff-0', 'gryffindor-1', 'tcp', 80, false], // NP isolates and allows only slytherin
    ]);
    // The NetworkPolicy deleted: Baseline decides for slytherin; hufflepuff falls to default allow.
    check(cluster([admin, adminDenyLater, baseline]), [
      ['slytherin-0', 'gryffindor-0', 'tcp', 80, false],
      ['slytherin-1', 'gryffindor-0', 'udp', 53, false],
      ['hufflepuff-0', 'gryffindor-1', 'tcp', 80, true],
    ]);
  });

  it('NetworkPolicy isolation makes Baseline unreachable', () => {
    // "v1.NetworkPolicy always makes a final decision for selected pods. Further evaluation only happens
    // for Pods not selected by a v1.NetworkPolicy."
    const baseline = cnp('baseline', 'Baseline', 5, nsSubject(G), {
      ingress: [cRule('Deny', [nsPeerC(R)]), cRule('Accept', [nsPeerC(H)])],
    });
    const np = makePolicy(NS('gryffindor'), 'from-ravenclaw', ingress(rule([nsPeer(R)])));
    check(cluster([baseline], [np]), [
      ['ravenclaw-0', 'gryffindor-0', 'tcp', 80, true], // NP allows; Baseline Deny never reached
      ['hufflepuff-0', 'gryffindor-0', 'tcp', 80, false], // NP isolates; Baseline Accept never reached
    ]);
    check(cluster([baseline]), [
      ['ravenclaw-0', 'gryffindor-0', 'tcp', 80, false],
      ['hufflepuff-0', 'gryffindor-0', 'tcp', 80, true],
      ['slytherin-0', 'gryffindor-0', 'tcp', 80, true], // "all pods can communicate" by default
    ]);
  });

  it('an egress Accept leaves the destination ingress rules in force', () => {
    // Accept on egress: "… but any ingress rules at the destination do apply."
    const out = cnp('g-out', 'Admin', 1, nsSubject(G), { egress: [cRule('Accept', [nsPeerC(S)])] });
    const inn = cnp('s-in', 'Admin', 2, nsSubject(S), { ingress: [cRule('Deny', [nsPeerC(G)], [cTcp(80)])] });
    check(cluster([out, inn]), [
      ['gryffindor-0', 'slytherin-0', 'tcp', 80, false], // same node
      ['gryffindor-0', 'slytherin-1', 'tcp', 80, false], // cross node
      ['gryffindor-0', 'slytherin-1', 'tcp', 8080, true],
    ]);
    // The same with a NetworkPolicy at the destination.
    const np = makePolicy(NS('slytherin'), 'only-ravenclaw', ingress(rule([nsPeer(R)])));
    check(cluster([out], [np]), [
      ['gryffindor-0', 'slytherin-0', 'tcp', 80, false],
      ['ravenclaw-1', 'slytherin-0', 'tcp', 80, true],
    ]);
  });

  it('priority orders policies (lower first), rule order inside one; changing either changes the verdict', () => {
    const accept = (prio: number) => cnp('accept-s', 'Admin', prio, nsSubject(G), { ingress: [cRule('Accept', [nsPeerC(S)])] });
    const deny = (prio: number) => cnp('deny-all', 'Admin', prio, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(sel())])] });
    check(cluster([accept(10), deny(20)]), [
      ['slytherin-0', 'gryffindor-1', 'tcp', 80, true],
      ['hufflepuff-0', 'gryffindor-1', 'tcp', 80, false],
    ]);
    check(cluster([accept(30), deny(20)]), [['slytherin-0', 'gryffindor-1', 'tcp', 80, false]]);
    // Equal priority: ties by name ("accept-s" < "deny-all").
    check(cluster([accept(20), deny(20)]), [['slytherin-0', 'gryffindor-1', 'tcp', 80, true]]);
    // Rule order: the first matching rule decides.
    const rules = (first: 'Accept' | 'Deny') =>
      cnp('ordered', 'Admin', 1, nsSubject(G), {
        ingress:
          first === 'Accept'
            ? [cRule('Accept', [nsPeerC(S)]), cRule('Deny', [nsPeerC(S)])]
            : [cRule('Deny', [nsPeerC(S)]), cRule('Accept', [nsPeerC(S)])],
      });
    check(cluster([rules('Accept')]), [['slytherin-0', 'gryffindor-0', 'tcp', 80, true]]);
    check(cluster([rules('Deny')]), [['slytherin-0', 'gryffindor-0', 'tcp', 80, false]]);
  });

  it('no implicit isolation: being a subject changes nothing a rule does not match', () => {
    // CNP rules "should be read as-is": there is no implicit isolation.
    const only = cnp('accept-s', 'Admin', 1, nsSubject(G), { ingress: [cRule('Accept', [nsPeerC(S)], [cTcp(80)])] });
    check(cluster([only]), [
      ['hufflepuff-0', 'gryffindor-0', 'tcp', 8080, true],
      ['slytherin-0', 'gryffindor-0', 'udp', 53, true],
    ]);
  });

  it('pods subjects and peers, ports, ranges, UDP and SCTP, named ports', () => {
    const c = cnp('mixed', 'Admin', 1, podSubject(G, sel({ app: 'gryffindor' })), {
      ingress: [
        cRule('Deny', [podPeerC(S, sel({ app: 'slytherin' }))], [cTcp(8000, 8090), cUdp(5353), cSctp(9003)]),
        cRule('Deny', [nsPeerC(H)], [named('web'), named('dns')]),
      ],
      egress: [cRule('Deny', [nsPeerC(R)], [named('dns'), cSctp()])],
    });
    check(cluster([c]), [
      ['slytherin-0', 'gryffindor-0', 'tcp', 8080, false],
      ['slytherin-0', 'gryffindor-0', 'tcp', 80, true],
      ['slytherin-1', 'gryffindor-0', 'udp', 5353, false],
      ['slytherin-1', 'gryffindor-0', 'sctp', 9003, false],
      ['slytherin-1', 'gryffindor-0', 'sctp', 9005, true],
      ['hufflepuff-0', 'gryffindor-1', 'tcp', 80, false], // web
      ['hufflepuff-0', 'gryffindor-1', 'udp', 53, false], // dns
      ['hufflepuff-0', 'gryffindor-1', 'tcp', 8080, true],
      ['gryffindor-0', 'ravenclaw-1', 'udp', 53, false],
      ['gryffindor-0', 'ravenclaw-1', 'sctp', 9005, false],
      ['gryffindor-0', 'ravenclaw-1', 'tcp', 80, true],
    ]);
  });

  it('networks: a /0 Deny covers pod-to-pod traffic of its family too; the other family is untouched', () => {
    // "if you Accept or Deny traffic to 0.0.0.0/0, that will allow or deny all IPv4 pod-to-pod traffic as well"
    const deny = cnp('deny-world', 'Admin', 1, nsSubject(G), {
      egress: [cRule('Accept', [nsPeerC(S)]), cRule('Deny', [networks('0.0.0.0/0', '::/0')])],
    });
    const snap = cluster([deny]);
    check(snap, [
      ['gryffindor-0', 'hufflepuff-0', 'tcp', 80, false],
      ['gryffindor-0', 'slytherin-1', 'tcp', 80, true],
    ]);
    const allowed = verdicts(snap);
    expect(allowed(ip(snap, 'gryffindor-0'), '8.8.8.8', 'udp', 53)).toBe(false);
    const v6only = cnp('deny-v6', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [networks('::/0')])] });
    check(cluster([v6only]), [['gryffindor-0', 'hufflepuff-0', 'tcp', 80, true]]);
    // A narrower network: a hash:net set.
    const narrow = cnp('deny-net', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [networks('10.244.2.0/24', '8.8.8.0/24')])] });
    const s2 = cluster([narrow]);
    check(s2, [
      ['gryffindor-0', 'hufflepuff-1', 'tcp', 80, false],
      ['gryffindor-0', 'hufflepuff-0', 'tcp', 80, true],
    ]);
    expect(verdicts(s2)(ip(s2, 'gryffindor-0'), '8.8.8.8', 'tcp', 443)).toBe(false);
    expect(verdicts(s2)(ip(s2, 'gryffindor-0'), '9.9.9.9', 'tcp', 443)).toBe(true);
  });

  it("nodes: egress to the selected nodes' addresses (a remote node, through FORWARD)", () => {
    const c = cnp('no-zone-b', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [nodesPeer(sel({ zone: 'b' }))])] });
    const snap = cluster([c]);
    const allowed = verdicts(snap);
    expect(allowed(ip(snap, 'gryffindor-0'), '192.168.0.2', 'tcp', 34345)).toBe(false);
    expect(allowed(ip(snap, 'slytherin-0'), '192.168.0.2', 'tcp', 34345)).toBe(true);
    const oracle = new Oracle(snap);
    expect(oracle.allows({ src: ip(snap, 'gryffindor-0'), dst: '192.168.0.2', proto: 'tcp', port: 34345 })).toBe(false);
  });

  it('host-networked pods are never subjects nor peers', () => {
    // "host-networked pods are not included in subject selection" (and not in peers).
    const centaur = makePod(NS('gryffindor'), 'centaur-1', '192.168.0.2', hostNetwork, onNode('node-2'), labels({ app: 'centaur' }));
    const deny = cnp('deny-g', 'Admin', 1, nsSubject(sel()), { ingress: [cRule('Deny', [nsPeerC(G)])] });
    const snap = cluster([deny], [], [centaur]);
    const allowed = verdicts(snap);
    // From the hostNetwork pod's address (the node's): not a gryffindor peer.
    expect(allowed('192.168.0.2', ip(snap, 'slytherin-0'), 'tcp', 80)).toBe(true);
    expect(allowed(ip(snap, 'gryffindor-1'), ip(snap, 'slytherin-0'), 'tcp', 80)).toBe(false);
    expectMatchesOracle(snap);
  });

  it('fails closed: an Accept it cannot understand matches nothing, a Deny or Pass denies all', () => {
    const unknown = { kind: 'unknown', what: 'domainNames' } as const;
    const acceptUnknown = cnp('a', 'Admin', 1, nsSubject(G), { ingress: [cRule('Accept', [unknown])] });
    const np = makePolicy(NS('gryffindor'), 'deny-all-in', ingress());
    check(cluster([acceptUnknown], [np]), [['slytherin-0', 'gryffindor-0', 'tcp', 80, false]]);
    const denyUnknown = cnp('d', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [unknown])] });
    check(cluster([denyUnknown]), [
      ['gryffindor-0', 'hufflepuff-1', 'udp', 53, false],
      ['hufflepuff-1', 'gryffindor-0', 'udp', 53, true],
    ]);
    const passUnknown = cnp('p', 'Baseline', 1, nsSubject(G), {
      ingress: [cRule('Pass', [nsPeerC(S)], [{ kind: 'unknown', what: 'icmp' }])],
    });
    check(cluster([passUnknown]), [['hufflepuff-0', 'gryffindor-0', 'tcp', 80, false]]);
    const badCidr = cnp('bad', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [networks('10.0.0.0/33')])] });
    const r = compile(cluster([badCidr]), settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] }));
    expect(r.problems.map((p) => `${p.object} ${p.field}`)).toEqual(['ClusterNetworkPolicy bad spec.egress[0].to[0].networks[0]']);
    check(cluster([badCidr]), [['gryffindor-0', 'slytherin-0', 'tcp', 80, false]]);
  });

  it('an object with errors keeps its Denies, loses its Accepts, and its Passes deny', () => {
    const problems = [{ object: 'ClusterNetworkPolicy x', field: 'spec.tier', message: 'bad', severity: 'error' as const }];
    const broken: ClusterNetworkPolicy = {
      ...cnp('x', 'Admin', 1, nsSubject(G), {
        ingress: [cRule('Accept', [nsPeerC(S)]), cRule('Pass', [nsPeerC(H)]), cRule('Deny', [nsPeerC(R)])],
      }),
      problems,
    };
    const np = makePolicy(NS('gryffindor'), 'from-hufflepuff', ingress(rule([nsPeer(H)])));
    check(cluster([broken], [np]), [
      ['slytherin-0', 'gryffindor-0', 'tcp', 80, false],
      ['hufflepuff-0', 'gryffindor-0', 'tcp', 80, false],
      ['ravenclaw-0', 'gryffindor-0', 'tcp', 80, false],
    ]);
  });

  it('deny is a DROP, never a REJECT', () => {
    const deny = cnp('deny', 'Admin', 1, nsSubject(sel()), {
      ingress: [cRule('Deny', [nsPeerC(sel())])],
      egress: [cRule('Deny', [nsPeerC(sel())])],
    });
    const { desired } = compile(cluster([deny]), settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] }));
    const actions = desired.v4.chains.flatMap((c) => c.rules.map((r) => r.action.kind));
    expect(actions).toContain('drop');
    expect(actions).not.toContain('reject');
  });

  it('a cluster without ClusterNetworkPolicies compiles exactly as before', () => {
    const np = makePolicy(NS('gryffindor'), 'np', ingress(rule([nsPeer(S)])));
    const without = snapshot({ nodes: [...NODES], namespaces: houseNamespaces(), pods: housePods(), policies: [np] });
    const empty = { ...without, clusterPolicies: [] };
    const s = settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] });
    expect(compile(empty, s)).toEqual(compile(without, s));
    // And no chain of a pod no CNP selects changes when an unrelated CNP appears.
    const other = cnp('other', 'Admin', 1, nsSubject(R), { ingress: [cRule('Deny', [nsPeerC(S)])] });
    const withCnp = compile({ ...without, clusterPolicies: [other] }, s).desired.v4.chains;
    const before = compile(without, s).desired.v4.chains;
    const gryffindorChains = (chains: typeof before) =>
      chains.filter((c) => c.role.kind === 'workload' && c.role.pod.includes('gryffindor'));
    expect(gryffindorChains(withCnp)).toEqual(gryffindorChains(before));
  });
});

describe('ClusterNetworkPolicy on a dual-stack pod', () => {
  it('networks ::/0 denies v6 egress only; a v6 /64 becomes a v6 hash:net set; v4 keeps flowing', () => {
    const g0 = makePod(NS('gryffindor'), 'g0', '10.244.1.50', ips('10.244.1.50', 'fd00:1::50'), labels({ app: 'g' }));
    const deny = cnp('deny-v6', 'Admin', 1, nsSubject(G), { egress: [cRule('Deny', [networks('::/0')])] });
    const narrow = cnp('deny-v6-net', 'Admin', 2, nsSubject(G), { egress: [cRule('Deny', [networks('fd00:9::/64')])] });
    const snap = snapshot({ nodes: [...NODES], namespaces: houseNamespaces(), pods: [g0], clusterPolicies: [narrow] });
    const s = settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] });
    const v6 = compile(snap, s).desired.v6;
    const packet = (dst: string) => ({ src: 'fd00:1::50', dst, proto: 'tcp' as const, dport: 443, inIface: 'cni0', outIface: 'eth0' });
    expect(v6.ipsets.find((x) => x.type === 'hash:net')?.members).toEqual(['fd00:9::/64']);
    expect(evaluate(v6, packet('fd00:9::1')).verdict).toBe('DROP');
    expect(evaluate(v6, packet('2001:db8::1')).verdict).toBe('ACCEPT');
    const both = compile({ ...snap, clusterPolicies: [deny] }, s).desired;
    expect(evaluate(both.v6, packet('2001:db8::1')).verdict).toBe('DROP');
    expect(evaluate(both.v4, { ...packet('8.8.8.8'), src: '10.244.1.50' }).verdict).toBe('ACCEPT');
  });
});

describe('incremental Compiler with ClusterNetworkPolicies', () => {
  it('equals a fresh compile through a sequence of CNP, namespace, pod and node changes', () => {
    const s = settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] });
    const base = cluster([]);
    const a = cnp('a', 'Admin', 10, nsSubject(G), {
      ingress: [cRule('Pass', [nsPeerC(S)]), cRule('Deny', [nsPeerC(sel())], [named('web')])],
      egress: [cRule('Deny', [nodesPeer(sel({ zone: 'b' }))])],
    });
    const b = cnp('b', 'Baseline', 3, podSubject(sel(), sel({ app: 'slytherin' })), { ingress: [cRule('Deny', [nsPeerC(G)], [cUdp(53)])] });
    const steps: ClusterSnapshot[] = [
      base,
      { ...base, clusterPolicies: [a] },
      { ...base, clusterPolicies: [a, b] },
      { ...base, clusterPolicies: [{ ...a, priority: 40 }, b] },
      { ...base, clusterPolicies: [{ ...a, ingress: [...a.ingress].reverse() }, b] },
      { ...base, clusterPolicies: [{ ...a, ingress: [cRule('Accept', [nsPeerC(S)])] }, b] },
      {
        ...base,
        namespaces: base.namespaces.map((n) =>
          n.name === NS('slytherin') ? { ...n, labels: { ...n.labels, 'conformance-house': 'gryffindor' } } : n,
        ),
        clusterPolicies: [a, b],
      },
      { ...base, nodes: [NODES[0]!, { ...NODES[1]!, addresses: ['192.168.0.22'] }], clusterPolicies: [a, b] },
      {
        ...base,
        pods: base.pods.map((p) =>
          p.name === 'gryffindor-0' ? { ...p, ports: [{ name: 'web', containerPort: 81, protocol: 'TCP' as const }] } : p,
        ),
        clusterPolicies: [a, b],
      },
      { ...base, pods: base.pods.filter((p) => p.name !== 'slytherin-0'), clusterPolicies: [b] },
      { ...base, clusterPolicies: [] },
    ];
    const incremental = new Compiler();
    for (const [i, snap] of steps.entries()) {
      expect([i, incremental.compile(snap, s)]).toEqual([i, compile(snap, s)]);
    }
  });
});
