import { allocateMarks, markMaskProblems, parseMarkMask } from '../../../src/config/marks.js';
import { DEFAULT_MARKS } from '../../../src/model/index.js';

describe('allocateMarks', () => {
  it.each([
    { name: "Felix's default mask gives the model's defaults", mask: 0xffff0000, expect: DEFAULT_MARKS },
    { name: 'exactly four bits', mask: 0x0f000000, expect: { accept: 0x1000000, pass: 0x2000000, scratch0: 0x4000000, all: 0xf000000 } },
    {
      name: 'scattered bits, lowest first',
      mask: 0x80a01000,
      expect: { accept: 0x1000, pass: 0x200000, scratch0: 0x800000, all: 0x80a01000 },
    },
    {
      name: 'top bit stays unsigned',
      mask: 0xf0000000,
      expect: { accept: 0x10000000, pass: 0x20000000, scratch0: 0x40000000, all: 0xf0000000 },
    },
    { name: 'low bits below kube-proxy', mask: 0x0000000f, expect: { accept: 1, pass: 2, scratch0: 4, all: 0xf } },
  ])('$name', ({ mask, expect: expected }) => {
    expect(allocateMarks(mask)).toEqual(expected);
  });

  it('throws on an unusable mask', () => {
    expect(() => allocateMarks(0x7)).toThrow('mark mask 0x7 must have at least 4 bits set (has 3)');
  });
});

describe('markMaskProblems', () => {
  it.each([
    { name: 'default is fine', mask: 0xffff0000, problems: 0 },
    { name: 'kube-proxy masquerade bit', mask: 0x0001f000 | 0x4000, problems: 1 },
    { name: 'kube-proxy drop bit and too few bits', mask: 0x8000, problems: 2 },
    { name: 'zero', mask: 0, problems: 1 },
    { name: 'negative', mask: -1, problems: 1 },
    { name: 'over 32 bits', mask: 2 ** 32, problems: 1 },
  ])('$name', ({ mask, problems }) => {
    expect(markMaskProblems(mask)).toHaveLength(problems);
  });
});

describe('parseMarkMask', () => {
  it.each<{ input: unknown; expect: number | undefined }>([
    { input: '0xffff0000', expect: 0xffff0000 },
    { input: '0XF0000', expect: 0xf0000 },
    { input: '983040', expect: 0xf0000 },
    { input: 983040, expect: 0xf0000 },
    { input: '0x', expect: undefined },
    { input: '0x123456789', expect: undefined },
    { input: 'ffff0000', expect: undefined },
    { input: true, expect: undefined },
  ])('$input', ({ input, expect: expected }) => {
    expect(parseMarkMask(input)).toBe(expected);
  });
});
