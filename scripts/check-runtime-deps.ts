// House check (scripts/check.sh): package.json's runtime `dependencies` are exactly the packages src/ loads.
// Prints one line per mismatch and exits 1; prints nothing and exits 0 when they agree.

import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { dependencyProblems, packageOf, runtimeSpecifiers, type DeclaredDependencies } from './lib/runtime-deps.js';

const root = process.cwd();
const declared = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as DeclaredDependencies;
const loaded = new Map<string, string[]>();
const sources = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter(
  (f) => f.endsWith('.ts') && !f.endsWith('.d.ts'),
);
for (const file of sources.sort()) {
  const path = join(root, 'src', file);
  for (const specifier of runtimeSpecifiers(path, readFileSync(path, 'utf8'))) {
    const name = packageOf(specifier);
    if (name !== undefined) loaded.set(name, [...(loaded.get(name) ?? []), relative(root, path)]);
  }
}
const problems = dependencyProblems(declared, loaded);
for (const problem of problems) console.error(problem);
process.exitCode = problems.length > 0 ? 1 : 0;
