// What the npm package holds and how the build leaves it: the commands runnable as files, the license
// package.json names, and the documentation the README links to.

import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = process.cwd();
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; license: string };

describe('the package', () => {
  it.each(Object.entries(pkg.bin))('bin %s (%s) is executable after the build', (_name, path) => {
    expect(readFileSync(join(ROOT, path), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
    expect(statSync(join(ROOT, path)).mode & 0o111).toBe(0o111);
  });

  it('carries the Apache-2.0 license text package.json names', () => {
    expect(pkg.license).toBe('Apache-2.0');
    const text = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s*Apache License\n\s*Version 2\.0, January 2004\n/);
    expect(text).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    expect(text).toContain('END OF TERMS AND CONDITIONS');
  });

  it('ships the license, the README and every document the README links to', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' }),
    ) as {
      files: { path: string }[];
    }[];
    const files = new Set(packed[0]!.files.map((f) => f.path));
    const linked = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/\]\(([^)#:]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(linked).toEqual(expect.arrayContaining(['docs/operations.md', 'docs/commands.md']));
    for (const path of ['LICENSE', 'README.md', ...linked]) expect({ path, packed: files.has(path) }).toEqual({ path, packed: true });
  });
});
