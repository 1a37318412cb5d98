// No import cycles in src/: every static import, `export … from` and dynamic `import()` between src/ files
// counts (a lazy import still closes a loop: the module graph is loaded half-initialised, in an order
// that depends on which command ran first). `import type` and `export type` count too, in a second check:
// they load nothing at run time, but a loop of types is still two modules that cannot be read, moved or
// tested one without the other. A cycle is a strongly connected component of more than one file, or a file
// importing itself.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });

/**
 * The module specifiers of a file's imports: static, `export … from` and `import()`; with `types`, also
 * `import type` and `export type … from` (erased at build, but still a dependency of the source).
 */
function importedSpecifiers(file: string, types: boolean): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && (types || !node.importClause?.isTypeOnly) && ts.isStringLiteral(node.moduleSpecifier))
      specs.push(node.moduleSpecifier.text);
    else if (
      ts.isExportDeclaration(node) &&
      (types || !node.isTypeOnly) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      specs.push(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      if (arg && ts.isStringLiteral(arg)) specs.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs;
}

/** The src/ files one file imports (with `types`, type-only imports too), by path relative to src/. */
function importsOf(file: string, types: boolean): string[] {
  return importedSpecifiers(file, types)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, '.ts'))
    .filter((target) => target.startsWith(`${SRC}/`))
    .map((target) => relative(SRC, target));
}

/** Tarjan's strongly connected components of a directed graph, each as its members. */
function stronglyConnected(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  // Iterative, so a long import chain cannot overflow the stack.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; edge: number }[] = [{ node: start, edge: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const edges = graph.get(top.node) ?? [];
      if (top.edge < edges.length) {
        const to = edges[top.edge++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) !== index.get(top.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== top.node);
      out.push(component.sort());
    }
  }
  return out;
}

const cyclesOf = (graph: ReadonlyMap<string, readonly string[]>): string[] =>
  stronglyConnected(graph)
    .filter((c) => c.length > 1 || (graph.get(c[0]!) ?? []).includes(c[0]!))
    .map((c) => c.join(' ↔ '));

describe('import cycles', () => {
  it('finds a cycle, and only a cycle (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(cyclesOf(graph)).toEqual(['a ↔ b ↔ c', 'e']);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('src/ has none', () => {
    const graph = new Map(files(SRC).map((f) => [relative(SRC, f), importsOf(f, false)] as const));
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('src/ has none through type-only imports either', () => {
    const graph = new Map(files(SRC).map((f) => [relative(SRC, f), importsOf(f, true)] as const));
    expect(cyclesOf(graph)).toEqual([]);
  });
});
