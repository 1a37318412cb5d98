// The planner skips an object only when it is the very object programmed before (identity), wherever it sits in
// the previous state; the walk in step is a shortcut that must give the same answer as a set of every previous
// object, whatever moved: insertions, removals, reordering, a whole new state.

import { byNameIn, knownFlags } from '../../../src/plan/known.js';

const objs = (n: number, tag = 'o'): { name: string }[] => Array.from({ length: n }, (_, i) => ({ name: `${tag}${i}` }));
const bySet = (desired: readonly object[], previous: readonly object[]): number[] => {
  const all = new Set(previous);
  return desired.map((d) => (all.has(d) ? 1 : 0));
};

describe('knownFlags', () => {
  const prev = objs(200);
  const cases: { name: string; desired: object[] }[] = [
    { name: 'the same state', desired: [...prev] },
    { name: 'one object inserted in the middle', desired: [...prev.slice(0, 50), { name: 'new' }, ...prev.slice(50)] },
    { name: 'one object removed', desired: [...prev.slice(0, 50), ...prev.slice(51)] },
    { name: 'one object replaced by an equal new one', desired: prev.map((p, i) => (i === 120 ? { ...p } : p)) },
    { name: 'a run of removals longer than the lookahead', desired: [...prev.slice(0, 10), ...prev.slice(60)] },
    { name: 'reversed', desired: [...prev].reverse() },
    { name: 'many new objects among the old', desired: prev.flatMap((p, i) => (i % 3 === 0 ? [{ name: `n${i}` }, p] : [p])) },
    { name: 'all new', desired: objs(200, 'x') },
  ];
  it.each(cases)('$name: what a set of every previous object says', ({ desired }) => {
    expect([...knownFlags(desired, prev)]).toEqual(bySet(desired, prev));
  });
  it('nothing is known without a previous state', () => {
    expect([...knownFlags(prev, undefined)]).toEqual(prev.map(() => 0));
  });
});

describe('byNameIn', () => {
  it('finds the previous object of a name, by scan and then by map', () => {
    const prev = objs(50);
    const find = byNameIn(prev);
    for (let i = 0; i < 50; i++) expect(find(`o${i}`)).toBe(prev[i]);
    expect(find('missing')).toBeUndefined();
    expect(byNameIn<{ name: string }>(undefined)('o1')).toBeUndefined();
  });
});
