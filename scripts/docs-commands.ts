// `npm run docs:commands`: rewrites docs/commands.md's option tables from the command specs
// (scripts/lib/commands-doc.ts). `--check` (scripts/check.sh) changes nothing and fails naming the file
// when the document is not what the specs generate.

import { readFileSync, writeFileSync } from 'node:fs';
import { withGeneratedTables } from './lib/commands-doc.js';

const PATH = new URL('../docs/commands.md', import.meta.url);
const current = readFileSync(PATH, 'utf8');
const wanted = withGeneratedTables(current);
if (process.argv.includes('--check')) {
  if (current !== wanted) {
    process.stderr.write('docs/commands.md:1: its option tables differ from src/cli/command-specs.ts; run npm run docs:commands\n');
    process.exitCode = 1;
  }
} else if (current !== wanted) {
  writeFileSync(PATH, wanted);
  process.stderr.write('docs/commands.md: option tables rewritten\n');
}
