import { chainKind, loadRuleset, NO_NETFENCE_CHAINS, readComment, requireOwnedChains, RulesetError } from '../../../src/trace/index.js';

describe('loadRuleset', () => {
  it.each([
    ['empty input', '', /empty input/],
    ['truncated dump (no COMMIT)', '*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -j ACCEPT\n', /no COMMIT \(truncated dump\?\)/],
    ['garbage', 'hello\nworld\n', /line 1: "hello" outside any \*table section/],
    ['only a nat table', '*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n', /no \*filter table .*tables: nat/],
    [
      'unterminated quote',
      '*filter\n:FORWARD ACCEPT [0:0]\n-A FORWARD -m comment --comment "oops -j ACCEPT\nCOMMIT\n',
      /unterminated quote/,
    ],
  ])('%s is a RulesetError', (_n, text, message) => {
    expect(() => loadRuleset(text)).toThrow(RulesetError);
    expect(() => loadRuleset(text)).toThrow(message);
  });

  it('reads a restore payload: -I inserts in order, undeclared built-ins get the given policy', () => {
    const text = [
      '*filter',
      ':nf-a - [0:0]',
      '-A nf-a -j DROP',
      '-A FORWARD -j ACCEPT',
      '-I FORWARD 1 -j nf-a',
      '-I FORWARD 2 -s 10.0.0.0/8 -j DROP',
      'COMMIT',
      '',
    ].join('\n');
    const rs = loadRuleset(text, { builtinPolicy: 'DROP' });
    const forward = rs.chains.get('FORWARD')!;
    expect(forward.policy).toBe('DROP');
    expect(forward.rules.map((r) => r.text)).toEqual(['-j nf-a', '-s 10.0.0.0/8 -j DROP', '-j ACCEPT']);
  });

  it('refuses a ruleset without our chains with the operator-facing message', () => {
    const rs = loadRuleset('*filter\n:FORWARD DROP [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -j KUBE-FORWARD\nCOMMIT\n');
    expect(() => requireOwnedChains(rs, 'nf-')).toThrow(NO_NETFENCE_CHAINS);
  });
});

describe('readComment', () => {
  it.each([
    [
      'default/test-network-policy ingress:0',
      { kind: 'policy-rule', policy: 'default/test-network-policy', direction: 'ingress', rule: 'ingress:0' },
    ],
    ['no egress rule of shop/p can match', { kind: 'policy-empty', policy: 'shop/p', why: 'no egress rule can match' }],
    ['shop/bad is invalid: allows nothing', { kind: 'policy-empty', policy: 'shop/bad', why: 'invalid: allows nothing' }],
    ['default/db isolated for ingress: no policy allowed', { kind: 'workload', pod: 'default/db', direction: 'ingress', isolated: true }],
    ['default/frontend not isolated for egress', { kind: 'workload', pod: 'default/frontend', direction: 'egress', isolated: false }],
    ['pod to itself', { kind: 'other', text: 'pod to itself' }],
  ])('%s', (text, meaning) => expect(readComment(text)).toEqual(meaning));
});

describe('chainKind', () => {
  it.each([
    ['FORWARD', 'builtin'],
    ['KUBE-FORWARD', 'foreign'],
    ['nf-FORWARD', 'forward'],
    ['nf-from-wl-dispatch', 'dispatch-from'],
    ['nf-td-abcdefabcdef', 'dispatch-to'],
    ['nf-fw-abc', 'workload-egress'],
    ['nf-tw-abc', 'workload-ingress'],
    ['nf-pi-abc', 'policy-ingress'],
    ['nf-po-abc', 'policy-egress'],
    ['nf-zz', 'owned-other'],
  ])('%s is %s', (name, kind) => expect(chainKind(name, 'nf-')).toBe(kind));
});
