// Names: within the kernel's limits for any namespace/policy length and prefixes up to 6 (chains) / 4
// (sets) characters, deterministic, distinct for distinct inputs, and sets shared per canonical selector.

import { chainNames, compile, ipSetNameFor } from '../../../src/compile/index.js';
import { MAX_CHAIN_NAME, MAX_IPSET_NAME, type ClusterSnapshot, type DesiredState, type FamilyState } from '../../../src/model/index.js';
import {
  blockPeer,
  egress,
  expr,
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPeer,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
} from '../../helpers/builders.js';
import { cluster } from './fixtures.js';

const LONG = 'n'.repeat(63);
const longCluster = (): ClusterSnapshot => {
  const ns = makeNamespace(LONG, { team: 'x'.repeat(63) });
  const pods = Array.from({ length: 12 }, (_, i) =>
    makePod(
      LONG,
      `${'p'.repeat(240)}-${i}`,
      `10.244.1.${10 + i}`,
      ips(`10.244.1.${10 + i}`, `fd00:1::${10 + i}`),
      labels({ app: `a${i % 3}` }),
    ),
  );
  const policies = ['a', 'b'].map((s) =>
    makePolicy(
      LONG,
      `${s.repeat(253)}`,
      selectPods(sel({ app: 'a0' })),
      ingress(
        rule(
          [podPeer(sel({ app: 'a1' })), nsPeer(sel({ team: 'x'.repeat(63) })), blockPeer('10.0.0.0/8', '10.1.0.0/16')],
          [tcp('http'), tcp(80, 90)],
        ),
      ),
      egress(rule([podPeer(sel({ app: 'a2' })), blockPeer('fd00::/8')], [tcp('http')])),
    ),
  );
  return snapshot({ namespaces: [ns], pods, policies });
};

const allChainNames = (s: FamilyState): string[] => [
  ...s.chains.map((c) => c.name),
  ...s.chains.flatMap((c) => c.rules.flatMap((r) => (r.action.kind === 'jump' || r.action.kind === 'goto' ? [r.action.target] : []))),
];
const allSetNames = (s: FamilyState): string[] => [
  ...s.ipsets.map((x) => x.name),
  ...s.chains.flatMap((c) => c.rules.flatMap((r) => r.match.flatMap((m) => (m.kind === 'set' ? [m.set] : [])))),
];

describe('names: length limits', () => {
  it.each([
    { chainPrefix: 'nf-', ipsetPrefix: 'nf' },
    { chainPrefix: 'n', ipsetPrefix: 'n' },
    { chainPrefix: 'abcde-', ipsetPrefix: 'abcd' },
    { chainPrefix: 'ABC_9-', ipsetPrefix: 'a-b.' },
  ])('chains ≤ 28 and sets ≤ 31 with prefixes $chainPrefix / $ipsetPrefix and 253-char names', ({ chainPrefix, ipsetPrefix }) => {
    const { desired } = compile(longCluster(), settings({ chainPrefix, ipsetPrefix, podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] }));
    for (const family of [desired.v4, desired.v6]) {
      const chains = allChainNames(family);
      const sets = allSetNames(family);
      expect(chains.length).toBeGreaterThan(10);
      expect(sets.length).toBeGreaterThan(3);
      expect(chains.filter((n) => n.length > MAX_CHAIN_NAME || !n.startsWith(chainPrefix))).toEqual([]);
      expect(sets.filter((n) => n.length > MAX_IPSET_NAME || !n.startsWith(`${ipsetPrefix}${family.family}`))).toEqual([]);
      // Every jump and set reference resolves (no dangling names after truncation).
      const declared = new Set(family.chains.map((c) => c.name));
      expect(chains.filter((n) => !declared.has(n as never))).toEqual([]);
      const declaredSets = new Set(family.ipsets.map((x) => x.name));
      expect(sets.filter((n) => !declaredSets.has(n as never))).toEqual([]);
    }
  });

  it.each([
    ['fromWorkload', (p: string) => chainNames(p).fromWorkload(`${LONG}/${LONG}`)],
    ['toWorkload', (p: string) => chainNames(p).toWorkload(`${LONG}/${LONG}`)],
    ['policyIngress', (p: string) => chainNames(p).policyIngress(`${LONG}/${LONG}`)],
    ['policyEgress', (p: string) => chainNames(p).policyEgress(`${LONG}/${LONG}`)],
    ['fromDispatchChild', (p: string) => chainNames(p).fromDispatchChild('ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124')],
    ['toDispatchChild', (p: string) => chainNames(p).toDispatchChild('ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124')],
    ['fromDispatch', (p: string) => chainNames(p).fromDispatch],
    ['toDispatch', (p: string) => chainNames(p).toDispatch],
    ['forward', (p: string) => chainNames(p).forward],
  ])('%s fits with a 6-char prefix', (_kind, make) => {
    expect(make('abcdef').length).toBeLessThanOrEqual(MAX_CHAIN_NAME);
  });

  it.each(['s', 'n', 'b'] as const)('set kind %s fits with a 4-char prefix, both families', (kind) => {
    for (const family of [4, 6] as const)
      expect(ipSetNameFor('abcd', family, kind, 'k'.repeat(5000)).length).toBeLessThanOrEqual(MAX_IPSET_NAME);
  });
});

describe('names: deterministic and distinct', () => {
  const strip = (d: DesiredState) => JSON.parse(JSON.stringify(d)) as unknown;

  it('the same snapshot compiles to the same state, whatever order its lists come in', () => {
    const c = longCluster();
    const first = compile(c, settings({ podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] }));
    const reversed: ClusterSnapshot = {
      ...c,
      pods: [...c.pods].reverse(),
      policies: [...c.policies].reverse(),
      namespaces: [...c.namespaces].reverse(),
    };
    const second = compile(reversed, settings({ podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] }));
    expect(strip(second.desired)).toEqual(strip(first.desired));
  });

  // Pinned: a change here renames every chain and set on upgrade (a full rewrite of every node's rules).
  it.each([
    ['fromWorkload prod/db', () => chainNames('nf-').fromWorkload('prod/db'), 'nf-fw-r23jxsw3yam54wd2'],
    ['toWorkload prod/db', () => chainNames('nf-').toWorkload('prod/db'), 'nf-tw-sfvx5tc6houymlnb'],
    ['policyIngress prod/p', () => chainNames('nf-').policyIngress('prod/p'), 'nf-pi-mihnngv7ro2msswb'],
    ['selector set x', () => ipSetNameFor('nf', 4, 's', 'x'), 'nf4s:ezrv4p65rl56m4sqlrlj'],
  ])('names are fixed across runs (hash of content, not a counter or clock): %s', (_name, make, expected) => {
    expect(make()).toBe(expected);
  });

  it.each([
    ['pod keys differing in one char', (n = chainNames('nf-')) => [n.toWorkload('prod/db-1'), n.toWorkload('prod/db-2')]],
    ['namespace/name split differently', (n = chainNames('nf-')) => [n.toWorkload('a-b/c'), n.toWorkload('a/b-c')]],
    ['ingress vs egress workload of one pod', (n = chainNames('nf-')) => [n.toWorkload('prod/db'), n.fromWorkload('prod/db')]],
    ['ingress vs egress chain of one policy', (n = chainNames('nf-')) => [n.policyIngress('prod/p'), n.policyEgress('prod/p')]],
    [
      'dispatch children of two CIDRs',
      (n = chainNames('nf-')) => [n.toDispatchChild('10.244.1.0/28'), n.toDispatchChild('10.244.1.16/28')],
    ],
    ['set kinds with one key', () => [ipSetNameFor('nf', 4, 's', 'k'), ipSetNameFor('nf', 4, 'b', 'k'), ipSetNameFor('nf', 4, 'n', 'k')]],
    ['set families with one key', () => [ipSetNameFor('nf', 4, 's', 'k'), ipSetNameFor('nf', 6, 's', 'k')]],
    ['set keys differing in one char', () => [ipSetNameFor('nf', 4, 's', '{app=a}'), ipSetNameFor('nf', 4, 's', '{app=b}')]],
  ])('different inputs give different names: %s', (_name, make) => {
    const names: readonly string[] = make();
    expect(new Set(names).size).toBe(names.length);
  });

  it('no two pods or policies of a large cluster share a chain name', () => {
    const pods = Array.from({ length: 300 }, (_, i) =>
      makePod(`ns${i % 7}`, `pod-${i}`, `10.244.1.${i % 250}`, ips(`10.244.${1 + Math.floor(i / 250)}.${i % 250}`)),
    );
    const policies = Array.from({ length: 50 }, (_, i) => makePolicy(`ns${i % 7}`, `pol-${i}`, ingress(rule())));
    const { desired } = compile(snapshot({ pods, policies }), settings({ podCidrs: ['10.244.0.0/16'] }));
    const names = desired.v4.chains.map((c) => c.name);
    expect(names.length).toBe(1 + 600 + 50 * 1 + desired.v4.chains.filter((c) => c.role.kind === 'dispatch').length);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('names: sets are shared per canonical selector', () => {
  const setsOf = (policies: Parameters<typeof cluster>[0]) => compile(cluster(policies), settings()).desired.v4.ipsets;
  const db = selectPods(sel({ app: 'db' }));

  it.each([
    {
      name: 'matchLabels in different key order',
      a: podPeer(sel({ app: 'web', tier: 'front' })),
      b: podPeer(sel({ tier: 'front', app: 'web' })),
    },
    {
      name: 'matchExpressions and their values in different order',
      a: podPeer(sel({}, [expr('app', 'In', 'web', 'api'), expr('tier', 'Exists')])),
      b: podPeer(sel({}, [expr('tier', 'Exists'), expr('app', 'In', 'api', 'web', 'api')])),
    },
    {
      name: 'namespaceSelector peers in different key order',
      a: nsPeer(sel({ team: 'b', env: 'dev' })),
      b: nsPeer(sel({ env: 'dev', team: 'b' })),
    },
    {
      name: 'ipBlocks written differently but meaning the same',
      a: blockPeer('10.1.2.3/16'),
      b: blockPeer('10.1.0.0/16'),
    },
  ])('$name → one set', ({ a, b }) => {
    const sets = setsOf([
      makePolicy('prod', 'one', db, ingress(rule([a]))),
      makePolicy('prod', 'two', selectPods(sel({ app: 'web' })), ingress(rule([b]))),
      makePolicy('prod', 'three', db, egress(rule([b]))),
    ]);
    expect(sets).toHaveLength(1);
  });

  it('one namespaceSelector used from two namespaces shares one set', () => {
    const sets = setsOf([
      makePolicy('prod', 'p', db, ingress(rule([nsPeer(sel({ team: 'ops' }))]))),
      makePolicy('dev', 'p', ingress(rule([nsPeer(sel({ team: 'ops' }))]))),
    ]);
    expect(sets).toHaveLength(1);
  });

  it.each([
    [
      'podSelector-only peers from two namespaces',
      [
        makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' }))]))),
        makePolicy('dev', 'p', ingress(rule([podPeer(sel({ app: 'web' }))]))),
      ],
    ],
    [
      'podSelector vs namespaceSelector with the same labels',
      [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ team: 'b' })), nsPeer(sel({ team: 'b' }))])))],
    ],
    ['two different selectors', [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' })), podPeer(sel({ app: 'api' }))])))]],
  ] as const)('%s → two sets', (_name, policies) => {
    expect(setsOf(policies)).toHaveLength(2);
  });
});
