// The layer map of CONTRIBUTING.md, enforced: which folder of src/ may import which, nothing in src/ imports
// from outside src/ (src/ is the product: dist/ and the image), only src/dataplane runs processes, and cli/
// reaches the kernel, the compiler and the planner only through commands/.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

/** Folder (or top-level module) → what it may import besides itself. Keep in step with CONTRIBUTING.md. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  model: [],
  'log-levels': [],
  log: ['log-levels'],
  compile: ['model'],
  render: ['model'],
  config: ['model', 'log-levels'],
  cluster: ['model', 'log'],
  dataplane: ['model', 'render'],
  plan: ['model', 'render'],
  trace: ['model', 'render'],
  dns: ['model'],
  reconcile: ['model', 'compile', 'plan', 'render'],
  revoke: ['model', 'dataplane', 'trace', 'log'],
  antispoof: ['model', 'render', 'dataplane', 'log'],
  inspect: ['model', 'render', 'trace', 'antispoof'],
  observe: ['model', 'compile', 'config', 'dataplane', 'trace', 'log'],
  why: ['model', 'compile', 'trace'],
  map: ['model', 'compile', 'trace', 'why'],
  daemon: ['model', 'log', 'config', 'cluster', 'dataplane', 'render', 'plan', 'reconcile', 'revoke', 'antispoof', 'observe', 'dns'],
  commands: [
    'model',
    'log',
    'config',
    'cluster',
    'compile',
    'render',
    'dataplane',
    'plan',
    'reconcile',
    'trace',
    'inspect',
    'antispoof',
    'observe',
    'why',
  ],
  cli: ['commands', 'model', 'log', 'log-levels', 'config', 'cluster', 'inspect', 'trace', 'observe', 'why', 'map', 'daemon'],
};
/** What only commands/ may reach for cli/: the kernel, the compiler, the planner, the text layer. */
const BELOW_COMMANDS = ['dataplane', 'compile', 'plan', 'reconcile', 'render', 'antispoof', 'revoke', 'dns'];
/** STYLE rule 4: exactly one module runs processes or touches the kernel. */
const PROCESS_MODULES = ['node:child_process', 'child_process', 'execa', 'netlink'];

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
const layerOf = (file: string): string => relative(SRC, file).split('/')[0]!.replace(/\.ts$/, '');

interface Edge {
  readonly file: string;
  readonly line: number;
  readonly spec: string;
}
const imports: { readonly from: string; readonly edges: readonly Edge[] }[] = files(SRC).map((file) => {
  const text = readFileSync(file, 'utf8');
  const edges = ts.preProcessFile(text, true, true).importedFiles.map((f) => ({
    file: relative(ROOT, file),
    line: text.slice(0, f.pos).split('\n').length,
    spec: f.fileName,
  }));
  return { from: file, edges };
});

describe('layer map', () => {
  it('knows every folder of src/', () => {
    expect(
      readdirSync(SRC)
        .map((f) => f.replace(/\.ts$/, ''))
        .filter((f) => !(f in MAY_IMPORT)),
    ).toEqual([]);
  });

  it('each folder imports only what the map allows, and nothing outside src/', () => {
    const wrong: string[] = [];
    for (const { from, edges } of imports) {
      const layer = layerOf(from);
      for (const e of edges) {
        if (!e.spec.startsWith('.')) continue;
        const target = resolve(dirname(from), e.spec);
        if (!target.startsWith(`${SRC}/`)) {
          wrong.push(`${e.file}:${e.line}: imports ${e.spec}, outside src/`);
          continue;
        }
        const to = layerOf(target.replace(/\.js$/, '.ts'));
        const allowed = MAY_IMPORT[layer] ?? [];
        if (to !== layer && !allowed.includes('*') && !allowed.includes(to))
          wrong.push(`${e.file}:${e.line}: ${layer} may not import ${to} (${e.spec})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('nothing but cli/ imports the daemon', () => {
    const wrong = Object.entries(MAY_IMPORT)
      .filter(([layer, allowed]) => layer !== 'cli' && (allowed.includes('daemon') || allowed.includes('*')))
      .map(([layer]) => layer);
    expect(wrong).toEqual([]);
  });

  it('cli/ parses, calls and prints: it reaches the kernel, the compiler, the planner and the text layer only through commands/', () => {
    const cli = MAY_IMPORT['cli'] ?? [];
    expect(cli.filter((layer) => layer === '*' || BELOW_COMMANDS.includes(layer))).toEqual([]);
  });

  it('only src/dataplane runs processes or talks netlink', () => {
    const wrong = imports.flatMap(({ from, edges }) =>
      layerOf(from) === 'dataplane'
        ? []
        : edges.filter((e) => PROCESS_MODULES.includes(e.spec)).map((e) => `${e.file}:${e.line}: imports ${e.spec}`),
    );
    expect(wrong).toEqual([]);
  });
});
