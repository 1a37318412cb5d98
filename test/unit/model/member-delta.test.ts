// editSorted must give exactly what sorting the edited members from scratch gives, and say exactly what
// moved: the compiler patches set members with it and the tracker follows the same change with it.
import { mulberry32 } from '../../../scripts/bench-lib/prng.js';
import { editSorted } from '../../../src/model/index.js';

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byValue = (a: string, b: string): number => Number(a) - Number(b);

describe('editSorted', () => {
  it('nothing moved (members already in, already out): the same array and an empty delta', () => {
    const sorted = ['1', '3', '5'];
    const got = editSorted(sorted, ['2', '4'], ['1', '5'], byValue);
    expect(got.members).toBe(sorted);
    expect(got.delta).toEqual({ added: [], removed: [] });
  });

  it.each([
    { name: 'into an empty list', sorted: [], gone: [], come: ['2', '1'], want: ['1', '2'] },
    { name: 'first and last out, one in at each end', sorted: ['2', '3', '4'], gone: ['2', '4'], come: ['1', '5'], want: ['1', '3', '5'] },
    { name: 'several in before the same member', sorted: ['10'], gone: [], come: ['7', '3', '9'], want: ['3', '7', '9', '10'] },
    { name: 'one out, one in at its place', sorted: ['1', '2', '3'], gone: ['2'], come: ['2.5'], want: ['1', '2.5', '3'] },
    { name: 'emptied', sorted: ['1', '2'], gone: ['1', '2'], come: [], want: [] },
  ])('$name', ({ sorted, gone, come, want }) => {
    const got = editSorted(sorted, gone, come, byValue);
    expect(got.members).toEqual(want);
    expect([...got.delta.added].sort(byValue)).toEqual(want.filter((m) => !sorted.includes(m)));
    expect([...got.delta.removed].sort(byValue)).toEqual(sorted.filter((m) => !want.includes(m)));
  });

  it('equals a sort from scratch after each of 300 random edits of a growing and shrinking list', () => {
    const rng = mulberry32(11);
    const address = (): string => `10.${rng.int(4)}.${rng.int(256)}.${rng.int(256)}`;
    let members: readonly string[] = [];
    for (let step = 0; step < 300; step++) {
      const have = new Set(members);
      const gone = new Set(members.filter(() => rng.chance(0.05)));
      const come = new Set(Array.from({ length: rng.int(20) }, address).filter((m) => !gone.has(m)));
      const want = [...new Set([...members.filter((m) => !gone.has(m)), ...come])].sort(byCodeUnits);
      const got = editSorted(members, gone, come, byCodeUnits);
      expect({ step, members: got.members }).toEqual({ step, members: want });
      expect([...got.delta.added].sort(byCodeUnits)).toEqual(want.filter((m) => !have.has(m)));
      expect([...got.delta.removed].sort(byCodeUnits)).toEqual(members.filter((m) => gone.has(m)));
      members = got.members;
    }
  });
});
