import { formatMatrix, matricesEqual, matrixOf, withCells, wrongCells } from '../../../sandbox/matrix.js';

const PODS = ['x/a', 'x/b', 'y/a'];
const allOpen = matrixOf(PODS, PODS, true);
const denyToXb = matrixOf(PODS, PODS, (from, to) => to !== 'x/b' || from === to);

describe('matrixOf / withCells', () => {
  it('builds every cell from the rule', () => {
    expect(denyToXb.cells).toEqual({
      'x/a': { 'x/a': true, 'x/b': false, 'y/a': true },
      'x/b': { 'x/a': true, 'x/b': true, 'y/a': true },
      'y/a': { 'x/a': true, 'x/b': false, 'y/a': true },
    });
  });

  it('overrides cells without changing the original', () => {
    const m = withCells(allOpen, [{ from: 'x/a', to: 'x/b', reachable: false }]);
    expect(m.cells['x/a']?.['x/b']).toBe(false);
    expect(allOpen.cells['x/a']?.['x/b']).toBe(true);
  });

  it('rejects a cell outside the matrix', () => {
    expect(() => withCells(allOpen, [{ from: 'x/a', to: 'z/z', reachable: false }])).toThrow('outside the matrix');
  });
});

describe('wrongCells', () => {
  it.each([
    { name: 'identical matrices', observed: allOpen, wrong: [] },
    {
      name: 'reachable where blocked was expected',
      observed: allOpen,
      expected: denyToXb,
      wrong: [
        { from: 'x/a', to: 'x/b', expected: false, observed: true },
        { from: 'y/a', to: 'x/b', expected: false, observed: true },
      ],
    },
    {
      name: 'a missing observation',
      observed: { froms: PODS, tos: PODS, cells: { ...allOpen.cells, 'y/a': { 'x/a': true, 'x/b': true } } },
      wrong: [{ from: 'y/a', to: 'y/a', expected: true, observed: undefined }],
    },
  ])('$name', ({ observed, expected, wrong }) => {
    expect(wrongCells(expected ?? allOpen, observed)).toEqual(wrong);
    expect(matricesEqual(expected ?? allOpen, observed)).toBe(wrong.length === 0);
  });

  it('refuses to compare matrices of different shapes', () => {
    expect(() => wrongCells(allOpen, matrixOf(['x/a'], PODS, true))).toThrow('different rows or columns');
    expect(() => wrongCells(allOpen, matrixOf(PODS, ['y/a', 'x/b', 'x/a'], true))).toThrow('different rows or columns');
  });
});

describe('formatMatrix', () => {
  it('prints the e2e truth-table layout', () => {
    expect(formatMatrix(denyToXb)).toBe(['-    x/a  x/b  y/a', 'x/a  .    X    .', 'x/b  .    .    .', 'y/a  .    X    .'].join('\n'));
  });

  it('pads columns to the longest key and marks unobserved cells', () => {
    const m = { froms: ['node:n1'], tos: ['x/a', 'x/b'], cells: { 'node:n1': { 'x/a': true } } };
    expect(formatMatrix(m, { indent: '  ' })).toBe(['  -        x/a  x/b', '  node:n1  .    ?'].join('\n'));
  });

  it('marks wrong cells with * in the diff view', () => {
    expect(formatMatrix(allOpen, { expected: denyToXb })).toBe(
      [
        'reachability: correct 7, incorrect 2 (* = observed differs from expected)',
        '-    x/a  x/b  y/a',
        'x/a  .    .*   .',
        'x/b  .    .    .',
        'y/a  .    .*   .',
      ].join('\n'),
    );
  });
});
