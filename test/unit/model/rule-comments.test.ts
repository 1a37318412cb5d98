// Writer and reader of our rule comments and chain names round-trip: each comment the compiler writes (through
// the renderer's comment sanitizer) reads back as what it says, and each chain name reads back as its kind.

import { chainNames } from '../../../src/compile/names.js';
import { cnpChainName } from '../../../src/compile/cluster-policy-chains.js';
import { KERNEL_CHAINS, readComment, ruleComment, chainKindOf, type CommentMeaning, type ChainKind } from '../../../src/model/index.js';
import { sanitizeComment } from '../../../src/render/index.js';

const label = ruleComment.cnpRuleLabel('deny-db', 'ingress', 2, 'from-web');

describe('rule comments: written, rendered, read back', () => {
  it.each<{ name: string; text: string; meaning: CommentMeaning }>([
    {
      name: 'policy rule',
      text: ruleComment.policyRule('prod/web', 'egress', 3),
      meaning: { kind: 'policy-rule', policy: 'prod/web', direction: 'egress', rule: 'egress:3' },
    },
    {
      name: 'policy with no rule that can match',
      text: ruleComment.policyNone('prod/web', 'ingress'),
      meaning: { kind: 'policy-empty', policy: 'prod/web', why: 'no ingress rule can match' },
    },
    {
      name: 'invalid policy',
      text: ruleComment.policyInvalid('prod/web'),
      meaning: { kind: 'policy-empty', policy: 'prod/web', why: 'invalid: allows nothing' },
    },
    {
      name: 'pod not isolated',
      text: ruleComment.workloadOpen('prod/web-0', 'ingress'),
      meaning: { kind: 'workload', pod: 'prod/web-0', direction: 'ingress', isolated: false },
    },
    {
      name: 'pod not isolated, no tier decided',
      text: ruleComment.workloadOpen('prod/web-0', 'egress', true),
      meaning: { kind: 'workload', pod: 'prod/web-0', direction: 'egress', isolated: false },
    },
    {
      name: 'pod isolated',
      text: ruleComment.workloadIsolated('prod/web-0', 'egress'),
      meaning: { kind: 'workload', pod: 'prod/web-0', direction: 'egress', isolated: true },
    },
    {
      name: 'ClusterNetworkPolicy rule',
      text: ruleComment.cnpRule(label, 'Deny'),
      meaning: {
        kind: 'cluster-policy-rule',
        policy: 'ClusterNetworkPolicy deny-db',
        direction: 'ingress',
        rule: 'ingress:2 from-web',
        action: 'Deny',
      },
    },
    {
      name: 'ClusterNetworkPolicy rule without a name, failing closed',
      text: ruleComment.cnpFailClosed(ruleComment.cnpRuleLabel('deny-db', 'egress', 0), 'Deny'),
      meaning: {
        kind: 'cluster-policy-rule',
        policy: 'ClusterNetworkPolicy deny-db',
        direction: 'egress',
        rule: 'egress:0',
        action: 'Deny',
        failsClosed: true,
      },
    },
    {
      name: 'ClusterNetworkPolicy with no rule that can match',
      text: ruleComment.cnpNone('deny-db', 'egress'),
      meaning: { kind: 'cluster-policy-empty', policy: 'ClusterNetworkPolicy deny-db', direction: 'egress' },
    },
  ])('$name', ({ text, meaning }) => {
    expect(sanitizeComment(text)).toBe(text);
    expect(readComment(text)).toEqual(meaning);
  });
});

describe('chain names: built, read back as their kind', () => {
  const names = chainNames('nf-');
  const kind = (name: string): ChainKind => chainKindOf(name, 'nf-', KERNEL_CHAINS);
  it.each<{ name: string; chain: string; expected: ChainKind }>([
    { name: 'entry', chain: names.forward, expected: 'forward' },
    { name: 'egress dispatch', chain: names.fromDispatch, expected: 'dispatch-from' },
    { name: 'ingress dispatch', chain: names.toDispatch, expected: 'dispatch-to' },
    { name: 'egress dispatch child', chain: names.fromDispatchChild('10.0.0.0/28'), expected: 'dispatch-from' },
    { name: 'ingress dispatch child', chain: names.toDispatchChild('10.0.0.0/28'), expected: 'dispatch-to' },
    { name: 'pod egress', chain: names.fromWorkload('prod/web-0'), expected: 'workload-egress' },
    { name: 'pod ingress', chain: names.toWorkload('prod/web-0'), expected: 'workload-ingress' },
    { name: 'policy ingress', chain: names.policyIngress('prod/web'), expected: 'policy-ingress' },
    { name: 'policy egress', chain: names.policyEgress('prod/web'), expected: 'policy-egress' },
    { name: 'ClusterNetworkPolicy ingress', chain: cnpChainName('nf-', 'deny-db', 'ingress'), expected: 'cluster-policy-ingress' },
    { name: 'ClusterNetworkPolicy egress', chain: cnpChainName('nf-', 'deny-db', 'egress'), expected: 'cluster-policy-egress' },
    { name: 'kernel chain', chain: 'FORWARD', expected: 'builtin' },
    { name: 'someone else', chain: 'KUBE-FORWARD', expected: 'foreign' },
    { name: 'ours, unknown kind', chain: 'nf-zz-abc', expected: 'owned-other' },
  ])('$name', ({ chain, expected }) => {
    expect(kind(chain)).toBe(expected);
  });
});
