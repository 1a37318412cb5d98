// Commands load only the modules they use: `--help`, `compile` and `trace` must not load the Kubernetes
// client (it takes longer to load than they take to run), and `--help` nothing heavy at all. Checked on
// the static import graph (type-only imports excluded; dynamic `import()` is what defers a module).

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const SRC = join(process.cwd(), 'src');

/** Modules a file imports at load time: `import … from 'x'` and `export … from 'x'`, not `import type`. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  const re = /^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

/** Every package and src module reachable from `entry` by static imports. */
function loadedBy(entry: string): { packages: Set<string>; modules: Set<string> } {
  const packages = new Set<string>();
  const modules = new Set<string>();
  const todo = [join(SRC, entry)];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (modules.has(file)) continue;
    modules.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) {
        const ts = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
        if (existsSync(ts)) todo.push(ts);
      } else if (!spec.startsWith('node:')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    }
  }
  return { packages, modules: new Set([...modules].map((m) => m.slice(SRC.length + 1))) };
}

describe('module loading per command', () => {
  it('the entry point and --help load no third-party package', () => {
    const main = loadedBy('cli/main.ts');
    expect([...main.packages]).toEqual([]);
    expect([...main.modules].sort()).toEqual(
      [
        // What the entry does when a reader of stdout or stderr has gone (no imports of its own).
        'cli/closed-pipes.ts',
        'cli/command-specs.ts',
        'cli/commands.ts',
        'cli/help.ts',
        'cli/hints.ts',
        'cli/main.ts',
        'cli/options.ts',
        'cli/usage-errors.ts',
        'commands/errors.ts',
        // "did you mean" (no imports of its own).
        'config/edit-distance.ts',
        'config/marks.ts',
        'config/schema.ts',
        'dataplane/errors.ts',
        'log-levels.ts',
        'model/flow-log.ts',
        'model/node.ts',
        // The default domainNames learning settings, beside the node's other defaults (no imports but types).
        'model/dns-egress.ts',
        // The configuration's default manifest limits (no imports of its own).
        'model/manifest-limits.ts',
      ].sort(),
    );
  });

  it.each(['cli/compile.ts', 'cli/trace.ts', 'cli/inspect.ts', 'cli/map.ts'])(
    '%s does not load the Kubernetes client, execa or the reconciler',
    (entry) => {
      const { packages, modules } = loadedBy(entry);
      expect(packages).not.toContain('@kubernetes/client-node');
      expect(packages).not.toContain('execa');
      expect([...modules].filter((m) => m.startsWith('reconcile/') || m.startsWith('dataplane/kernel'))).toEqual([]);
    },
  );

  it.each(['cli/compile.ts', 'cli/trace.ts', 'cli/inspect.ts', 'cli/commands-oneshot.ts'])(
    '%s loads neither ajv nor yaml at import time (only to word an error, or for YAML text)',
    (entry) => {
      const { packages } = loadedBy(entry);
      expect(packages).not.toContain('ajv');
      expect(packages).not.toContain('yaml');
    },
  );

  it('nothing loads winston at import time (log.ts loads it with the first line a logger writes)', () => {
    expect(loadedBy('cli/daemon.ts').packages).not.toContain('winston');
  });

  it('the walker sees real imports (the daemon does load the Kubernetes client)', () => {
    expect(loadedBy('cli/daemon.ts').packages).toContain('@kubernetes/client-node');
  });
});
