// Audit mode in the compiler, checked against the spec oracle twice: packets walked through the compiled
// chains of both nodes must get the verdict of the cluster WITHOUT the audited objects (they are not
// enforced: "a pod is not isolated" by a policy that is only audited), and the audit log rules they meet
// must say where the verdict of the cluster WITH them (all enforced) differs.

import { compile } from '../../../src/compile/index.js';
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
  ingress,
  egress,
  makePolicy,
  nsPeer,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
  types,
} from '../../helpers/builders.js';
import { rulesetOfDesired, packetFor, tracePacket } from '../../../src/trace/index.js';
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
import { evaluateCluster, type Hop } from '../../helpers/eval-desired.js';
import { Oracle } from '../../helpers/oracle.js';

const NODES: readonly ClusterNode[] = [
  { name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'], labels: { 'kubernetes.io/hostname': 'node-1' } },
  { name: 'node-2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'], labels: { 'kubernetes.io/hostname': 'node-2' } },
];
const NS = (h: string) => `network-policy-conformance-${h}`;
const G = house('gryffindor');
const S = house('slytherin');
const H = house('hufflepuff');
const PROBES: readonly (readonly [L4Protocol, number])[] = [
  ['tcp', 80],
  ['tcp', 8080],
  ['udp', 53],
];

const audited = <T extends NetworkPolicy | ClusterNetworkPolicy>(o: T): T => ({ ...o, audit: true });
const cluster = (policies: readonly NetworkPolicy[], cnps: readonly ClusterNetworkPolicy[] = []): ClusterSnapshot =>
  snapshot({ nodes: [...NODES], namespaces: houseNamespaces(), pods: housePods(), policies: [...policies], clusterPolicies: [...cnps] });
const alive = (p: Pod) => p.ips.length > 0 && !p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed';

interface Walked {
  readonly allowed: boolean;
  /** NFLOG prefixes of the audit log rules the packet met, on every hop. */
  readonly audit: readonly string[];
  /** `node prefix` of the drop log rules (`nf:cnp:`, `nf:iso:`) the packet met, on every hop. */
  readonly drops: readonly string[];
  /** Hops whose drop log disagrees with their verdict (`node: dropped, not logged` or `node: logged, not dropped`). */
  readonly misLogged: readonly string[];
}

function walker(snap: ClusterSnapshot): (src: string, dst: string, proto: L4Protocol, port: number) => Walked {
  const compiled = new Map<string, DesiredState>();
  const stateOf = (node: string, family: 4 | 6): FamilyState => {
    let d = compiled.get(node);
    if (!d)
      compiled.set(node, (d = compile(snap, settings({ nodeName: node, podCidrs: NODES.find((n) => n.name === node)!.podCidrs })).desired));
    return family === 4 ? d.v4 : d.v6;
  };
  const nodeOf = (ip: string): string | undefined => snap.pods.find((p) => alive(p) && p.ips.includes(ip))?.nodeName;
  const logged = (hop: Hop): string[] =>
    hop.result.path.flatMap((at) => {
      const [chain, index] = at.split('#');
      const r = stateOf(hop.node, 4).chains.find((c) => c.name === chain)?.rules[Number(index)];
      return r?.action.kind === 'nflog' ? [r.action.prefix] : [];
    });
  const isDrop = (prefix: string): boolean => prefix.startsWith('nf:cnp:') || prefix.startsWith('nf:iso:');
  return (src, dst, proto, port) => {
    const { allowed, hops } = evaluateCluster(stateOf, nodeOf, { src, dst, proto, dport: port });
    const misLogged = hops.flatMap((hop) => {
      const dropped = hop.result.verdict === 'DROP';
      const drops = logged(hop).filter(isDrop).length;
      return dropped === drops > 0 ? [] : [`${hop.node}: ${dropped ? 'dropped, not logged' : 'logged, not dropped'}`];
    });
    return {
      allowed,
      audit: hops.flatMap((hop) => logged(hop).filter((p) => p.startsWith('nf:aud:'))),
      drops: hops.flatMap((hop) => logged(hop).flatMap((p) => (isDrop(p) ? [`${hop.node} ${p}`] : []))),
      misLogged,
    };
  };
}

/**
 * Every pod pair and probe: enforced as the oracle without the audited objects; logged where the oracle with them
 * differs; and every drop flow-logged exactly as the cluster without the audited objects logs it (the same
 * `nf:cnp:` rule or `nf:iso:` chain, docs/audit.md), no drop unlogged and no log without a drop.
 */
function expectAudit(
  policies: readonly NetworkPolicy[],
  cnps: readonly ClusterNetworkPolicy[] = [],
): { wouldDeny: number; wouldAllow: number } {
  const snap = cluster(policies, cnps);
  const real = new Oracle(
    cluster(
      policies.filter((p) => !p.audit),
      cnps.filter((c) => !c.audit),
    ),
  );
  const all = new Oracle(
    cluster(
      policies.map(({ audit: _a, ...p }) => p),
      cnps.map(({ audit: _a, ...c }) => c),
    ),
  );
  const walk = walker(snap);
  const walkEnforced = walker(
    cluster(
      policies.filter((p) => !p.audit),
      cnps.filter((c) => !c.audit),
    ),
  );
  const pods = snap.pods.filter(alive);
  const wrong: string[] = [];
  let wouldDeny = 0;
  let wouldAllow = 0;
  for (const a of pods)
    for (const b of pods) {
      if (a === b) continue;
      for (const [proto, port] of PROBES) {
        const pkt = { src: a.ips[0]!, dst: b.ips[0]!, proto, port };
        const now = real.allows(pkt);
        const audit = all.allows(pkt);
        const got = walk(pkt.src, pkt.dst, proto, port);
        const deniedLog = got.audit.some((p) => p.startsWith('nf:aud:d:'));
        const allowedLog = got.audit.some((p) => p.startsWith('nf:aud:a:'));
        const cell = `${a.name} → ${b.name} ${proto}/${port}`;
        if (got.allowed !== now) wrong.push(`${cell}: enforced ${got.allowed}, oracle without the audited objects ${now}`);
        // Judged per direction: a would-deny is logged for every connection allowed now and denied with
        // them, and never for one they would allow.
        if (now && !audit && !deniedLog) wrong.push(`${cell}: would be denied, not logged`);
        if (audit && deniedLog) wrong.push(`${cell}: logged as would-deny, but allowed with the audited objects`);
        if (!now && audit && !allowedLog) wrong.push(`${cell}: would be allowed, not logged`);
        if (!audit && allowedLog) wrong.push(`${cell}: logged as would-allow, but denied with the audited objects`);
        if (now === audit && now && got.audit.length > 0) wrong.push(`${cell}: unchanged, but logged ${got.audit.join(', ')}`);
        const enforcedDrops = walkEnforced(pkt.src, pkt.dst, proto, port).drops;
        if (got.drops.join(', ') !== enforcedDrops.join(', '))
          wrong.push(`${cell}: drop log [${got.drops.join(', ')}], without the audited objects [${enforcedDrops.join(', ')}]`);
        wrong.push(...got.misLogged.map((m) => `${cell} at ${m}`));
        if (now && !audit) wouldDeny++;
        if (!now && audit) wouldAllow++;
      }
    }
  expect(wrong).toEqual([]);
  return { wouldDeny, wouldAllow };
}

const defaultDeny = (ns: string): NetworkPolicy => makePolicy(NS(ns), 'default-deny', types('Ingress'));

describe('audit mode: audited objects are absent for the verdict and present for the log', () => {
  it('an audited default-deny in a namespace enforces nothing and logs every connection into it', () => {
    const counts = expectAudit([audited(defaultDeny('gryffindor'))]);
    expect(counts.wouldDeny).toBeGreaterThan(0);
  });

  it('an audited allow beside an enforced isolation: would-allow for what it opens', () => {
    const enforced = makePolicy(NS('gryffindor'), 'only-slytherin', ingress(rule([nsPeer(S)])));
    const opening = audited(makePolicy(NS('gryffindor'), 'hufflepuff-80', ingress(rule([nsPeer(H)], [tcp(80)]))));
    const counts = expectAudit([enforced, opening]);
    expect(counts.wouldAllow).toBeGreaterThan(0);
  });

  it('audited egress default-deny and a pod-selecting audited ingress policy', () => {
    const egressDeny = audited(makePolicy(NS('slytherin'), 'no-egress', types('Egress')));
    const narrow = audited(makePolicy(NS('hufflepuff'), 'web', selectPods(sel()), ingress(rule([podPeer(sel())], [tcp(80)]))));
    const enforcedEgress = makePolicy(NS('slytherin'), 'egress-80', types('Egress'), egress(rule(undefined, [tcp(80)])));
    expectAudit([egressDeny, narrow, enforcedEgress]);
  });

  it('an audited Admin Deny, with an enforced Baseline Deny under it', () => {
    const guard = audited(cnp('guard', 'Admin', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)])] }));
    const baseline = cnp('baseline', 'Baseline', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(H)])] });
    expect(expectAudit([], [guard, baseline]).wouldDeny).toBeGreaterThan(0);
  });

  it('an audited Admin Pass over an enforced Admin Deny: would-allow through the lower tiers', () => {
    // "Pass: Skips all further ClusterNetworkPolicy rules in the current tier"
    const pass = audited(cnp('pass', 'Admin', 5, nsSubject(G), { ingress: [cRule('Pass', [nsPeerC(S)])] }));
    const deny = cnp('deny', 'Admin', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)])] });
    expect(expectAudit([], [pass, deny]).wouldAllow).toBeGreaterThan(0);
  });

  it('a pod only an audited NetworkPolicy selects is judged by the Baseline tier for real', () => {
    // "Baseline … only for pods no NetworkPolicy selects": an audited one does not count.
    const np = audited(makePolicy(NS('gryffindor'), 'from-hufflepuff', ingress(rule([nsPeer(H)]))));
    const baseline = cnp('baseline', 'Baseline', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(H)])] });
    const counts = expectAudit([np], [baseline]);
    expect(counts.wouldAllow).toBeGreaterThan(0);
    expect(counts.wouldDeny).toBeGreaterThan(0);
  });

  it('an audited Baseline Deny beside an enforced Admin Accept', () => {
    const accept = cnp('accept', 'Admin', 10, nsSubject(G), { ingress: [cRule('Accept', [nsPeerC(S)])] });
    const baseline = audited(
      cnp('baseline', 'Baseline', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)]), cRule('Deny', [nsPeerC(H)])] }),
    );
    expect(expectAudit([], [accept, baseline]).wouldDeny).toBeGreaterThan(0);
  });

  it('an enforced isolation under an audited Admin Accept: the isolation drop is logged as such, would-allow beside it', () => {
    const enforced = makePolicy(NS('gryffindor'), 'only-slytherin', ingress(rule([nsPeer(S)])));
    const accept = audited(cnp('open-hufflepuff', 'Admin', 10, nsSubject(G), { ingress: [cRule('Accept', [nsPeerC(H)])] }));
    expect(expectAudit([enforced], [accept]).wouldAllow).toBeGreaterThan(0);
  });

  it('an enforced Admin Deny below an audited Admin Deny and an audited NetworkPolicy: each enforced drop names its rule', () => {
    const guard = audited(cnp('guard', 'Admin', 5, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(H)], [cTcp(80)])] }));
    const deny = cnp('deny', 'Admin', 10, nsSubject(G), {
      ingress: [cRule('Accept', [nsPeerC(H)], [cTcp(8080)]), cRule('Deny', [nsPeerC(S)]), cRule('Deny', [nsPeerC(H)])],
    });
    const np = audited(makePolicy(NS('gryffindor'), 'from-slytherin', ingress(rule([nsPeer(S)]))));
    const counts = expectAudit([np], [guard, deny]);
    expect(counts.wouldDeny).toBeGreaterThan(0);
  });

  it("the enforced drop's flow log judges the enforced CNP chains themselves, after the verdict stands; nothing with flow logs off", () => {
    const guard = audited(cnp('guard', 'Admin', 5, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(H)])] }));
    const deny = cnp('deny', 'Admin', 10, nsSubject(G), { ingress: [cRule('Deny', [nsPeerC(S)])] });
    const layout = (flowLog: boolean) => {
      const tweak = { nodeName: 'node-1', podCidrs: ['10.244.1.0/24'], ...(flowLog ? {} : { flowLog: undefined }) };
      const { chains } = compile(cluster([], [guard, deny]), settings(tweak)).desired.v4;
      const role = (name: string) => chains.find((c) => c.name === name)?.role;
      const chain = chains.find(
        (c) => c.role.kind === 'workload' && c.role.direction === 'ingress' && c.role.pod === `${NS('gryffindor')}/gryffindor-0`,
      )!;
      // What the chain does once the enforced verdict is restored (the rule commented `audited allow not enforced`).
      const after = chain.rules.slice(chain.rules.findIndex((r) => r.comment === 'audited allow not enforced') + 3);
      return after.map((r) => {
        if (r.action.kind !== 'jump') return r.comment ?? r.action.kind;
        const target = role(r.action.target);
        return target?.kind === 'cluster-policy' ? `${target.policy}${target.verdictOnly ? ' (verdict-only)' : ''}` : r.action.target;
      });
    };
    // The real chains, whose Deny logs `nf:cnp:` and drops; only the enforced ones; then the DROP as before.
    expect(layout(true)).toEqual(['which enforced rule drops', 'deny', 'end of admin tier', expect.stringMatching(/isolated/)]);
    expect(layout(false)).toEqual([expect.stringMatching(/isolated/)]);
  });

  it('without the annotation the chains are those of the enforced policy (no audit rules at all)', () => {
    const snap = cluster([defaultDeny('gryffindor')]);
    const rules = compile(snap, settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] })).desired.v4.chains.flatMap((c) => c.rules);
    expect(rules.filter((r) => r.action.kind === 'nflog' && r.action.prefix.startsWith('nf:aud:'))).toEqual([]);
  });
});

// A pod's connection to its own node is delivered through INPUT, where netfence runs the pod's CNP egress
// tiers while some ClusterNetworkPolicy exists (cluster-policy-host.test.ts). Audited objects are not
// enforced there either ("audited CNPs are not enforced there", docs/audit.md): the verdict on the way to
// the own node (INPUT) and to the other node (FORWARD) is the oracle's without the audited objects. An
// audited Deny drops nothing; an audited Accept or Pass lets nothing past an enforced Deny below it; an
// audited NetworkPolicy does not stand in for the pod's NetworkPolicy tier.
describe("audit mode on the way to a pod's node (INPUT to its own, FORWARD to the other)", () => {
  const NODE1 = NODES[0]!.addresses[0]!;
  const NODE2 = NODES[1]!.addresses[0]!;
  const LAYOUT = { bridge: 'cni0', uplink: 'eth0', podCidrs: ['10.244.1.0/24'] };
  const EVERY_NODE = nodesPeer({ matchLabels: {}, matchExpressions: [] });

  /** node-1's verdict on a new TCP connection from one of its pods to a node address, walked as the kernel delivers it. */
  function delivered(state: FamilyState, src: string, dst: string, port: number): boolean {
    const { ruleset, ipsets } = rulesetOfDesired(state);
    const local = dst === NODE1;
    if (local && !ruleset.chains.has('INPUT')) return true; // nothing of netfence's in INPUT
    const packet = { ...packetFor({ src, dst, proto: 'tcp', dport: port }, LAYOUT), ...(local ? { outIface: '' } : {}) };
    const result = tracePacket(ruleset, ipsets, packet, local ? { startChain: 'INPUT' } : {});
    // INPUT: netfence only ever drops; what it returns goes on to the rest of INPUT (policy ACCEPT here).
    if (result.verdict === 'NO-VERDICT') return result.after?.verdict !== 'DROP';
    return result.verdict === 'ACCEPT';
  }

  /** Every node-1 pod to both nodes on 80 and 8080: enforced as the oracle without the audited objects. Returns the cells the audited objects would change. */
  function expectEnforcedWithoutAudited(policies: readonly NetworkPolicy[], cnps: readonly ClusterNetworkPolicy[]): number {
    const snap = cluster(policies, cnps);
    const state = compile(snap, settings({ nodeName: 'node-1', podCidrs: ['10.244.1.0/24'] })).desired.v4;
    const without = new Oracle(
      cluster(
        policies.filter((p) => !p.audit),
        cnps.filter((c) => !c.audit),
      ),
    );
    const withThem = new Oracle(
      cluster(
        policies.map(({ audit: _a, ...p }) => p),
        cnps.map(({ audit: _a, ...c }) => c),
      ),
    );
    const verdict = (oracle: Oracle, pkt: { src: string; dst: string; proto: 'tcp'; port: number }) =>
      pkt.dst === NODE1 ? oracle.allowsToOwnNode(pkt) : oracle.allows(pkt);
    const wrong: string[] = [];
    let changed = 0;
    for (const pod of snap.pods.filter((p) => alive(p) && p.nodeName === 'node-1'))
      for (const dst of [NODE1, NODE2])
        for (const port of [80, 8080]) {
          const pkt = { src: pod.ips[0]!, dst, proto: 'tcp' as const, port };
          const want = verdict(without, pkt);
          const got = delivered(state, pkt.src, dst, port);
          if (got !== want)
            wrong.push(`${pod.name} → ${dst === NODE1 ? 'own node' : 'node-2'} tcp/${port}: enforced ${got}, oracle ${want}`);
          if (verdict(withThem, pkt) !== want) changed++;
        }
    expect(wrong).toEqual([]);
    return changed;
  }

  const denyNodes = (name: string, tier: 'Admin' | 'Baseline', priority: number) =>
    cnp(name, tier, priority, nsSubject(G), { egress: [cRule('Deny', [EVERY_NODE])] });

  it('an audited Admin Deny of every node drops nothing', () => {
    expect(expectEnforcedWithoutAudited([], [audited(denyNodes('deny-nodes', 'Admin', 10))])).toBeGreaterThan(0);
  });

  it('an audited Admin Accept of every node above an enforced Admin Deny: the Deny still drops', () => {
    const accept = audited(cnp('accept-nodes', 'Admin', 1, nsSubject(G), { egress: [cRule('Accept', [EVERY_NODE])] }));
    expect(expectEnforcedWithoutAudited([], [accept, denyNodes('deny-nodes', 'Admin', 10)])).toBeGreaterThan(0);
  });

  it('an audited Admin Pass above an enforced Admin Deny: the Deny still drops', () => {
    const pass = audited(cnp('pass-nodes', 'Admin', 1, nsSubject(G), { egress: [cRule('Pass', [EVERY_NODE])] }));
    expect(expectEnforcedWithoutAudited([], [pass, denyNodes('deny-nodes', 'Admin', 10)])).toBeGreaterThan(0);
  });

  it('an audited Admin Accept above an enforced Baseline Deny: the Baseline Deny still drops', () => {
    const accept = audited(cnp('accept-nodes', 'Admin', 1, nsSubject(G), { egress: [cRule('Accept', [EVERY_NODE])] }));
    expect(expectEnforcedWithoutAudited([], [accept, denyNodes('baseline-nodes', 'Baseline', 10)])).toBeGreaterThan(0);
  });

  it("an audited NetworkPolicy does not take the NetworkPolicy tier's place: the Baseline Deny still drops to the own node", () => {
    const np = audited(makePolicy(NS('gryffindor'), 'egress-80', types('Egress'), egress(rule(undefined, [tcp(80)]))));
    expect(expectEnforcedWithoutAudited([np], [denyNodes('baseline-nodes', 'Baseline', 10)])).toBeGreaterThan(0);
  });

  it('an audited Deny of one port beside an enforced Deny of another, on a networks peer', () => {
    const audited80 = audited(
      cnp('deny-80', 'Admin', 5, nsSubject(G), { egress: [cRule('Deny', [networks('192.168.0.0/24')], [cTcp(80)])] }),
    );
    const enforced8080 = cnp('deny-8080', 'Admin', 6, nsSubject(G), {
      egress: [cRule('Deny', [networks('192.168.0.0/24')], [cTcp(8080)])],
    });
    expect(expectEnforcedWithoutAudited([], [audited80, enforced8080])).toBeGreaterThan(0);
  });
});
