// diffByIdentity must find every element that came or went, whatever the edits: the compiler and the
// planner trust it to say which pods and set members changed.
import { mulberry32 } from '../../../scripts/bench-lib/prng.js';
import { diffByIdentity } from '../../../src/model/index.js';

const setDiff = <T>(prev: readonly T[], next: readonly T[]) => ({
  added: next.filter((x) => !prev.includes(x)),
  removed: prev.filter((x) => !next.includes(x)),
});

describe('diffByIdentity', () => {
  const base = Array.from({ length: 300 }, (_, i) => ({ i }));

  it.each([
    { name: 'nothing changed', next: base },
    { name: 'one appended', next: [...base, { i: 300 }] },
    { name: 'one removed in the middle', next: base.filter((_, k) => k !== 150) },
    { name: 'one replaced', next: base.map((x, k) => (k === 7 ? { i: 7 } : x)) },
    { name: 'first and last removed', next: base.slice(1, -1) },
    { name: 'all replaced', next: base.map((x) => ({ ...x })) },
    { name: 'reversed', next: [...base].reverse() },
    { name: 'emptied', next: [] },
  ])('$name: reports exactly what came and went', ({ next }) => {
    const got = diffByIdentity(base, next);
    const want = setDiff(base, next);
    // A moved element may show up on both sides; what truly came and went must be there, and nothing else.
    const moved = got.added.filter((x) => got.removed.includes(x));
    expect(got.added.filter((x) => !moved.includes(x))).toEqual(want.added);
    expect(got.removed.filter((x) => !moved.includes(x))).toEqual(want.removed);
    expect(moved.every((x) => base.includes(x) && next.includes(x))).toBe(true);
  });

  it('random edit sequences: added and removed equal the set difference', () => {
    const rng = mulberry32(42);
    for (let round = 0; round < 200; round++) {
      const next = [...base];
      const edits = Math.floor(rng.next() * 100);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(rng.next() * (next.length + 1));
        const roll = rng.next();
        if (roll < 0.4) next.splice(at, 0, { i: -1 });
        else if (roll < 0.8) next.splice(at, 1);
        else next.splice(at, 1, { i: -2 });
      }
      const got = diffByIdentity(base, next);
      const want = setDiff(base, next);
      expect(new Set(got.added.filter((x) => !base.includes(x)))).toEqual(new Set(want.added));
      expect(new Set(got.removed.filter((x) => !next.includes(x)))).toEqual(new Set(want.removed));
      // Anything reported but not truly changed is on both sides (a move), never a loss.
      for (const x of got.removed) if (next.includes(x)) expect(got.added).toContain(x);
    }
  });
});
