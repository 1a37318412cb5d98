// Which packages the product loads at run time, read from its sources, and how that differs from package.json's
// `dependencies`. `src/` compiles file for file into `dist/`, so what src/ loads is what the image must hold.

import { isBuiltin } from 'node:module';
import ts from 'typescript';

export interface DeclaredDependencies {
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; undefined for relative paths and Node's built-ins. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Specifiers a module loads when it runs: value imports and re-exports (not `import type`, not imports whose
 * every name is `type`), `import('x')`, `require('x')` and `createRequire(...)('x')` (the lazy loads).
 */
export function runtimeSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      if (!isTypeOnlyImport(node)) literal(node.moduleSpecifier);
    } else if (ts.isExportDeclaration(node)) {
      if (!node.isTypeOnly) literal(node.moduleSpecifier);
    } else if (ts.isCallExpression(node) && loadsModule(node.expression)) {
      literal(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isTypeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false; // `import 'x'` runs x
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    !clause.name &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((e) => e.isTypeOnly)
  );
}

function loadsModule(callee: ts.Expression): boolean {
  if (callee.kind === ts.SyntaxKind.ImportKeyword) return true;
  if (ts.isIdentifier(callee) && callee.text === 'require') return true;
  return ts.isCallExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'createRequire';
}

/** Every mismatch between what the sources load (package → files loading it) and `dependencies`, one line each. */
export function dependencyProblems(declared: DeclaredDependencies, loaded: ReadonlyMap<string, readonly string[]>): string[] {
  const runtime = declared.dependencies ?? {};
  const dev = declared.devDependencies ?? {};
  const problems: string[] = [];
  for (const [name, files] of [...loaded].sort(([a], [b]) => a.localeCompare(b))) {
    if (name in runtime) continue;
    const where = files[0] ?? '?';
    problems.push(
      name in dev
        ? `${where}: loads '${name}', a devDependency: the built daemon needs it at run time; move it to dependencies`
        : `${where}: loads '${name}', which package.json does not declare; add it to dependencies`,
    );
  }
  for (const name of Object.keys(runtime).sort()) {
    if (!loaded.has(name)) {
      problems.push(
        `package.json: dependency '${name}' is not loaded by src/ (so not by dist/); drop it, or make it a devDependency if only tests or scripts use it`,
      );
    }
  }
  return problems;
}
