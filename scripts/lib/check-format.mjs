// Format check: every file Prettier owns (.prettierignore says which) must equal Prettier's output.
// Prints `file:line` of the first line that differs, with the line as written and as Prettier writes it,
// because `prettier --check` names only the file. Fix: `npm run format`.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import * as prettier from 'prettier';

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.js', '*.mjs', '*.json'], {
  encoding: 'utf8',
})
  .split('\n')
  .filter(Boolean);
let bad = 0;
for (const file of files) {
  const info = await prettier.getFileInfo(file, { ignorePath: '.prettierignore' });
  if (info.ignored) continue;
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) continue; // deleted in the work tree, not yet in the index
  const options = { ...(await prettier.resolveConfig(file)), filepath: file };
  const want = await prettier.format(text, options);
  if (want === text) continue;
  bad++;
  const have = text.split('\n');
  const fixed = want.split('\n');
  let i = 0;
  while (i < have.length && have[i] === fixed[i]) i++;
  console.log(`${file}:${i + 1}: not formatted`);
  console.log(`  written:  ${have[i] ?? '(end of file)'}`);
  console.log(`  prettier: ${fixed[i] ?? '(end of file)'}`);
}
if (bad > 0) {
  console.log(`${bad} file(s) not formatted; run: npm run format`);
  process.exit(1);
}
