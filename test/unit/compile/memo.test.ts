// Chains found again by content between compiles (ChainInterner, for the dispatch children and the pods'
// chains): the last compile's chain object comes back only when it says exactly the same thing, since the
// planner skips a chain it has already programmed as that very object. A rule that only gained an optional
// key (a negated match, a comment) or lost one is another rule: the new chain must come back, or the kernel
// keeps the old rule.

import { ChainInterner, Memo } from '../../../src/compile/memo.js';
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

describe('Memo: results kept across compiles without rebuilding its maps every compile', () => {
  it('a result one compile did not ask for is found again by the next (no second render)', () => {
    const memo = new Memo<readonly [string], { readonly made: number }>();
    let made = 0;
    const make = () => ({ made: ++made });
    const first = memo.get(['a'], make);
    memo.rotate(); // a compile that asked for nothing
    memo.rotate();
    expect(memo.get(['a'], make)).toBe(first);
    expect(made).toBe(1);
  });

  it('drops what the last compile did not use once as many results were made since (memory stays bounded)', () => {
    const memo = new Memo<readonly [number], { readonly key: number }>();
    const old = memo.get([-1], () => ({ key: -1 }));
    memo.rotate();
    // Compiles that each ask for new keys only: the old result goes at the first sweep.
    for (let round = 0; round < 4; round++) {
      for (let k = 0; k < 300; k++) memo.get([round * 1000 + k], () => ({ key: k }));
      memo.rotate();
    }
    expect(memo.get([-1], () => ({ key: -1 }))).not.toBe(old);
  });

  it('keeps what every compile asks for through any number of sweeps', () => {
    const memo = new Memo<readonly [number], { readonly key: number }>();
    const kept = memo.get([0], () => ({ key: 0 }));
    for (let round = 1; round < 10; round++) {
      expect(memo.get([0], () => ({ key: 0 }))).toBe(kept);
      for (let k = 0; k < 300; k++) memo.get([round * 1000 + k], () => ({ key: k }));
      memo.rotate();
    }
  });
});

describe('ChainInterner across compiles that did not ask for a name', () => {
  it('an equal chain comes back as the object handed out before, a changed one as itself', () => {
    const interner = new ChainInterner<Chain>();
    const before = chainOf(fromPods());
    interner.intern(4, before);
    interner.rotate();
    interner.rotate();
    expect(interner.intern(4, chainOf(fromPods()))).toBe(before);
    const changed = chainOf(fromPods({ negate: true }));
    expect(interner.intern(4, changed)).toBe(changed);
    interner.rotate();
    expect(interner.intern(4, chainOf(fromPods({ negate: true })))).toBe(changed);
  });
});
