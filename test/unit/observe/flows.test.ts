// Explaining logged packets against a compiled node: the pods at both ends, the direction and the
// reason in trace's words, for every drop netfence logs (isolated, invalid policy, unknown local pod, a
// ClusterNetworkPolicy Deny and the `domainNames` rule a lookup would have opened).

import { compile } from '../../../src/compile/index.js';
import { dropPrefix, parseDropPrefix, ruleId, type DropCode } from '../../../src/compile/flow-log.js';
import type { NflogPacket } from '../../../src/dataplane/nflog.js';
import {
  DEFAULT_FLOW_LOG,
  type Chain,
  type ChainName,
  type ClusterSnapshot,
  type DesiredState,
  type Rule,
} from '../../../src/model/index.js';
import { missedLookups } from '../../../src/observe/flow-lookups.js';
import { explainAllowed, explainAudit, explainDrop, explainsDrop, invalidPoliciesOf, PodIndex } from '../../../src/observe/flows.js';
import {
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
  types,
} from '../../helpers/builders.js';
import { cnp, cRule, cTcp, domains, networks, podPeerC, podSubject } from '../../helpers/cnp-builders.js';

const cluster: ClusterSnapshot = snapshot({
  namespaces: [makeNamespace('prod'), makeNamespace('dev')],
  pods: [
    makePod('prod', 'db', '10.244.1.5', labels({ app: 'db' })),
    makePod('prod', 'web', '10.244.1.6', labels({ app: 'web' })),
    makePod('dev', 'api', '10.244.2.9', labels({ app: 'api' }), onNode('node-2')),
  ],
  policies: [
    makePolicy('prod', 'default-deny', selectPods(sel()), types('Ingress')),
    makePolicy('prod', 'db', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(80)]))),
    makePolicy('prod', 'web-out', selectPods(sel({ app: 'web' })), types('Egress')),
  ],
});
const { desired, problems } = compile(cluster, settings());

const workloadChain = (state: DesiredState, pod: string, direction: 'ingress' | 'egress'): ChainName =>
  state.v4.chains.find((c) => c.role.kind === 'workload' && c.role.pod === pod && c.role.direction === direction)!.name;

/** A packet crossing FORWARD (it has an output interface: the bridge or the uplink). */
const packet = (prefix: string, src: string, dst: string, dstPort = 80): NflogPacket => ({
  group: 9476,
  prefix,
  time: 1000,
  inIfindex: 3,
  outIfindex: 4,
  ip: { family: 4, src, dst, protocol: 6, srcPort: 40000, dstPort },
});

const ctx = (s: ClusterSnapshot = cluster, d: DesiredState = desired, invalid = invalidPoliciesOf(problems)) => ({
  desired: d,
  snapshot: s,
  invalidPolicies: invalid,
});

describe('explainDrop', () => {
  it('ingress of an isolated pod: both pods, every selecting policy, the sentence trace uses', () => {
    const p = packet(dropPrefix({ kind: 'isolated', chain: workloadChain(desired, 'prod/db', 'ingress') }), '10.244.2.9', '10.244.1.5');
    expect(explainDrop(p, ctx(), new PodIndex(() => cluster))).toEqual({
      time: 1000,
      src: { ip: '10.244.2.9', pod: 'dev/api', labels: { app: 'api' } },
      dst: { ip: '10.244.1.5', pod: 'prod/db', labels: { app: 'db' } },
      protocol: 'tcp',
      port: 80,
      srcPort: 40000,
      direction: 'ingress',
      reason: 'isolated',
      pod: 'prod/db',
      policies: ['prod/db', 'prod/default-deny'],
      because: 'prod/db is isolated for ingress; policies prod/db, prod/default-deny select it; none allowed this peer',
    });
  });

  it('egress to outside the cluster, through a policy with no rules', () => {
    const p = packet(dropPrefix({ kind: 'isolated', chain: workloadChain(desired, 'prod/web', 'egress') }), '10.244.1.6', '8.8.8.8', 53);
    expect(explainDrop(p, ctx(), new PodIndex(() => cluster))).toMatchObject({
      src: { ip: '10.244.1.6', pod: 'prod/web' },
      dst: { ip: '8.8.8.8', where: 'outside the cluster' },
      direction: 'egress',
      policies: ['prod/web-out'],
      because: 'prod/web is isolated for egress; policy prod/web-out selects it; none allowed this peer',
    });
  });

  it('an invalid selecting policy turns the reason into invalid-policy and is named', () => {
    const p = packet(dropPrefix({ kind: 'isolated', chain: workloadChain(desired, 'prod/db', 'ingress') }), '10.244.2.9', '10.244.1.5');
    const flow = explainDrop(p, ctx(cluster, desired, new Set(['prod/db'])), new PodIndex(() => cluster));
    expect(flow).toMatchObject({
      reason: 'invalid-policy',
      because:
        'prod/db is isolated for ingress; policies prod/db, prod/default-deny select it; none allowed this peer; prod/db is invalid and allows nothing',
    });
  });

  it('an unknown address of the pod CIDR (fail-closed), in either direction', () => {
    const to = explainDrop(
      packet(dropPrefix({ kind: 'unknown-pod', direction: 'to' }), '10.244.2.9', '10.244.1.77'),
      ctx(),
      new PodIndex(() => cluster),
    );
    expect(to).toMatchObject({
      direction: 'ingress',
      reason: 'unknown-pod',
      src: { pod: 'dev/api' },
      dst: { ip: '10.244.1.77', where: 'outside the cluster' },
      policies: [],
    });
    expect(to!.because).toBe("10.244.1.77 is in this node's pod CIDR but is no known pod (unknown local pods fail closed, ingress)");
    const from = explainDrop(
      packet(dropPrefix({ kind: 'unknown-pod', direction: 'from' }), '10.244.1.77', '10.244.2.9'),
      ctx(),
      new PodIndex(() => cluster),
    );
    expect(from).toMatchObject({ direction: 'egress', reason: 'unknown-pod' });
  });

  it('ignores packets of prefixes netfence did not write, and packets without an IP header', () => {
    expect(explainDrop(packet('someone-else', '1.1.1.1', '2.2.2.2'), ctx(), new PodIndex(() => cluster))).toBeUndefined();
    expect(explainDrop({ group: 1, prefix: 'nf:unk:to', time: 1 }, ctx(), new PodIndex(() => cluster))).toBeUndefined();
  });

  it('a chain reprogrammed away since the packet was logged is said so, not guessed', () => {
    const p = packet(dropPrefix({ kind: 'isolated', chain: 'nf-tw-gone' as ChainName }), '10.244.2.9', '10.244.1.5');
    expect(explainDrop(p, ctx(), new PodIndex(() => cluster))!.because).toBe('dropped by nf-tw-gone, which is no longer programmed');
  });

  it.each([
    ['an egress workload chain', { kind: 'isolated', chain: 'nf-fw-gone' }, 'egress', 'isolated'],
    ['an ingress workload chain', { kind: 'isolated', chain: 'nf-tw-gone' }, 'ingress', 'isolated'],
    ['a ClusterNetworkPolicy egress chain', { kind: 'cluster-deny', chain: 'nf-ce-gone', rule: 1 }, 'egress', 'cluster-deny'],
    ['a ClusterNetworkPolicy ingress chain', { kind: 'cluster-deny', chain: 'nf-ci-gone', rule: 0 }, 'ingress', 'cluster-deny'],
    ["a pod's chain to its node", { kind: 'cluster-deny', chain: 'nf-fh-gone', rule: 0 }, 'egress', 'cluster-deny'],
  ] as const)('%s reprogrammed away: the direction its name tells', (_what, code, direction, reason) => {
    const p = packet(dropPrefix(code as DropCode), '10.244.1.5', '10.244.2.9');
    expect(explainDrop(p, ctx(), new PodIndex(() => cluster))).toMatchObject({
      direction,
      reason,
      policies: [],
      because: `dropped by ${code.chain}, which is no longer programmed`,
    });
  });
});

describe('explainsDrop', () => {
  it('is false while the daemon knows the named chain only in a form that drops nothing (the sync that isolated it is not heard of yet)', () => {
    const before = compile(snapshot({ ...cluster, policies: [] }), settings()).desired;
    const chain = workloadChain(desired, 'prod/web', 'egress');
    expect(workloadChain(before, 'prod/web', 'egress')).toBe(chain);
    const p = packet(dropPrefix({ kind: 'isolated', chain }), '10.244.1.6', '8.8.8.8');
    expect(explainsDrop(p, before)).toBe(false);
    expect(explainsDrop(p, undefined)).toBe(false);
    expect(explainsDrop(p, desired)).toBe(true);
    expect(explainsDrop(packet(dropPrefix({ kind: 'unknown-pod', direction: 'to' }), '1.1.1.1', '10.244.1.9'), undefined)).toBe(true);
  });
});

describe('allowed connections (flowLogAllowed, off by default)', () => {
  const withAllowed = compile(cluster, settings({ flowLog: { ...DEFAULT_FLOW_LOG, allowed: true } })).desired;
  const dbIngress = withAllowed.v4.chains.find((c) => c.role.kind === 'policy' && c.role.policy === 'prod/db')!;

  it('puts a rate-limited log rule with the same matches before each allow, and nothing by default', () => {
    const logIndex = dbIngress.rules.findIndex((r) => r.action.kind === 'nflog');
    const log = dbIngress.rules[logIndex]!;
    const allow = dbIngress.rules[logIndex + 1]!;
    expect(allow.action.kind).toBe('set-mark');
    expect(log.match).toEqual([...allow.match, { kind: 'limit', perSecond: 10, burst: 5 }]);
    expect(log.action).toEqual({
      kind: 'nflog',
      group: 9476,
      prefix: `nf:alw:${dbIngress.name}:0:${ruleId(cluster.policies[1]!.ingress![0]!)}`,
    });
    const byDefault = desired.v4.chains.filter((c) => c.role.kind === 'policy');
    expect(byDefault.flatMap((c) => c.rules).filter((r) => r.action.kind === 'nflog')).toEqual([]);
  });

  it('explains the logged packet with the policy and rule, in trace words; explainDrop ignores it', () => {
    const p = packet(
      dbIngress.rules.map((r) => (r.action.kind === 'nflog' ? r.action.prefix : '')).find(Boolean)!,
      '10.244.1.6',
      '10.244.1.5',
    );
    expect(explainAllowed(p, { desired: withAllowed, snapshot: cluster }, new PodIndex(() => cluster))).toMatchObject({
      src: { pod: 'prod/web' },
      dst: { pod: 'prod/db' },
      direction: 'ingress',
      reason: 'allowed',
      policies: ['prod/db'],
      because: 'allowed by policy prod/db rule ingress:0',
    });
    expect(explainDrop(p, ctx(cluster, withAllowed), new PodIndex(() => cluster))).toBeUndefined();
  });
});

describe('audit mode records', () => {
  const audited = snapshot({
    ...cluster,
    policies: [...cluster.policies, { ...makePolicy('dev', 'default-deny', selectPods(sel()), types('Ingress')), audit: true }],
  });
  const withAudit = compile(audited, settings({ nodeName: 'node-2', podCidrs: ['10.244.2.0/24'] })).desired;
  const without = compile(cluster, settings({ nodeName: 'node-2', podCidrs: ['10.244.2.0/24'] })).desired;
  const chain = workloadChain(withAudit, 'dev/api', 'ingress');
  const p = packet(dropPrefix({ kind: 'would-deny', chain }), '10.244.1.6', '10.244.2.9');

  it('a would-deny packet names the pod, direction and audited policy; explainDrop ignores it', () => {
    expect(explainAudit(p, { desired: withAudit }, new PodIndex(() => audited))).toMatchObject({
      src: { pod: 'prod/web' },
      dst: { pod: 'dev/api' },
      direction: 'ingress',
      reason: 'would-deny',
      pod: 'dev/api',
      policies: ['dev/default-deny'],
      because:
        'allowed now; would be DROPPED by dev/default-deny (audit): dev/api would be isolated for ingress with no rule allowing this',
    });
    expect(explainDrop(p, ctx(audited, withAudit), new PodIndex(() => audited))).toBeUndefined();
  });

  it('waits for the sync that programmed the log rule: the same chain without it does not explain the packet', () => {
    expect(workloadChain(without, 'dev/api', 'ingress')).toBe(chain);
    expect(explainsDrop(p, without)).toBe(false);
    expect(explainsDrop(p, withAudit)).toBe(true);
  });
});

describe('ClusterNetworkPolicy Deny records, and the domainNames rule a drop names', () => {
  // "DomainNames is only supported for Accept rules": an Admin Accept by name on TCP 443 above a Deny of the rest.
  const client = makePod('shop', 'a', '10.244.1.10', labels({ app: 'client' }));
  const web = makePod('shop', 'web', '10.244.1.20', labels({ app: 'web' }));
  const locked = makePod('shop', 'locked', '10.244.1.30', labels({ app: 'locked' }));
  const byName = cRule('Accept', [domains('good.example', '*.cdn.example')], [cTcp(443)], 'payment-api');
  const shopEgress = cnp('shop-egress', 'Admin', 10, podSubject(sel(), sel({ app: 'client' })), {
    egress: [byName, cRule('Deny', [networks('0.0.0.0/0')], undefined, 'nothing-else')],
  });
  // A plain ingress Deny, no domain rule anywhere near it.
  const lock = cnp('lock', 'Admin', 20, podSubject(sel(), sel({ app: 'locked' })), {
    ingress: [cRule('Deny', [podPeerC(sel(), sel({ app: 'web' }))], undefined, 'no-web')],
  });
  const shop = (over: Partial<ClusterSnapshot> = {}): ClusterSnapshot =>
    snapshot({ namespaces: [makeNamespace('shop')], pods: [client, web, locked], clusterPolicies: [shopEgress, lock], ...over });
  const cnpChainOf = (d: DesiredState, policy: string, direction: 'ingress' | 'egress'): ChainName =>
    d.v4.chains.find((c) => c.role.kind === 'cluster-policy' && c.role.policy === policy && c.role.direction === direction)!.name;
  const drop = (s: ClusterSnapshot, d: DesiredState, p: NflogPacket) =>
    explainDrop(p, { desired: d, snapshot: s, invalidPolicies: new Set() }, new PodIndex(() => s));
  const { desired: withCnp } = compile(shop(), settings());
  const missed = {
    policy: 'ClusterNetworkPolicy shop-egress',
    rule: 'egress:0 payment-api Accept',
    pod: 'shop/a',
    names: ['good.example', '*.cdn.example'],
  };

  it("puts a rate-limited log rule with the Deny's own matches before each Deny alternative; none with flow logs off", () => {
    const chain = withCnp.v4.chains.find((c) => c.name === cnpChainOf(withCnp, 'shop-egress', 'egress'))!;
    const at = chain.rules.findIndex((r) => r.action.kind === 'drop');
    expect(chain.rules[at - 1]).toEqual({
      match: [...chain.rules[at]!.match, { kind: 'limit', perSecond: 10, burst: 5 }],
      action: { kind: 'nflog', group: 9476, prefix: `nf:cnp:${chain.name}:1:${ruleId(shopEgress.egress[1]!)}` },
      comment: 'flow log of the drop below',
    });
    const off = compile(shop(), settings({ flowLog: undefined })).desired;
    // The DNS agent's query copies (their own group) are not flow logs.
    const flowLog = (r: Rule): boolean => r.action.kind === 'nflog' && r.action.prefix.startsWith('nf:');
    const withoutLogs = (d: DesiredState) => d.v4.chains.map((c) => ({ ...c, rules: c.rules.filter((r) => !flowLog(r)) }));
    expect(off.v4.chains.flatMap((c) => c.rules).filter(flowLog)).toEqual([]);
    expect(off.v4.chains).toEqual(withoutLogs(withCnp));
  });

  it('a Deny below a domainNames Accept: the Deny and the rule a lookup would have opened', () => {
    const p = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(withCnp, 'shop-egress', 'egress'), rule: 1 }),
      '10.244.1.10',
      '198.51.100.10',
      443,
    );
    expect(explainsDrop(p, withCnp)).toBe(true);
    expect(drop(shop(), withCnp, p)).toEqual({
      time: 1000,
      src: { ip: '10.244.1.10', pod: 'shop/a', labels: { app: 'client' } },
      dst: { ip: '198.51.100.10', where: 'outside the cluster' },
      protocol: 'tcp',
      port: 443,
      srcPort: 40000,
      direction: 'egress',
      reason: 'cluster-deny',
      pod: 'shop/a',
      policies: ['shop-egress'],
      because:
        'dropped by ClusterNetworkPolicy shop-egress rule egress:1 nothing-else Deny; no lookup by shop/a of good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)',
      afterLookup: [missed],
    });
  });

  it('a port the domainNames rule does not allow: the Deny alone', () => {
    const p = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(withCnp, 'shop-egress', 'egress'), rule: 1 }),
      '10.244.1.10',
      '198.51.100.10',
      80,
    );
    const flow = drop(shop(), withCnp, p);
    expect(flow?.because).toBe('dropped by ClusterNetworkPolicy shop-egress rule egress:1 nothing-else Deny');
    expect(flow).not.toHaveProperty('afterLookup');
  });

  it('a plain ingress Deny: the destination pod, the ClusterNetworkPolicy and its rule', () => {
    const p = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(withCnp, 'lock', 'ingress'), rule: 0 }),
      '10.244.1.20',
      '10.244.1.30',
    );
    expect(drop(shop(), withCnp, p)).toMatchObject({
      src: { pod: 'shop/web' },
      dst: { pod: 'shop/locked' },
      direction: 'ingress',
      reason: 'cluster-deny',
      pod: 'shop/locked',
      policies: ['lock'],
      because: 'dropped by ClusterNetworkPolicy lock rule ingress:0 no-web Deny',
    });
  });

  it('the NetworkPolicy layer below drops the unlearned destination: the isolation, and the domain rule', () => {
    const acceptOnly = { ...shopEgress, egress: [byName] };
    const s = shop({
      clusterPolicies: [acceptOnly],
      policies: [makePolicy('shop', 'no-egress', selectPods(sel({ app: 'client' })), types('Egress'))],
    });
    const { desired: d } = compile(s, settings());
    const p = packet(dropPrefix({ kind: 'isolated', chain: workloadChain(d, 'shop/a', 'egress') }), '10.244.1.10', '198.51.100.10', 443);
    expect(explainsDrop(p, d)).toBe(true);
    expect(drop(s, d, p)).toMatchObject({
      reason: 'isolated',
      because:
        'shop/a is isolated for egress; policy shop/no-egress selects it; none allowed this peer; no lookup by shop/a of good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)',
      afterLookup: [missed],
    });
  });

  it('a Baseline Deny below the Admin domainNames rule names it too', () => {
    const baseline = cnp('default-deny', 'Baseline', 10, podSubject(sel(), sel()), { egress: [cRule('Deny', [networks('0.0.0.0/0')])] });
    const s = shop({ clusterPolicies: [{ ...shopEgress, egress: [byName] }, baseline] });
    const { desired: d } = compile(s, settings());
    const p = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(d, 'default-deny', 'egress'), rule: 0 }),
      '10.244.1.10',
      '198.51.100.10',
      443,
    );
    expect(drop(s, d, p)).toMatchObject({
      reason: 'cluster-deny',
      policies: ['default-deny'],
      because:
        'dropped by ClusterNetworkPolicy default-deny rule egress:0 Deny; no lookup by shop/a of good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)',
      afterLookup: [missed],
    });
  });

  it('a rule that fails closed as a Deny (a peer netfence cannot use) is named as such', () => {
    const broken = cnp('broken', 'Admin', 30, podSubject(sel(), sel({ app: 'web' })), {
      egress: [cRule('Pass', [{ kind: 'unknown', what: 'future' }], undefined, 'odd')],
    });
    const s = shop({ clusterPolicies: [broken] });
    const { desired: d } = compile(s, settings());
    const chain = d.v4.chains.find((c) => c.name === cnpChainOf(d, 'broken', 'egress'))!;
    expect(chain.rules.map((r) => r.action.kind)).toEqual(['nflog', 'drop']);
    const p = packet(dropPrefix({ kind: 'cluster-deny', chain: chain.name, rule: 0 }), '10.244.1.20', '8.8.8.8', 53);
    expect(drop(s, d, p)?.because).toBe('dropped by ClusterNetworkPolicy broken rule egress:0 odd Pass, which fails closed (denies all)');
  });

  it("a packet to the node itself (INPUT, no output interface) is judged by the pod's chain to its node", () => {
    const s = shop({ nodes: [{ name: 'node-1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'], labels: {} }] });
    const { desired: d } = compile(s, settings());
    expect(d.v4.chains.some((c) => c.role.kind === 'host-workload' && c.role.pod === 'shop/a')).toBe(true);
    const { outIfindex: _out, ...toNode } = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(d, 'shop-egress', 'egress'), rule: 1 }),
      '10.244.1.10',
      '192.168.0.1',
      443,
    );
    expect(drop(s, d, toNode)).toMatchObject({ reason: 'cluster-deny', afterLookup: [missed] });
  });

  describe('at a pod whose tiers include an audited ClusterNetworkPolicy (docs/audit.md)', () => {
    // Audited, above everything: a domain rule of its own (it opens nothing, so no lookup would) and a Deny.
    const trial = {
      ...cnp('trial', 'Admin', 5, podSubject(sel(), sel({ app: 'client' })), {
        egress: [
          cRule('Accept', [domains('trial.example')], [cTcp(443)], 'maybe'),
          cRule('Deny', [networks('203.0.113.0/24')], undefined, 'not-there'),
        ],
      }),
      audit: true,
    };
    const realChainOf = (d: DesiredState, policy: string): Chain =>
      d.v4.chains.find(
        (c) => c.role.kind === 'cluster-policy' && c.role.policy === policy && c.role.direction === 'egress' && !c.role.verdictOnly,
      )!;
    /** The pod's egress chain jumps to the real chain (whose Deny logs) only once the enforced verdict is to drop. */
    const jumpsAfterVerdict = (d: DesiredState, target: string): boolean => {
      const rules = d.v4.chains.find((c) => c.name === workloadChain(d, 'shop/a', 'egress'))!.rules;
      const restored = rules.findIndex((r) => r.comment === 'audited allow not enforced');
      return rules.slice(restored).some((r) => r.action.kind === 'jump' && r.action.target === target);
    };

    it('the enforced Deny names its rule and the enforced domain rule, never the audited one', () => {
      const s = shop({ clusterPolicies: [trial, shopEgress, lock] });
      const { desired: d } = compile(s, settings());
      const chain = realChainOf(d, 'shop-egress');
      expect(jumpsAfterVerdict(d, chain.name)).toBe(true);
      const p = packet(dropPrefix({ kind: 'cluster-deny', chain: chain.name, rule: 1 }), '10.244.1.10', '198.51.100.10', 443);
      expect(explainsDrop(p, d)).toBe(true);
      expect(drop(s, d, p)).toMatchObject({
        direction: 'egress',
        reason: 'cluster-deny',
        pod: 'shop/a',
        policies: ['shop-egress'],
        because:
          'dropped by ClusterNetworkPolicy shop-egress rule egress:1 nothing-else Deny; no lookup by shop/a of good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)',
        afterLookup: [missed],
      });
    });

    it('the NetworkPolicy isolation names the enforced policy and domain rule, never the audited ones', () => {
      const s = shop({
        clusterPolicies: [trial, { ...shopEgress, egress: [byName] }],
        policies: [makePolicy('shop', 'no-egress', selectPods(sel({ app: 'client' })), types('Egress'))],
      });
      const { desired: d } = compile(s, settings());
      const p = packet(dropPrefix({ kind: 'isolated', chain: workloadChain(d, 'shop/a', 'egress') }), '10.244.1.10', '198.51.100.10', 443);
      expect(explainsDrop(p, d)).toBe(true);
      expect(drop(s, d, p)).toMatchObject({
        reason: 'isolated',
        policies: ['shop/no-egress'],
        because:
          'shop/a is isolated for egress; policy shop/no-egress selects it; none allowed this peer; no lookup by shop/a of good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)',
        afterLookup: [missed],
      });
    });
  });

  it('waits for the sync that programmed the log rule (flow logs just turned on)', () => {
    const off = compile(shop(), settings({ flowLog: undefined })).desired;
    const p = packet(
      dropPrefix({ kind: 'cluster-deny', chain: cnpChainOf(withCnp, 'lock', 'ingress'), rule: 0 }),
      '10.244.1.20',
      '10.244.1.30',
    );
    expect(explainsDrop(p, off)).toBe(false);
    expect(explainsDrop(p, undefined)).toBe(false);
  });
});

describe('a rule edited while its packets were logged: named by content, never by a stale index', () => {
  // Chains are named by their object, not its content: after an edit the logged index may hold another rule.
  const fromWeb = rule([podPeer(sel({ app: 'web' }))], [tcp(80)]);
  const fromApi = rule([podPeer(sel({ app: 'api' }))], [tcp(443)]);
  const dbWith = (...rules: ReturnType<typeof rule>[]): ClusterSnapshot =>
    snapshot({ ...cluster, policies: [makePolicy('prod', 'db', selectPods(sel({ app: 'db' })), ingress(...rules))] });
  const logging = settings({ flowLog: { ...DEFAULT_FLOW_LOG, allowed: true } });
  /** The prefix of the log rule the compiler wrote for rule `index` of the chain `role` finds. */
  const logPrefix = (d: DesiredState, role: (c: Chain) => boolean, index: number): string =>
    d.v4.chains
      .filter(role)
      .flatMap((c) => c.rules)
      .map((r) => (r.action.kind === 'nflog' ? r.action.prefix : ''))
      .find((prefix) => {
        const code = parseDropPrefix(prefix);
        return (code?.kind === 'allowed' || code?.kind === 'cluster-deny') && code.rule === index;
      })!;
  const dbPolicy = (c: Chain): boolean => c.role.kind === 'policy' && c.role.policy === 'prod/db';
  const before = dbWith(fromWeb, fromApi);
  // The web pod's allow, logged while it was rule ingress:0.
  const logged = packet(logPrefix(compile(before, logging).desired, dbPolicy, 0), '10.244.1.6', '10.244.1.5');
  const allowedAfter = (s: ClusterSnapshot) =>
    explainAllowed(logged, { desired: compile(s, logging).desired, snapshot: s }, new PodIndex(() => s));

  it('the prefix carries the content of the rule as the compiler read it', () => {
    expect(logged.prefix).toMatch(new RegExp(`^nf:alw:nf-pi-[a-z2-7]+:0:${ruleId(fromWeb)}$`));
    expect(ruleId(fromWeb)).not.toBe(ruleId(fromApi));
  });

  it('an allow, explained after the rules were reordered: the rule at its new index', () => {
    expect(allowedAfter(dbWith(fromApi, fromWeb))).toMatchObject({
      policies: ['prod/db'],
      because: 'allowed by policy prod/db rule ingress:1',
    });
    expect(allowedAfter(dbWith(fromApi, fromWeb))).not.toHaveProperty('ruleChanged');
    expect(allowedAfter(before)?.because).toBe('allowed by policy prod/db rule ingress:0');
  });

  it('an allow, explained after its rule was removed: the policy, no rule, and the record says the rule changed', () => {
    const flow = allowedAfter(dbWith(fromApi));
    expect(flow).toMatchObject({
      reason: 'allowed',
      policies: ['prod/db'],
      because: 'allowed by policy prod/db, by an ingress rule changed since the packet was logged',
      ruleChanged: true,
    });
    // Nor after it was edited in place: the same index, another content.
    expect(allowedAfter(dbWith(rule([podPeer(sel({ app: 'web' }))], [tcp(81)]), fromApi))?.ruleChanged).toBe(true);
  });

  it('a prefix the previous version wrote (no content) is still read, by its index as before', () => {
    const old = { ...logged, prefix: logged.prefix.replace(/:[a-z2-7]+$/, '') };
    expect(parseDropPrefix(old.prefix)).toEqual({
      kind: 'allowed',
      chain: compile(before, logging).desired.v4.chains.find(dbPolicy)!.name,
      rule: 0,
    });
    const s = dbWith(fromApi, fromWeb);
    expect(explainAllowed(old, { desired: compile(s, logging).desired, snapshot: s }, new PodIndex(() => s))?.because).toBe(
      'allowed by policy prod/db rule ingress:0',
    );
  });

  describe('a ClusterNetworkPolicy Deny', () => {
    const noWeb = cRule('Deny', [podPeerC(sel(), sel({ app: 'web' }))], undefined, 'no-web');
    const noClient = cRule('Deny', [podPeerC(sel(), sel({ app: 'client' }))], undefined, 'no-client');
    const pods = [
      makePod('shop', 'web', '10.244.1.20', labels({ app: 'web' })),
      makePod('shop', 'locked', '10.244.1.30', labels({ app: 'locked' })),
    ];
    const lockWith = (...rules: ReturnType<typeof cRule>[]): ClusterSnapshot =>
      snapshot({
        namespaces: [makeNamespace('shop')],
        pods,
        clusterPolicies: [cnp('lock', 'Admin', 20, podSubject(sel(), sel({ app: 'locked' })), { ingress: rules })],
      });
    const lockChain = (c: Chain): boolean => c.role.kind === 'cluster-policy' && c.role.policy === 'lock';
    const denied = packet(logPrefix(compile(lockWith(noWeb, noClient), settings()).desired, lockChain, 0), '10.244.1.20', '10.244.1.30');
    const dropAfter = (s: ClusterSnapshot, p = denied) => {
      const d = compile(s, settings()).desired;
      return {
        ready: explainsDrop(p, d),
        flow: explainDrop(p, { desired: d, snapshot: s, invalidPolicies: new Set() }, new PodIndex(() => s)),
      };
    };

    it('explained after the rules were reordered: the rule at its new index, with its name', () => {
      const { ready, flow } = dropAfter(lockWith(noClient, noWeb));
      expect(ready).toBe(true);
      expect(flow).toMatchObject({
        reason: 'cluster-deny',
        policies: ['lock'],
        because: 'dropped by ClusterNetworkPolicy lock rule ingress:1 no-web Deny',
      });
      expect(flow).not.toHaveProperty('ruleChanged');
    });

    it('explained after its rule was removed: the ClusterNetworkPolicy, no rule, and the record says the rule changed', () => {
      const { flow } = dropAfter(lockWith(noClient));
      expect(flow).toMatchObject({
        reason: 'cluster-deny',
        pod: 'shop/locked',
        policies: ['lock'],
        because: 'dropped by ClusterNetworkPolicy lock, by an ingress rule changed since the packet was logged',
        ruleChanged: true,
      });
    });

    it("a prefix the previous version wrote: read by its index, the rule's name from the chain as before", () => {
      const old = { ...denied, prefix: denied.prefix.replace(/:[a-z2-7]+$/, '') };
      expect(parseDropPrefix(old.prefix)).toMatchObject({ kind: 'cluster-deny', rule: 0 });
      expect(parseDropPrefix(old.prefix)).not.toHaveProperty('id');
      const { ready, flow } = dropAfter(lockWith(noWeb, noClient), old);
      expect(ready).toBe(true);
      expect(flow?.because).toBe('dropped by ClusterNetworkPolicy lock rule ingress:0 no-web Deny');
    });
  });
});

describe('drop prefixes', () => {
  // The kernel keeps at most 63 bytes of an NFLOG prefix: the longest chain name iptables takes (28), a rule index
  // past the API's 100 rules (a NetworkPolicy's million, at most) and the rule's content identity still fit.
  const chain = 'nf-ce-abcdefghijklmnopqrstuv' as ChainName;
  it.each<DropCode>([
    { kind: 'cluster-deny', chain, rule: 99, id: 'abcdef' },
    { kind: 'allowed', chain, rule: 999_999, id: 'zz7777' },
    // An identity of digits alone is not read as the previous version's index.
    { kind: 'allowed', chain, rule: 12, id: '234567' },
    { kind: 'cluster-deny', chain, rule: 99 },
    { kind: 'cluster-deny', chain, rule: 0 },
    { kind: 'allowed', chain, rule: 3 },
    { kind: 'isolated', chain },
    { kind: 'unknown-pod', direction: 'to' },
    { kind: 'would-deny', chain },
  ])('%j reads back as itself and fits the kernel', (code) => {
    expect(parseDropPrefix(dropPrefix(code))).toEqual(code);
    expect(Buffer.byteLength(dropPrefix(code))).toBeLessThanOrEqual(63);
  });
  it('a ClusterNetworkPolicy Deny prefix names the chain and the rule', () => {
    expect(dropPrefix({ kind: 'cluster-deny', chain, rule: 7, id: 'abcdef' })).toBe(`nf:cnp:${chain}:7:abcdef`);
    expect(dropPrefix({ kind: 'cluster-deny', chain, rule: 7 })).toBe(`nf:cnp:${chain}:7`);
    expect(parseDropPrefix('nf:cnp:nf-ce-x:')).toBeUndefined();
    expect(parseDropPrefix('nf:cnp:')).toBeUndefined();
  });
});

describe('ICMP and ICMPv6 drops', () => {
  const client = makePod('shop', 'a', '10.244.1.10', labels({ app: 'client' }), ips('10.244.1.10', 'fd00:1::10'));
  const anyByName = cRule('Accept', [domains('good.example')], undefined, 'by-name');
  const shopEgress = cnp('shop-egress', 'Admin', 10, podSubject(sel(), sel({ app: 'client' })), {
    egress: [anyByName, cRule('Deny', [networks('0.0.0.0/0', '::/0')], undefined, 'rest')],
  });
  const s = snapshot({ namespaces: [makeNamespace('shop')], pods: [client], clusterPolicies: [shopEgress] });
  const { desired: d } = compile(s, settings({ podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] }));
  const cnpChain6 = d.v6.chains.find((c) => c.role.kind === 'cluster-policy' && c.role.direction === 'egress')!;
  /** An ICMPv6 packet of shop/a that the CNP's Deny logged. */
  const icmpPacket = (dst: string, icmp: NonNullable<NflogPacket['ip']>['icmp']): NflogPacket => ({
    group: 9476,
    prefix: dropPrefix({ kind: 'cluster-deny', chain: cnpChain6.name, rule: 1 }),
    time: 1000,
    inIfindex: 3,
    outIfindex: 4,
    ip: { family: 6, src: 'fd00:1::10', dst, protocol: 58, ...(icmp ? { icmp } : {}) },
  });
  const explain = (p: NflogPacket) => explainDrop(p, { desired: d, snapshot: s, invalidPolicies: new Set() }, new PodIndex(() => s));

  it('the record carries the logged type and code (an echo its identifier), not a port', () => {
    const flow = explain(icmpPacket('fd00:99::1', { type: 128, code: 0, id: 77, hopLimit: 64 }));
    expect(flow).toMatchObject({ protocol: 'icmpv6', icmp: { type: 128, code: 0, id: 77 }, reason: 'cluster-deny' });
    expect(flow).not.toHaveProperty('port');
    expect(flow!.icmp).not.toHaveProperty('hopLimit');
    const bare = explain(icmpPacket('fd00:99::1', undefined));
    expect(bare).not.toHaveProperty('icmp');
  });

  it("the lookup trace gets the logged type and hop limit: a rule naming the type above the domain rule decides as the kernel's did", () => {
    // The compiler names ICMPv6 types only in the static chains (compile/icmpv6.ts); this chain is given one
    // above its domainNames rule, so that what the trace makes of the type shows in which rules it names.
    const at = cnpChain6.rules.findIndex((r) => r.comment?.includes(' learned by ') === true);
    expect(at).toBeGreaterThanOrEqual(0);
    const nsDrop: Rule = {
      match: [
        { kind: 'protocol', protocol: 'ipv6-icmp' },
        { kind: 'icmpv6-type', type: 135 },
        { kind: 'hop-limit', value: 255 },
      ],
      action: { kind: 'drop' },
    };
    const chains = d.v6.chains.map((c) => (c === cnpChain6 ? { ...c, rules: [...c.rules.slice(0, at), nsDrop, ...c.rules.slice(at)] } : c));
    const edited: DesiredState = { ...d, v6: { ...d.v6, chains } };
    const missed = (icmp: { type: number; code: number; hopLimit: number }) =>
      missedLookups(edited, 'nf-', 'shop/a', icmpPacket('fd00:99::1', icmp).ip!);
    const byName = { policy: 'ClusterNetworkPolicy shop-egress', rule: 'egress:0 by-name Accept', pod: 'shop/a', names: ['good.example'] };
    // An echo request passes the NS rule and meets the domain rule: a lookup would have opened it.
    expect(missed({ type: 128, code: 0, hopLimit: 64 })).toEqual([byName]);
    // A neighbour solicitation with hop limit 255 is dropped by the rule that names it, above the domain rule.
    expect(missed({ type: 135, code: 0, hopLimit: 255 })).toEqual([]);
    // The same type routed (hop limit 254) is no match for `--hl-eq 255`: on to the domain rule.
    expect(missed({ type: 135, code: 0, hopLimit: 254 })).toEqual([byName]);
  });
});
