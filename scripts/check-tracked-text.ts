// House check: tracked text says what and why, not which ticket or branch it came from. A comment citing
// a ticket number or a work branch's name means nothing to the next reader once the tracker and the branch
// are gone; the reason belongs in the sentence. Prints every finding as file:line and exits 1 if any.
// Upstream citations stay allowed: a URL (`…/issues/343`) or `repo#343` names a thread anyone can open.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/check-tracked-text.ts

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** What may not appear, with what to write instead. */
const FORBIDDEN: readonly { readonly pattern: RegExp; readonly instead: string }[] = [
  // The word for a ticket followed by a number (with a space, a dash or a hash between, or a list of them);
  // not a URL path segment nor `repo#343`.
  { pattern: /(?<![\w/.#-])issues?[ \t]*[-#]?[ \t]*\d/i, instead: 'say what the change does and why' },
  { pattern: /\b(?:wip|feature|bugfix|hotfix)\/[\w.-]+/i, instead: 'name the change, not the branch it was made on' },
  { pattern: /\bstop[ \t]+\d+\b/i, instead: 'say what the step does' },
];

/** Generated or third-party text: golden corpus output, the lockfile, recorded fixtures. */
const SKIPPED: readonly RegExp[] = [/^package-lock\.json$/, /^rules\/.*\/expected\./, /\/fixtures\//, /^scripts\/check-tracked-text\.ts$/];

const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  .split('\0')
  .filter((f) => f !== '' && !SKIPPED.some((re) => re.test(f)));

const findings: string[] = [];
for (const file of files) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue; // deleted in the work tree, not yet staged
  }
  if (text.includes('\0')) continue; // binary
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    for (const { pattern, instead } of FORBIDDEN) {
      const m = pattern.exec(lines[i]!);
      if (m) findings.push(`${file}:${i + 1}: "${m[0].trim()}": ${instead}`);
    }
  }
}
for (const f of findings) console.error(f);
if (findings.length > 0) {
  console.error(`${findings.length} ticket or branch reference(s) in tracked text`);
  process.exit(1);
}
