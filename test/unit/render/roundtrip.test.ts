// The renderer and the iptables-save parser check each other: every rule shape the compiler emits, and
// hand-written variants of every Match and Action, render to arguments that parse back to the same Rule;
// whole rendered tables parse back to the same chains, lines and hashes.

import { compile } from '../../../src/compile/index.js';
import { allocateMarks } from '../../../src/config/marks.js';
import type { Chain, ChainName, FamilyState, IpSetName, Match, Rule } from '../../../src/model/index.js';
import {
  joinArgs,
  parseIptablesSave,
  parseSavedRule,
  renderChain,
  renderFullRestore,
  renderHook,
  appendLines,
  ruleArgs,
  ruleArgsWithComment,
  ruleHashes,
  sanitizeComment,
  tokenize,
  toRule,
} from '../../../src/render/index.js';
import {
  blockPeer,
  containerPorts,
  egress,
  expr,
  ingress,
  ips,
  labels,
  makePod,
  makePolicy,
  nsPeer,
  podPeer,
  rule,
  sctp,
  sel,
  selectPods,
  settings,
  tcp,
  types,
  udp,
} from '../../helpers/builders.js';
import { cluster } from '../compile/fixtures.js';

const crowd = Array.from({ length: 30 }, (_, i) =>
  makePod(
    'prod',
    `c${i}`,
    `10.244.1.${100 + i}`,
    ips(`10.244.1.${100 + i}`, `fd00:1::${(100 + i).toString(16)}`),
    labels({ app: `c${i % 3}` }),
    containerPorts({ name: 'http', containerPort: 8000 + i, protocol: 'TCP' }),
  ),
);
const policies = [
  makePolicy(
    'prod',
    'db',
    selectPods(sel({ app: 'db' })),
    ingress(
      rule(
        [podPeer(sel({ app: 'web' })), blockPeer('10.0.0.0/8', '10.244.0.0/16'), blockPeer('fd00::/8', 'fd00:1::/64')],
        [tcp('pg'), tcp(9000, 9010), udp(), sctp(7)],
      ),
    ),
    egress(rule([nsPeer(sel({}, [expr('team', 'In', 'ops')]))], [tcp('http')]), rule([blockPeer('0.0.0.0/0')]), rule()),
  ),
  makePolicy(
    'prod',
    'crowd',
    selectPods(sel({}, [expr('app', 'In', 'c0', 'c1')])),
    types('Ingress', 'Egress'),
    ingress(
      rule(
        [podPeer(sel({ app: 'c2' }))],
        Array.from({ length: 20 }, (_, i) => tcp(100 + 3 * i)),
      ),
    ),
    egress(rule(undefined, [tcp('http')])),
  ),
  makePolicy('prod', 'broken', selectPods(sel({ app: 'web' })), ingress(rule([blockPeer('10.0.0.0/40')]))),
];

const compiledStates: [string, FamilyState][] = [
  ['default settings, v4', compile(cluster(policies, crowd), settings()).desired.v4],
  ['default settings, v6', compile(cluster(policies, crowd), settings({ podCidrs: ['10.244.1.0/24', 'fd00:1::/64'] })).desired.v6],
  [
    'fail-open, odd prefixes, top mark bits',
    compile(
      cluster(policies, crowd),
      settings({
        unknownPods: 'fail-open',
        chainPrefix: 'XY_9-',
        ipsetPrefix: 'q',
        marks: allocateMarks(0xf0000000),
        bridge: 'br-pods',
      }),
    ).desired.v4,
  ],
];

const withoutComment = (r: Rule): Rule => ({ match: r.match, action: r.action });

describe('render → parse: every rule the compiler emits', () => {
  it.each(compiledStates)('%s', (_name, state) => {
    const rules = [...state.chains.flatMap((c) => c.rules), ...state.hooks.map((h) => h.rule)];
    expect(rules.length).toBeGreaterThan(50);
    // Without the comment: what the hash covers.
    expect(rules.map((r) => toRule(tokenize(joinArgs(ruleArgs(r)))))).toEqual(rules.map(withoutComment));
    // With the comment, as a saved line: the structured rule and its comment come back.
    for (const chain of state.chains) {
      const rendered = renderChain(chain);
      const back = appendLines(rendered).map((line) => {
        const args = tokenize(line);
        return parseSavedRule(line.slice(`-A ${chain.name} `.length), args.slice(2));
      });
      expect({ chain: chain.name, rules: back.map((b) => b.rule) }).toEqual({ chain: chain.name, rules: chain.rules });
      expect(back.map((b) => b.hash)).toEqual(rendered.rules.map((r) => r.hash));
    }
  });
});

const set = 'nf4s:abcdefghijklmnopqrst' as IpSetName;
const target = 'nf-pi-abcdefghijklmnop' as ChainName;
const m = (...match: Match[]): Match[] => match;

const handWritten: [string, Rule][] = [
  ['no match, accept', { match: [], action: { kind: 'accept' } }],
  ['drop', { match: m({ kind: 'src-net', cidr: '10.0.0.0/8' }), action: { kind: 'drop' } }],
  ['reject', { match: m({ kind: 'protocol', protocol: 'tcp' }), action: { kind: 'reject' } }],
  ['return', { match: m({ kind: 'mark', value: 0x10000, mask: 0x10000 }), action: { kind: 'return' } }],
  ['jump', { match: [], action: { kind: 'jump', target } }],
  ['goto', { match: m({ kind: 'dst-net', cidr: '10.244.1.5/32' }), action: { kind: 'goto', target } }],
  ['set-mark clear', { match: [], action: { kind: 'set-mark', value: 0, mask: 0xf0000 } }],
  ['set-mark top bit', { match: [], action: { kind: 'set-mark', value: 0x80000000, mask: 0xffffffff } }],
  [
    'negated src and dst',
    {
      match: m({ kind: 'src-net', cidr: '10.0.0.0/8', negate: true }, { kind: 'dst-net', cidr: 'fd00::/64', negate: true }),
      action: { kind: 'drop' },
    },
  ],
  [
    'interfaces with wildcard and negation',
    { match: m({ kind: 'in-iface', name: 'veth+' }, { kind: 'out-iface', name: 'cni0', negate: true }), action: { kind: 'accept' } },
  ],
  [
    'every option in save order',
    {
      match: m(
        { kind: 'src-net', cidr: '1.2.3.4/32' },
        { kind: 'dst-net', cidr: '5.6.7.0/24' },
        { kind: 'in-iface', name: 'eth0' },
        { kind: 'out-iface', name: 'cni0' },
        { kind: 'protocol', protocol: 'udp' },
      ),
      action: { kind: 'accept' },
    },
  ],
  ['negated set', { match: m({ kind: 'set', set, direction: 'src', negate: true }), action: { kind: 'drop' } }],
  [
    'set dst,dst with sctp',
    { match: m({ kind: 'protocol', protocol: 'sctp' }, { kind: 'set', set, direction: 'dst,dst' }), action: { kind: 'accept' } },
  ],
  ['set src,src', { match: m({ kind: 'set', set, direction: 'src,src' }), action: { kind: 'accept' } }],
  ['negated mark', { match: m({ kind: 'mark', value: 0, mask: 0x10000, negate: true }), action: { kind: 'accept' } }],
  ['full-width mark', { match: m({ kind: 'mark', value: 0xdeadbeef, mask: 0xffffffff }), action: { kind: 'accept' } }],
  ['ctstate single', { match: m({ kind: 'ctstate', states: ['INVALID'] }), action: { kind: 'drop' } }],
  [
    'ctstate all',
    { match: m({ kind: 'ctstate', states: ['INVALID', 'NEW', 'RELATED', 'ESTABLISHED', 'UNTRACKED'] }), action: { kind: 'accept' } },
  ],
  [
    'multiport ranges',
    {
      match: m(
        { kind: 'protocol', protocol: 'tcp' },
        {
          kind: 'dports',
          ports: [
            { from: 1, to: 1 },
            { from: 80, to: 90 },
            { from: 65535, to: 65535 },
          ],
        },
      ),
      action: { kind: 'accept' },
    },
  ],
  ['physdev in', { match: m({ kind: 'physdev', in: 'veth1234abcd' }), action: { kind: 'jump', target } }],
  ['physdev out, bridged', { match: m({ kind: 'physdev', out: 'veth1234abcd', isBridged: true }), action: { kind: 'jump', target } }],
  ['physdev in and out', { match: m({ kind: 'physdev', in: 'veth1', out: 'veth2' }), action: { kind: 'accept' } }],
  ['physdev bridged only', { match: m({ kind: 'physdev', isBridged: true }), action: { kind: 'accept' } }],
  ['connmark revoke bit', { match: m({ kind: 'connmark', value: 0x100000, mask: 0x100000 }), action: { kind: 'drop' } }],
  ['negated connmark', { match: m({ kind: 'connmark', value: 0, mask: 0x100000, negate: true }), action: { kind: 'accept' } }],
  [
    'flow log: limit with default burst, NFLOG with a quoted prefix',
    {
      match: m({ kind: 'limit', perSecond: 10, burst: 5 }),
      action: { kind: 'nflog', group: 9476, prefix: 'nf:iso:nf-tw-abcdefghijklmnop' },
    },
  ],
  [
    'flow log: other burst, group 0, bare prefix',
    {
      match: m({ kind: 'src-net', cidr: '10.244.1.0/24' }, { kind: 'limit', perSecond: 1000, burst: 20 }),
      action: { kind: 'nflog', group: 0, prefix: 'drop-1' },
    },
  ],
  [
    'DNS query of a watched pod: NFLOG with a threshold',
    {
      match: m(
        { kind: 'protocol', protocol: 'udp' },
        { kind: 'dports', ports: [{ from: 53, to: 53 }] },
        { kind: 'set', set, direction: 'src' },
        { kind: 'ctdir', direction: 'ORIGINAL' },
      ),
      action: { kind: 'nflog', group: 4101, prefix: 'dns-query', threshold: 1 },
    },
  ],
  [
    'DNS answer to a watched pod: held on NFQUEUE',
    {
      match: m(
        { kind: 'protocol', protocol: 'tcp' },
        { kind: 'sports', ports: [{ from: 53, to: 53 }] },
        { kind: 'set', set, direction: 'dst' },
        { kind: 'ctstate', states: ['ESTABLISHED'] },
        { kind: 'ctdir', direction: 'REPLY' },
      ),
      action: { kind: 'nfqueue', queue: 4100 },
    },
  ],
  [
    'ICMPv6 ND allowance',
    {
      match: m(
        { kind: 'src-net', cidr: 'fe80::/10' },
        { kind: 'in-iface', name: 'cni0' },
        { kind: 'out-iface', name: 'cni0' },
        { kind: 'protocol', protocol: 'ipv6-icmp' },
        { kind: 'icmpv6-type', type: 134 },
        { kind: 'hop-limit', value: 255 },
      ),
      action: { kind: 'accept' },
    },
  ],
  [
    'modules keep their order',
    {
      match: m(
        { kind: 'protocol', protocol: 'tcp' },
        { kind: 'ctstate', states: ['NEW'] },
        { kind: 'mark', value: 1, mask: 1 },
        { kind: 'set', set, direction: 'dst' },
        { kind: 'dports', ports: [{ from: 5, to: 5 }] },
      ),
      action: { kind: 'set-mark', value: 0x10000, mask: 0x10000 },
    },
  ],
];

describe('render → parse: hand-written Match and Action variants', () => {
  it.each(handWritten)('%s', (_name, r) => {
    expect(toRule(tokenize(joinArgs(ruleArgs(r))))).toEqual(r);
    const withComment = { ...r, comment: 'ns/name ingress:0' };
    const args = ruleArgsWithComment(withComment, 'HASHHASHHASHHASH');
    expect(parseSavedRule(joinArgs(args), tokenize(joinArgs(args)))).toEqual(
      expect.objectContaining({ hash: 'HASHHASHHASHHASH', comment: 'ns/name ingress:0', rule: withComment }),
    );
  });

  it('options are written in iptables-save order whatever order the rule lists them (same hash)', () => {
    const a: Rule = {
      match: m(
        { kind: 'protocol', protocol: 'tcp' },
        { kind: 'out-iface', name: 'cni0' },
        { kind: 'dst-net', cidr: '10.0.0.1/32' },
        { kind: 'src-net', cidr: '10.0.0.2/32' },
      ),
      action: { kind: 'accept' },
    };
    expect(joinArgs(ruleArgs(a))).toBe('-s 10.0.0.2/32 -d 10.0.0.1/32 -o cni0 -p tcp -j ACCEPT');
    const back = toRule(tokenize(joinArgs(ruleArgs(a))))!;
    expect(ruleHashes('c', [back])).toEqual(ruleHashes('c', [a]));
  });

  it.each([
    ['an unknown target', '-j LOG --log-prefix x'],
    ['an unknown module', '-m limit --limit 5/s -j ACCEPT'],
    ['a protocol we never emit', '-p icmp -j ACCEPT'],
    ['no target', '-s 10.0.0.0/8'],
    ['a dangling option', '-s'],
  ])('foreign rules stay unparsed: %s', (_name, text) => {
    expect(toRule(tokenize(text))).toBeUndefined();
  });
});

describe('parseIptablesSave(renderFullRestore(state))', () => {
  it.each(compiledStates)('%s: same chains, lines, rules and hashes', (_name, state) => {
    const text = renderFullRestore({ ...state, hooks: [] });
    const filter = parseIptablesSave(text).get('filter')!;
    expect([...filter.chains.keys()]).toEqual(state.chains.map((c) => c.name));
    for (const chain of state.chains) {
      const saved = filter.chains.get(chain.name)!;
      const rendered = renderChain(chain);
      expect(saved.policy).toBe('-');
      expect(saved.rules.map((r) => `-A ${chain.name} ${r.text}`)).toEqual(appendLines(rendered));
      expect(saved.rules.map((r) => r.hash)).toEqual(rendered.rules.map((r) => r.hash));
      expect(saved.rules.map((r) => r.rule)).toEqual(chain.rules);
    }
  });

  it.each(compiledStates)('%s: hooks as iptables-save prints them come back with their hash', (_name, state) => {
    const hooks = state.hooks.map((h) => `-A ${h.chain} ${renderHook(h).text}`);
    const text = ['*filter', ':FORWARD ACCEPT [0:0]', '-A FORWARD -s 1.1.1.1/32 -j ACCEPT', ...hooks, 'COMMIT', ''].join('\n');
    const forward = parseIptablesSave(text).get('filter')!.chains.get('FORWARD')!;
    expect(forward.policy).toBe('ACCEPT');
    expect(forward.rules.map((r) => r.hash)).toEqual([undefined, ...state.hooks.map(() => expect.stringMatching(/^[A-Za-z0-9_-]{16}$/))]);
    expect(forward.rules.slice(1).map((r) => r.rule)).toEqual(state.hooks.map((h) => h.rule));
  });
});

describe('rule hashes', () => {
  const base: Rule[] = handWritten.slice(0, 6).map(([, r]) => r);
  const changed: Rule = { match: m({ kind: 'src-net', cidr: '192.0.2.0/24' }), action: { kind: 'drop' } };

  it('are stable: same chain and rules, same hashes; 16 base64url characters each', () => {
    expect(ruleHashes('nf-x', base)).toEqual(
      ruleHashes(
        'nf-x',
        base.map((r) => structuredClone(r)),
      ),
    );
    expect(ruleHashes('nf-x', base).every((h) => /^[A-Za-z0-9_-]{16}$/.test(h))).toBe(true);
    expect(new Set(ruleHashes('nf-x', [base[0]!, base[0]!, base[0]!])).size).toBe(3);
  });

  it.each(base.map((_, i) => [i] as const))('changing rule %i changes its hash and every later one, not earlier ones', (i) => {
    const before = ruleHashes('nf-x', base);
    const after = ruleHashes(
      'nf-x',
      base.map((r, j) => (j === i ? changed : r)),
    );
    for (let j = 0; j < base.length; j++) {
      expect({ j, same: after[j] === before[j] }).toEqual({ j, same: j < i });
    }
  });

  it.each([
    ['a different chain name changes every hash', ruleHashes('nf-y', base)],
    ['a rule inserted at the top changes every hash after it', ruleHashes('nf-x', [changed, ...base]).slice(1)],
  ])('%s', (_name, hashes) => {
    const before = ruleHashes('nf-x', base);
    expect(hashes.filter((h, i) => h === before[i])).toEqual([]);
  });

  it('a changed human comment does not change the hash (it covers the arguments only)', () => {
    expect(
      ruleHashes(
        'nf-x',
        base.map((r) => ({ ...r, comment: 'other' })),
      ),
    ).toEqual(ruleHashes('nf-x', base));
  });
});

describe('comments', () => {
  it.each([
    ['double quotes', 'say "hi"'],
    ['single quotes and backslashes', "it's a \\ path"],
    ['newline and tab', 'a\nb\tc'],
    ['unicode', 'prod/naïve → ✓'],
    ['shell specials', '$(rm -rf /); `x` | y & z > w'],
    ['very long', 'x'.repeat(1000)],
  ])('%s are sanitized: no quotes, ≤ 256 chars, one token that survives the save round trip', (_name, text) => {
    const clean = sanitizeComment(text);
    expect(clean).not.toMatch(/["'\\\n\t`$]/);
    const r: Rule = { match: [], action: { kind: 'accept' }, comment: text };
    const chain: Chain = { name: 'nf-c' as ChainName, rules: [r], role: { kind: 'static' } };
    const [line] = appendLines(renderChain(chain));
    const args = tokenize(line!);
    const comment = args[args.indexOf('--comment') + 1]!;
    expect(comment.length).toBeLessThanOrEqual(256);
    expect(comment).toBe(`nf:${renderChain(chain).rules[0]!.hash} ${clean}`.slice(0, comment.length));
    expect(args.at(-1)).toBe('ACCEPT');
  });
});

describe('flow-log rules print as iptables-save prints them (checked by hand against iptables 1.8.9, nft and legacy)', () => {
  it.each<[string, Rule, string]>([
    [
      'default burst left out, prefix quoted because of ":"',
      { match: m({ kind: 'limit', perSecond: 10, burst: 5 }), action: { kind: 'nflog', group: 5, prefix: 'nf:isolated' } },
      '-m limit --limit 10/sec -j NFLOG --nflog-prefix "nf:isolated" --nflog-group 5',
    ],
    [
      'DNS query: NFLOG threshold after the group',
      {
        match: m(
          { kind: 'protocol', protocol: 'udp' },
          { kind: 'dports', ports: [{ from: 53, to: 53 }] },
          { kind: 'ctdir', direction: 'ORIGINAL' },
        ),
        action: { kind: 'nflog', group: 4101, prefix: 'dns-query', threshold: 1 },
      },
      '-p udp -m multiport --dports 53 -m conntrack --ctdir ORIGINAL -j NFLOG --nflog-prefix dns-query --nflog-group 4101 --nflog-threshold 1',
    ],
    [
      'DNS answer: NFQUEUE with bypass, state and direction as two conntrack matches',
      {
        match: m(
          { kind: 'protocol', protocol: 'udp' },
          { kind: 'sports', ports: [{ from: 53, to: 53 }] },
          { kind: 'ctstate', states: ['ESTABLISHED'] },
          { kind: 'ctdir', direction: 'REPLY' },
        ),
        action: { kind: 'nfqueue', queue: 4100 },
      },
      '-p udp -m multiport --sports 53 -m conntrack --ctstate ESTABLISHED -m conntrack --ctdir REPLY -j NFQUEUE --queue-num 4100 --queue-bypass',
    ],
    [
      'burst shown, group 0 left out, bare prefix',
      { match: m({ kind: 'limit', perSecond: 5, burst: 20 }), action: { kind: 'nflog', group: 0, prefix: 'p' } },
      '-m limit --limit 5/sec --limit-burst 20 -j NFLOG --nflog-prefix p',
    ],
  ])('%s', (_name, rule, saved) => {
    expect(joinArgs(ruleArgs(rule))).toBe(saved);
  });
});

describe('ICMPv6 rules print as ip6tables-save prints them (checked by hand against ip6tables 1.8.9, nft and legacy)', () => {
  it('type as a number, hop limit as --hl-eq, protocol as ipv6-icmp', () => {
    const rule: Rule = {
      match: m(
        { kind: 'in-iface', name: 'cni0' },
        { kind: 'out-iface', name: 'cni0' },
        { kind: 'protocol', protocol: 'ipv6-icmp' },
        { kind: 'icmpv6-type', type: 135 },
        { kind: 'hop-limit', value: 255 },
      ),
      action: { kind: 'accept' },
    };
    expect(joinArgs(ruleArgs(rule))).toBe('-i cni0 -o cni0 -p ipv6-icmp -m icmp6 --icmpv6-type 135 -m hl --hl-eq 255 -j ACCEPT');
  });
});
