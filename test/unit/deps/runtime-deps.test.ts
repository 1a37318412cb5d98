import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { dependencyProblems, packageOf, runtimeSpecifiers } from '../../../scripts/lib/runtime-deps.js';

describe('packageOf', () => {
  it.each([
    { specifier: 'yaml', name: 'yaml' },
    { specifier: '@kubernetes/client-node', name: '@kubernetes/client-node' },
    { specifier: '@scope/pkg/deep/file.js', name: '@scope/pkg' },
    { specifier: 'diff/lib/index.js', name: 'diff' },
    { specifier: 'node:fs', name: undefined },
    { specifier: 'fs', name: undefined },
    { specifier: './local.js', name: undefined },
  ])('$specifier → $name', ({ specifier, name }) => {
    expect(packageOf(specifier)).toBe(name);
  });
});

describe('runtimeSpecifiers', () => {
  it('counts value imports, re-exports, side-effect imports and dynamic loads', () => {
    const text = [
      "import { a } from 'value-import';",
      "import b from 'default-import';",
      "import * as c from 'namespace-import';",
      "import 'side-effect';",
      "export { d } from 're-export';",
      "const e = await import('dynamic-import');",
      "const f = createRequire(import.meta.url)('lazy-require');",
      "const g = require('plain-require');",
    ].join('\n');
    expect(runtimeSpecifiers('x.ts', text)).toEqual([
      'value-import',
      'default-import',
      'namespace-import',
      'side-effect',
      're-export',
      'dynamic-import',
      'lazy-require',
      'plain-require',
    ]);
  });

  it('skips what the compiler erases: type-only imports and re-exports', () => {
    const text = [
      "import type { A } from 'type-import';",
      "import type * as B from 'type-namespace';",
      "import { type C, type D } from 'all-names-typed';",
      "export type { E } from 'type-re-export';",
      "import { type F, g } from 'one-value-name';",
    ].join('\n');
    expect(runtimeSpecifiers('x.ts', text)).toEqual(['one-value-name']);
  });
});

describe('dependencyProblems', () => {
  const loaded = new Map([['yaml', ['src/a.ts']]]);

  it('passes when dependencies are exactly what the sources load', () => {
    expect(dependencyProblems({ dependencies: { yaml: '^2' }, devDependencies: { jest: '^30' } }, loaded)).toEqual([]);
  });

  it('fails on a runtime dependency nothing in src/ loads (planted, or used only by tests)', () => {
    const problems = dependencyProblems({ dependencies: { yaml: '^2', 'left-pad': '^1' } }, loaded);
    expect(problems).toEqual([expect.stringMatching(/^package\.json: dependency 'left-pad' is not loaded by src\//)]);
  });

  it('fails on a package src/ loads that is only a devDependency, naming the file', () => {
    const problems = dependencyProblems({ dependencies: {}, devDependencies: { yaml: '^2' } }, loaded);
    expect(problems).toEqual([expect.stringMatching(/^src\/a\.ts: loads 'yaml', a devDependency/)]);
  });

  it('fails on a package src/ loads that package.json does not declare', () => {
    expect(dependencyProblems({}, loaded)).toEqual([
      expect.stringMatching(/^src\/a\.ts: loads 'yaml', which package.json does not declare/),
    ]);
  });
});

describe('scripts/check-runtime-deps.ts on a copy of this repository', () => {
  const root = process.cwd();
  const check = (dir: string) => {
    try {
      execFileSync(
        process.execPath,
        ['--import', resolve(root, 'scripts/register-ts.mjs'), resolve(root, 'scripts/check-runtime-deps.ts')],
        {
          cwd: dir,
          encoding: 'utf8',
          stdio: 'pipe',
        },
      );
      return { status: 0, stderr: '' };
    } catch (error) {
      const failed = error as { status: number; stderr: string };
      return { status: failed.status, stderr: failed.stderr };
    }
  };
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'netfence-deps-'));
    cpSync(join(root, 'src'), join(dir, 'src'), { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const withPackage = (edit: (pkg: { dependencies: Record<string, string>; devDependencies: Record<string, string> }) => void) => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    edit(pkg);
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    return check(dir);
  };

  it("passes on the repository's package.json", () => {
    expect(withPackage(() => undefined)).toEqual({ status: 0, stderr: '' });
  });

  it('fails on a planted unused runtime dependency', () => {
    const result = withPackage((pkg) => (pkg.dependencies['left-pad'] = '^1.3.0'));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("dependency 'left-pad' is not loaded by src/");
  });

  it('fails when a dependency only tests use (execa) is a runtime dependency', () => {
    const result = withPackage((pkg) => (pkg.dependencies['execa'] = '^9.6.1'));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("dependency 'execa' is not loaded by src/");
  });
});
