// Reachability matrices: rows are sources, columns are destinations, a cell says whether the
// probe got through. Printed the way the Kubernetes e2e netpol suite prints its truth tables
// (`.` reachable, `X` blocked, `?` not probed), plus a diff view that marks wrong cells with `*`.

export interface Matrix {
  readonly froms: readonly string[];
  readonly tos: readonly string[];
  /** cells[from][to]; a missing cell was not observed. */
  readonly cells: Readonly<Record<string, Readonly<Record<string, boolean>>>>;
}

export interface MatrixCell {
  readonly from: string;
  readonly to: string;
}

export interface WrongCell extends MatrixCell {
  readonly expected: boolean | undefined;
  readonly observed: boolean | undefined;
}

/** Builds a complete matrix from a rule, e.g. `(from, to) => to !== 'x/a' || from === to`. */
export function matrixOf(
  froms: readonly string[],
  tos: readonly string[],
  reachable: boolean | ((from: string, to: string) => boolean),
): Matrix {
  const rule = typeof reachable === 'boolean' ? () => reachable : reachable;
  const cells: Record<string, Record<string, boolean>> = {};
  for (const from of froms) {
    const row: Record<string, boolean> = {};
    for (const to of tos) row[to] = rule(from, to);
    cells[from] = row;
  }
  return { froms: [...froms], tos: [...tos], cells };
}

/** The same matrix with some cells overridden (expectations read as "all allowed, except …"). */
export function withCells(matrix: Matrix, cells: readonly (MatrixCell & { readonly reachable: boolean })[]): Matrix {
  const next: Record<string, Record<string, boolean>> = {};
  for (const from of matrix.froms) next[from] = { ...matrix.cells[from] };
  for (const c of cells) {
    const row = next[c.from];
    if (!row || !matrix.tos.includes(c.to)) throw new Error(`cell ${c.from} -> ${c.to} is outside the matrix`);
    row[c.to] = c.reachable;
  }
  return { froms: matrix.froms, tos: matrix.tos, cells: next };
}

export const cellOf = (matrix: Matrix, from: string, to: string): boolean | undefined => matrix.cells[from]?.[to];

/**
 * Cells where `observed` differs from `expected`, row by row. Both must have the same rows and
 * columns in the same order (as e2e's TruthTable.Compare insists): comparing different shapes is a
 * test bug, not a reachability result.
 */
export function wrongCells(expected: Matrix, observed: Matrix): WrongCell[] {
  const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  if (!same(expected.froms, observed.froms) || !same(expected.tos, observed.tos)) {
    throw new Error('cannot compare matrices with different rows or columns');
  }
  const wrong: WrongCell[] = [];
  for (const from of expected.froms) {
    for (const to of expected.tos) {
      const e = cellOf(expected, from, to);
      const o = cellOf(observed, from, to);
      if (e === undefined || o === undefined || e !== o) wrong.push({ from, to, expected: e, observed: o });
    }
  }
  return wrong;
}

export const matricesEqual = (expected: Matrix, observed: Matrix): boolean => wrongCells(expected, observed).length === 0;

const mark = (value: boolean | undefined): string => (value === undefined ? '?' : value ? '.' : 'X');

/**
 * The e2e truth-table layout: a `-` corner, destinations across, sources down. With `expected`,
 * it is the diff view: each cell shows what was observed, and a wrong cell gets a `*` after it
 * (`X*` = blocked but should be reachable, `.*` = reachable but should be blocked), under a
 * one-line summary of right and wrong cells.
 */
export function formatMatrix(observed: Matrix, opts: { readonly expected?: Matrix; readonly indent?: string } = {}): string {
  const indent = opts.indent ?? '';
  const wrong = opts.expected ? wrongCells(opts.expected, observed) : [];
  const isWrong = new Set(wrong.map((w) => `${w.from}\n${w.to}`));
  const header = ['-', ...observed.tos];
  const rows = observed.froms.map((from) => [
    from,
    ...observed.tos.map((to) => mark(cellOf(observed, from, to)) + (isWrong.has(`${from}\n${to}`) ? '*' : '')),
  ]);
  const widths = header.map((h, col) => Math.max(h.length, ...rows.map((r) => (r[col] ?? '').length)));
  const line = (cols: readonly string[]): string =>
    indent +
    cols
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  const table = [line(header), ...rows.map(line)].join('\n');
  if (!opts.expected) return table;
  const total = observed.froms.length * observed.tos.length;
  return `${indent}reachability: correct ${total - wrong.length}, incorrect ${wrong.length} (* = observed differs from expected)\n${table}`;
}
