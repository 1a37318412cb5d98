// Chains found again by content between compiles (ChainInterner, for the dispatch children and the pods'
// chains): the last compile's chain object comes back only when it says exactly the same thing, since the
// planner skips a chain it has already programmed as that very object. A rule that only gained an optional
// key (a negated match, a comment) or lost one is another rule: the new chain must come back, or the kernel
// keeps the old rule.

import { ChainInterner } from '../../../src/compile/memo.js';
import type { Chain, ChainName, Rule } from '../../../src/model/index.js';

const chainOf = (...rules: Rule[]): Chain => ({
  name: 'nf-from-dispatch-0' as ChainName,
  role: { kind: 'dispatch', direction: 'from' },
  rules,
});
const fromPods = (extra: Partial<Extract<Rule['match'][number], { kind: 'src-net' }>> = {}): Rule => ({
  match: [{ kind: 'src-net', cidr: '10.244.1.0/24', ...extra }],
  action: { kind: 'drop' },
});

/** The chain an interner hands out for `next` after a compile that handed out `before`. */
function afterCompile(before: Chain, next: Chain): Chain {
  const interner = new ChainInterner<Chain>();
  interner.intern(4, before);
  interner.rotate();
  return interner.intern(4, next);
}

describe('ChainInterner: the same chain object only for the same content', () => {
  it('an equal chain built anew comes back as the earlier object (what keeps an unchanged chain unwritten)', () => {
    const before = chainOf(fromPods());
    expect(afterCompile(before, chainOf(fromPods()))).toBe(before);
  });

  it.each([
    { name: 'a match that became negated', before: chainOf(fromPods()), next: chainOf(fromPods({ negate: true })) },
    { name: 'a match no longer negated', before: chainOf(fromPods({ negate: true })), next: chainOf(fromPods()) },
    { name: 'a rule that gained a comment', before: chainOf(fromPods()), next: chainOf({ ...fromPods(), comment: 'ns/p ingress[0]' }) },
    { name: 'a rule that lost its comment', before: chainOf({ ...fromPods(), comment: 'ns/p ingress[0]' }), next: chainOf(fromPods()) },
  ])('$name: the new chain', ({ before, next }) => {
    expect(afterCompile(before, next)).toBe(next);
  });

  it('another family keeps its own chain of the same name', () => {
    const interner = new ChainInterner<Chain>();
    const v4 = chainOf(fromPods());
    interner.intern(4, v4);
    const v6 = chainOf(fromPods({ cidr: 'fd00:10:244:1::/64' }));
    expect(interner.intern(6, v6)).toBe(v6);
  });
});
