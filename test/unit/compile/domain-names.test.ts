// ClusterNetworkPolicy egress `domainNames` in the compiler and the planner: per subject pod and family a
// learned set (docs/dns-egress-design.md, "Where learned addresses go"), the rule matching it at its place in
// the CNP chain, the DNS rules of the watched pods, the agent's plan, and a planner that owns the learned sets
// but never their members. Expectations from the API ("DomainNames is only supported for Accept rules",
// "When the TTL for a DNS record expires, the implementor should stop allowing new connections") and the
// contract in src/model/dns-egress.ts.

import { compile, Compiler } from '../../../src/compile/index.js';
import {
  AUDIT_PREFIX,
  defaultDnsLearningSettings,
  type ClusterNetworkPolicy,
  type DesiredState,
  type FamilyState,
  type IpSet,
  type Pod,
} from '../../../src/model/index.js';
import { expectedObserved, observeFamily, planFamily } from '../../../src/plan/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import { ips, labels, makeNamespace, makePod, sel, settings, snapshot } from '../../helpers/builders.js';
import { cnp, cRule, cTcp, domains, networks, podSubject } from '../../helpers/cnp-builders.js';
import { evaluate } from '../../helpers/eval-desired.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const NODES = [{ name: 'node-1', podCidrs: ['10.244.1.0/24', 'fd00:1::/64'], addresses: ['192.168.0.1'] }];
const client = (name: string, ip: string, ...more: Parameters<typeof makePod>[3][]) =>
  makePod('shop', name, ip, labels({ app: 'client' }), ...more);
const other = makePod('shop', 'other', '10.244.1.30', labels({ app: 'other' }));

const guard = (tweak: Partial<ClusterNetworkPolicy> = {}, names = ['good.example', '*.cdn.example']): ClusterNetworkPolicy => ({
  ...cnp('shop-egress', 'Admin', 10, podSubject(sel(), sel({ app: 'client' })), {
    egress: [cRule('Accept', [domains(...names)], [cTcp(443)], 'payment-api'), cRule('Deny', [networks('0.0.0.0/0', '::/0')])],
  }),
  ...tweak,
});

const build = (pods: Pod[], cnps: ClusterNetworkPolicy[], tweak = {}) =>
  compile(
    snapshot({ nodes: NODES, namespaces: [makeNamespace('shop')], pods: [...pods, other], clusterPolicies: cnps }),
    settings({ podCidrs: NODES[0]!.podCidrs, ...tweak }),
  );

const learned = (state: FamilyState): IpSet[] => state.ipsets.filter((s) => s.learned);
const setOf = (d: DesiredState, pod: string, family: 4 | 6 = 4) => d.dns?.sets.find((s) => s.pod === pod && s.family === family);

describe('domainNames: what the compiler hands the DNS agent', () => {
  const a = client('a', '10.244.1.10', ips('10.244.1.10', 'fd00:1::a'));
  const b = client('b', '10.244.1.11');
  const { desired } = build([a, b], [guard()]);

  it('one learned set per subject pod, rule and family, with the bounds of the settings and no members', () => {
    expect(desired.dns?.settings).toEqual(defaultDnsLearningSettings);
    expect(desired.dns?.sets.map((s) => [s.pod, s.family, s.podAddress]).sort()).toEqual([
      ['shop/a', 4, '10.244.1.10'],
      ['shop/a', 6, 'fd00:1::a'],
      ['shop/b', 4, '10.244.1.11'],
    ]);
    expect(setOf(desired, 'shop/a')).toMatchObject({
      policy: 'shop-egress',
      ruleIndex: 0,
      ruleName: 'payment-api',
      domainNames: ['good.example', '*.cdn.example'],
    });
    expect(setOf(desired, 'shop/a')).not.toHaveProperty('audited');
    for (const set of [...learned(desired.v4), ...learned(desired.v6)]) {
      expect(set).toMatchObject({ type: 'hash:ip', members: [], learned: { timeout: 30, maxelem: 4096 } });
      expect(desired.dns?.sets.some((s) => s.setName === set.name && s.family === set.family)).toBe(true);
    }
    expect(renderIpsetRestore(learned(desired.v4))).toMatch(
      /^create nf4d:\S+ hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment$/m,
    );
    expect(renderIpsetRestore(learned(desired.v6))).toMatch(
      /^create nf6d:\S+ hash:ip family inet6 hashsize 1024 maxelem 4096 timeout 30 comment$/m,
    );
  });

  it('the pods whose DNS is watched: a set of their addresses, queries logged and answers held above the established accept', () => {
    const rules = renderFullRestore(desired.v4);
    const watched = desired.v4.ipsets.find((s) => s.name.startsWith('nf4q:'))!;
    expect(watched.members).toEqual(['10.244.1.10', '10.244.1.11']);
    const forward = rules.split('\n').filter((l) => l.startsWith('-A nf-FORWARD '));
    const established = forward.findIndex((l) => l.includes('RELATED,ESTABLISHED -j ACCEPT'));
    const held = forward.flatMap((l, i) => (l.includes('-j NFQUEUE --queue-num 4100 --queue-bypass') ? [i] : []));
    expect(held).toHaveLength(2);
    expect(Math.max(...held)).toBeLessThan(established);
    for (const p of ['udp', 'tcp']) {
      expect(forward).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^-A nf-FORWARD -p ${p} .*--sports 53 -m set --match-set ${watched.name} dst -m conntrack --ctstate ESTABLISHED -m conntrack --ctdir REPLY -j NFQUEUE`,
          ),
        ),
      );
      expect(forward).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^-A nf-FORWARD -p ${p} .*--dports 53 -m set --match-set ${watched.name} src -m conntrack --ctdir ORIGINAL -j NFLOG .*--nflog-group 4101 --nflog-threshold 1$`,
          ),
        ),
      );
    }
    // Node-local resolvers: queries arrive through INPUT, answers leave through OUTPUT.
    expect(rules).toMatch(/^-A nf-INPUT -p udp .*--dports 53 .* -j NFLOG/m);
    expect(rules).toMatch(/^-A nf-OUTPUT -p udp .*--sports 53 .* -j NFQUEUE --queue-num 4100 --queue-bypass$/m);
    expect(rules).toMatch(/^-I OUTPUT 1 .* -j nf-OUTPUT$/m);
  });

  it('the rule matches each pod with its own set, at its place in the CNP chain (before the Deny)', () => {
    const chain = desired.v4.chains.find((c) => c.role.kind === 'cluster-policy' && c.role.direction === 'egress')!;
    const text = renderFullRestore({ ...desired.v4, chains: [chain], hooks: [] })
      .split('\n')
      .filter((l) => l.startsWith('-A'));
    expect(text[0]).toMatch(
      new RegExp(
        `^-A \\S+ -s 10.244.1.10/32 -p tcp .*payment-api Accept.* --match-set ${setOf(desired, 'shop/a')!.setName} dst -m multiport --dports 443 -j MARK`,
      ),
    );
    expect(text[1]).toMatch(new RegExp(`^-A \\S+ -s 10.244.1.11/32 -p tcp .* --match-set ${setOf(desired, 'shop/b')!.setName} dst `));
    expect(text.at(-1)).toMatch(/egress:1 Deny.* -j DROP$/);
  });

  it('before any lookup the Accept matches nothing; with an address in the pod’s own set, that pod alone reaches it', () => {
    const pkt = (src: string) => ({ src, dst: '198.51.100.10', proto: 'tcp' as const, dport: 443, inIface: 'cni0', outIface: 'eth0' });
    expect(evaluate(desired.v4, pkt('10.244.1.10')).verdict).toBe('DROP');
    const setA = setOf(desired, 'shop/a')!.setName;
    const filled: FamilyState = {
      ...desired.v4,
      ipsets: desired.v4.ipsets.map((s) => (s.name === setA ? { ...s, members: ['198.51.100.10'] } : s)),
    };
    expect(evaluate(filled, pkt('10.244.1.10')).verdict).toBe('ACCEPT');
    expect(evaluate(filled, pkt('10.244.1.11')).verdict).toBe('DROP');
    expect(evaluate(filled, { ...pkt('10.244.1.10'), dport: 80 }).verdict).toBe('DROP');
  });
});

describe('domainNames: which set a pod gets', () => {
  const name = (d: DesiredState, pod: string) => setOf(d, pod)?.setName;

  it('a pod that leaves takes its set along; another pod later given its address starts with a new set', () => {
    const before = build([client('a', '10.244.1.10')], [guard()]).desired;
    const after = build([client('a2', '10.244.1.10')], [guard()]).desired;
    expect(name(after, 'shop/a2')).not.toBe(name(before, 'shop/a'));
    expect(learned(after.v4).map((s) => s.name)).not.toContain(name(before, 'shop/a'));
  });

  it('the same pod, rule and bounds keep their set across compiles (its members survive a resync)', () => {
    const compiler = new Compiler();
    const snap = snapshot({
      nodes: NODES,
      namespaces: [makeNamespace('shop')],
      pods: [client('a', '10.244.1.10'), other],
      clusterPolicies: [guard()],
    });
    const first = compiler.compile(snap, settings({ podCidrs: NODES[0]!.podCidrs }));
    const again = compiler.compile(
      { ...snap, pods: [...snap.pods, client('b', '10.244.1.11')] },
      settings({ podCidrs: NODES[0]!.podCidrs }),
    );
    expect(name(again.desired, 'shop/a')).toBe(name(first.desired, 'shop/a'));
  });

  it.each([
    ['other names', () => build([client('a', '10.244.1.10')], [guard({}, ['good.example'])]).desired],
    [
      'another minimum TTL',
      () => build([client('a', '10.244.1.10')], [guard()], { dnsEgress: { ...defaultDnsLearningSettings, minTtlSeconds: 60 } }).desired,
    ],
    [
      'another bound per set',
      () => build([client('a', '10.244.1.10')], [guard()], { dnsEgress: { ...defaultDnsLearningSettings, perSetMax: 100 } }).desired,
    ],
  ])('%s start a new set (nothing learned for the old rule carries over)', (_what, make) => {
    const base = build([client('a', '10.244.1.10')], [guard()]).desired;
    expect(name(make(), 'shop/a')).not.toBe(name(base, 'shop/a'));
  });

  it('an audited policy learns like any other, says so, and its verdict is logged, not enforced', () => {
    const { desired } = build([client('a', '10.244.1.10')], [guard({ audit: true })]);
    expect(setOf(desired, 'shop/a')).toMatchObject({ audited: true });
    // Audit mode (docs/audit.md): allowed now either way; "would be dropped" only while nothing is learned.
    const pkt = { src: '10.244.1.10', dst: '198.51.100.10', proto: 'tcp' as const, dport: 443, inIface: 'cni0', outIface: 'eth0' };
    const wouldDeny = (state: FamilyState) => {
      const r = evaluate(state, pkt);
      const logged = r.path.some((step) => {
        const [chain, i] = step.split('#');
        const action = state.chains.find((c) => c.name === chain)?.rules[Number(i)]?.action;
        return action?.kind === 'nflog' && action.prefix.startsWith(AUDIT_PREFIX.wouldDeny);
      });
      return { verdict: r.verdict, logged };
    };
    expect(wouldDeny(desired.v4)).toEqual({ verdict: 'ACCEPT', logged: true });
    const setA = setOf(desired, 'shop/a')!.setName;
    const filled: FamilyState = {
      ...desired.v4,
      ipsets: desired.v4.ipsets.map((s) => (s.name === setA ? { ...s, members: ['198.51.100.10'] } : s)),
    };
    expect(wouldDeny(filled)).toEqual({ verdict: 'ACCEPT', logged: false });
  });

  it('no domainNames rule: no learned set, no DNS rule, no OUTPUT hook, no plan', () => {
    const plain = guard({ egress: [cRule('Deny', [networks('0.0.0.0/0')])] });
    const { desired } = build([client('a', '10.244.1.10')], [plain]);
    expect(desired.dns).toBeUndefined();
    expect(desired.v4.ipsets.filter((s) => s.learned || s.name.startsWith('nf4q:'))).toEqual([]);
    expect(desired.v4.hooks.map((h) => h.chain)).toEqual(['FORWARD', 'INPUT']);
    expect(renderFullRestore(desired.v4)).not.toMatch(/NFQUEUE|ctdir|nf-OUTPUT/);
  });

  it('a rule that fails closed (a Deny naming domains) learns nothing', () => {
    const deny = guard({ egress: [cRule('Deny', [{ kind: 'unknown', what: 'domainNames' }])] });
    expect(build([client('a', '10.244.1.10')], [deny]).desired.dns).toBeUndefined();
  });
});

describe('domainNames: the planner owns learned sets, never their members', () => {
  const { desired } = build([client('a', '10.244.1.10')], [guard()]);
  const state = desired.v4;
  const set = learned(state)[0]!;
  const save = (text: string) =>
    renderFullRestore(state)
      .replace(/^-I (\S+) 1 /gm, '-A $1 ')
      .replace('*filter\n', `*filter\n${text}`);
  const iptables = save(':INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');
  /** `ipset save` of the programmed sets, the learned one with `createOptions` and the DNS agent's members. */
  const ipsetSave = (createOptions: string, members: string[]) =>
    state.ipsets
      .flatMap((s) =>
        s.learned
          ? [
              `create ${s.name} hash:ip family inet hashsize 1024 ${createOptions} bucketsize 12 initval 0x52945d37`,
              ...members.map((m) => `add ${s.name} ${m}`),
            ]
          : [
              `create ${s.name} ${s.type} family inet hashsize 1024 maxelem 1048576 bucketsize 12 initval 0x1`,
              ...s.members.map((m) => `add ${s.name} ${m}`),
            ],
      )
      .join('\n');
  const learnedMembers = [
    '198.51.100.10 timeout 17 comment "1700000001 good.example"',
    '203.0.113.5 timeout 2 comment "1700000000 img.cdn.example"',
  ];

  it('members the agent learned, with counting-down timeouts and comments, are no drift: nothing to do', () => {
    const plan = planFamily(state, observeFamily(4, iptables, ipsetSave('maxelem 4096 timeout 30 comment', learnedMembers), OWN), OWN);
    expect(plan.changes).toEqual([]);
    expect(plan.ipsetRestore + plan.ipsetAfterRules + plan.ipsetDestroy + plan.iptablesRestore).toBe('');
  });

  it('the set missing: created empty with its options, before the rules that use it', () => {
    const without = ipsetSave('maxelem 4096 timeout 30 comment', []).replace(new RegExp(`^create ${set.name} .*$`, 'm'), '');
    const plan = planFamily(state, observeFamily(4, iptables, without, OWN), OWN);
    expect(plan.ipsetRestore).toBe(`create ${set.name} hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment\n`);
    expect(plan.iptablesRestore).toBe('');
  });

  it.each([
    ['another maxelem', 'maxelem 65536 timeout 30 comment'],
    ['another timeout', 'maxelem 4096 timeout 300 comment'],
    ['no comment support', 'maxelem 4096 timeout 30'],
    ['no timeout support', 'maxelem 4096 comment'],
  ])('the set found with %s is recreated (retype: the rules never lose it)', (_what, options) => {
    const plan = planFamily(state, observeFamily(4, iptables, ipsetSave(options, learnedMembers), OWN), OWN);
    expect(plan.retype.map((s) => s.name)).toEqual([set.name]);
  });

  it('the tracker’s expectation of a learned set is its options, not members', () => {
    expect(expectedObserved(state).ipsets.get(set.name)).toEqual({
      name: set.name,
      type: 'hash:ip',
      family: 4,
      maxelem: 4096,
      timeout: 30,
      comment: true,
      members: [],
    });
  });

  it('a learned set whose pod left is destroyed after the rules stop using it', () => {
    const gone = build([], [guard()]).desired.v4;
    const plan = planFamily(gone, observeFamily(4, iptables, ipsetSave('maxelem 4096 timeout 30 comment', learnedMembers), OWN), OWN);
    expect(plan.staleSets).toContain(set.name);
    expect(plan.ipsetDestroy).toContain(`destroy ${set.name}`);
  });
});
