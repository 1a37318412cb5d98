import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManifestSource } from '../../../src/cluster/manifest-source.js';
import type { ClusterChange, Logger } from '../../../src/cluster/source.js';

const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} };

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const ns = (name: string, labels = '{}') => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}, labels: ${labels}}\n`;
const policy = (name: string) => `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: ${name}, namespace: a}\nspec: {podSelector: {}}\n`;

let dir: string;
let source: ManifestSource | undefined;
let changes: ClusterChange[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-msrc-'));
  changes = [];
});
afterEach(async () => {
  await source?.stop();
  source = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function start(paths: string[]): ManifestSource {
  source = new ManifestSource({ paths, logger: quiet, debounceMs: 20 });
  source.onChange((c) => changes.push(c));
  return source;
}

const names = (s: ManifestSource) => [...s.snapshot().namespaces.map((n) => n.name), ...s.snapshot().policies.map((p) => `${p.namespace}/${p.name}`)];

describe('ManifestSource', () => {
  it('is synced after the first load, and subscribers see its adds', async () => {
    writeFileSync(join(dir, 'a.yaml'), `${ns('a')}---\n${policy('p')}`);
    const s = start([dir]);
    await s.synced;
    expect(names(s)).toEqual(['a', 'a/p']);
    expect(changes).toEqual([
      { kind: 'Namespace', key: 'a', type: 'add' },
      { kind: 'NetworkPolicy', key: 'a/p', type: 'add' },
    ]);
  });

  it.each([
    {
      name: 'a new file in a nested directory',
      edit: () => {
        mkdirSync(join(dir, 'sub'));
        writeFileSync(join(dir, 'sub', 'b.yaml'), ns('b'));
      },
      expected: ['a', 'b'],
      change: { kind: 'Namespace', key: 'b', type: 'add' },
    },
    {
      name: 'an edit saved by rename (as editors do)',
      edit: () => {
        writeFileSync(join(dir, '.a.yaml.tmp'), ns('a', '{team: x}'));
        renameSync(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
      },
      expected: ['a'],
      change: { kind: 'Namespace', key: 'a', type: 'update' },
    },
    {
      name: 'a deleted file',
      edit: () => rmSync(join(dir, 'a.yaml')),
      expected: [],
      change: { kind: 'Namespace', key: 'a', type: 'delete' },
    },
  ])('re-reads after $name', async ({ edit, expected, change }) => {
    writeFileSync(join(dir, 'a.yaml'), ns('a'));
    const s = start([dir]);
    await s.synced;
    changes.length = 0;
    edit();
    await waitFor('the change', () => changes.length > 0);
    expect(names(s)).toEqual(expected);
    expect(changes).toEqual([change]);
  });

  it('watches a file given by path through its directory', async () => {
    const file = join(dir, 'one.yaml');
    writeFileSync(file, ns('a'));
    const s = start([file]);
    await s.synced;
    writeFileSync(file, `${ns('a')}---\n${policy('p')}`);
    await waitFor('policy added', () => s.snapshot().policies.length === 1);
    expect(changes.map((c) => `${c.type} ${c.kind} ${c.key}`)).toEqual(['add Namespace a', 'add NetworkPolicy a/p']);
  });

  it('reports problems of the last load', async () => {
    writeFileSync(join(dir, 'a.yaml'), `${ns('a')}---\nkind: Pod\n`);
    const s = start([dir]);
    await s.synced;
    expect(s.problems().map((p) => p.object.replace(dir, '<dir>'))).toEqual(['<dir>/a.yaml#1']);
  });

  it('keeps the policies of a file that stops parsing until it reads cleanly again (never fails open)', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, `${ns('a')}---\n${policy('p')}---\n${policy('q')}`);
    const s = start([dir]);
    await s.synced;
    writeFileSync(file, `${ns('a')}---\n${policy('p')}---\nkind: NetworkPolicy\nmetadata: {name: q`);
    await waitFor('the broken read is reported', () => s.problems().some((p) => p.object.startsWith(`${file}#`)));
    expect(names(s)).toEqual(['a', 'a/p', 'a/q']);
    writeFileSync(file, `${ns('a')}---\n${policy('p')}`);
    await waitFor('q is deleted once the file parses', () => !names(s).includes('a/q'));
    expect(names(s)).toEqual(['a', 'a/p']);
  });
});
