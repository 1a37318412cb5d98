// Lines per layer of src/ (each folder, and the top-level modules together) and the files over a bound,
// counted as `wc -l` counts them: the figures a codebase review quotes beside scripts/largest-functions.ts.
// Usage: node --import ./scripts/register-ts.mjs scripts/code-size.ts [DIR (src)] [MAX_LINES (400)]

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = process.argv[2] ?? 'src';
const max = Number(process.argv[3] ?? 400);
const perLayer = new Map<string, number>();
const large: { lines: number; file: string }[] = [];

function walk(dir: string): void {
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.ts')) count(path);
  }
}

function count(path: string): void {
  const lines = readFileSync(path, 'utf8').split('\n').length - 1;
  const file = relative(root, path);
  const layer = file.includes('/') ? file.split('/')[0]! : '(top-level modules)';
  perLayer.set(layer, (perLayer.get(layer) ?? 0) + lines);
  if (lines > max) large.push({ lines, file });
}

walk(root);
console.log(`lines per layer of ${root}/`);
for (const [layer, lines] of [...perLayer].sort(([a], [b]) => a.localeCompare(b))) console.log(`${String(lines).padStart(7)} ${layer}`);
console.log(`${String([...perLayer.values()].reduce((a, b) => a + b, 0)).padStart(7)} total`);
console.log(`\nfiles over ${max} lines`);
for (const { lines, file } of large.sort((a, b) => b.lines - a.lines)) console.log(`${String(lines).padStart(7)} ${file}`);
if (large.length === 0) console.log('      (none)');
