// The manifests and the Dockerfile point their readers at documentation sections (`docs/operations.md
// "Uninstall"`): each named section must exist, under that heading, in that file.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = process.cwd();

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const sources = [...filesUnder(join(ROOT, 'deploy')), join(ROOT, 'Dockerfile')];
const references = sources.flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/\b((?:docs\/)?[\w.-]+\.md|README) "([^"]+)"/g)].map((m) => ({
    from: relative(ROOT, file),
    doc: m[1] === 'README' ? 'README.md' : m[1]!,
    section: m[2]!,
  })),
);

describe('section references in deploy/ and the Dockerfile', () => {
  it('there are some (the pattern still finds them)', () => {
    expect(references.length).toBeGreaterThan(3);
  });

  it.each(references)('$from → $doc "$section" is a heading there', ({ doc, section }) => {
    const headings = readFileSync(join(ROOT, doc), 'utf8')
      .split('\n')
      .filter((l) => /^#{1,4} /.test(l))
      .map((l) => l.replace(/^#+ /, ''));
    expect(headings).toContain(section);
  });
});
