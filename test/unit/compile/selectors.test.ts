// Label selector matching, as metav1.LabelSelector defines it: "matchLabels is a map of {key,value} pairs …
// The requirements are ANDed." Every pair and every expression must hold; keys the selector only inherits
// (not its own entries) are not requirements. The matcher the policy checks read once per selector
// (selectorMatcher) answers as selectorMatches does, case by case.

import { matcherMatches, selectorMatcher, selectorMatches as matches } from '../../../src/compile/selectors.js';
import type { LabelSelector, Labels } from '../../../src/model/index.js';

const MATCHERS: [string, (s: LabelSelector, labels: Labels) => boolean][] = [
  ['selectorMatches', matches],
  ['selectorMatcher', (s, labels) => matcherMatches(selectorMatcher(s), labels)],
];

const selector = (matchLabels: Record<string, string>, matchExpressions: LabelSelector['matchExpressions'] = []): LabelSelector => ({
  matchLabels,
  matchExpressions,
});

describe.each(MATCHERS)('%s', (_name, selectorMatches) => {
  it('needs every matchLabels pair, whichever one differs', () => {
    const s = selector({ app: 'web', tier: 'front' });
    expect(selectorMatches(s, { app: 'web', tier: 'front', extra: 'x' })).toBe(true);
    expect(selectorMatches(s, { app: 'web', tier: 'back' })).toBe(false);
    expect(selectorMatches(s, { app: 'db', tier: 'front' })).toBe(false);
    expect(selectorMatches(s, { tier: 'front' })).toBe(false);
  });

  it('ANDs the expressions with the pairs and with each other', () => {
    const s = selector({ app: 'web' }, [
      { key: 'env', operator: 'In', values: ['prod', 'staging'] },
      { key: 'canary', operator: 'DoesNotExist', values: [] },
    ]);
    expect(selectorMatches(s, { app: 'web', env: 'prod' })).toBe(true);
    expect(selectorMatches(s, { app: 'web', env: 'dev' })).toBe(false);
    expect(selectorMatches(s, { app: 'web', env: 'prod', canary: 'yes' })).toBe(false);
    expect(selectorMatches(s, { app: 'db', env: 'prod' })).toBe(false);
  });

  it('an empty selector matches every label set', () => {
    expect(selectorMatches(selector({}), {})).toBe(true);
    expect(selectorMatches(selector({}), { a: 'b' })).toBe(true);
  });

  it('reads only the selector’s own pairs, not ones its object inherits', () => {
    const inherited = Object.create({ app: 'web' }) as Record<string, string>;
    inherited['tier'] = 'front';
    expect(selectorMatches(selector(inherited), { tier: 'front' })).toBe(true);
  });
});
