import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManifestSource, type ManifestSourceOptions, type SourceHealth } from '../../../src/cluster/manifest-source.js';
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
const policy = (name: string) =>
  `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: ${name}, namespace: a}\nspec: {podSelector: {}}\n`;

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

let healths: SourceHealth[];

function start(paths: string[], extra: Partial<ManifestSourceOptions> = {}): ManifestSource {
  healths = [];
  source = new ManifestSource({ paths, logger: quiet, debounceMs: 20, retryMs: 50, onHealth: (h) => healths.push(h), ...extra });
  source.onChange((c) => changes.push(c));
  return source;
}

const names = (s: ManifestSource) => [
  ...s.snapshot().namespaces.map((n) => n.name),
  ...s.snapshot().policies.map((p) => `${p.namespace}/${p.name}`),
];

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
      expected: ['a', 'b', 'z'],
      change: { kind: 'Namespace', key: 'b', type: 'add' },
    },
    {
      name: 'an edit saved by rename (as editors do)',
      edit: () => {
        writeFileSync(join(dir, '.a.yaml.tmp'), ns('a', '{team: x}'));
        renameSync(join(dir, '.a.yaml.tmp'), join(dir, 'a.yaml'));
      },
      expected: ['a', 'z'],
      change: { kind: 'Namespace', key: 'a', type: 'update' },
    },
    {
      name: 'a deleted file (the directory still lists others)',
      edit: () => rmSync(join(dir, 'a.yaml')),
      expected: ['z'],
      change: { kind: 'Namespace', key: 'a', type: 'delete' },
    },
  ])('re-reads after $name', async ({ edit, expected, change }) => {
    writeFileSync(join(dir, 'a.yaml'), ns('a'));
    writeFileSync(join(dir, 'z.yaml'), ns('z'));
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
    writeFileSync(join(dir, 'a.yaml'), `${ns('a')}---\nkind: Deployment\n`);
    const s = start([dir]);
    await s.synced;
    expect(s.problems().map((p) => `${p.severity} ${p.object.replace(dir, '<dir>')}`)).toEqual(['warning <dir>/a.yaml#1']);
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

  describe('an incomplete read never shrinks the cluster', () => {
    const complete = () => healths.at(-1)?.complete;
    const deletes = () => changes.filter((c) => c.type === 'delete');

    it('a watched folder that vanishes keeps its objects, reports incomplete, and resumes when it is back', async () => {
      const sub = join(dir, 'rules');
      mkdirSync(sub);
      writeFileSync(join(sub, 'a.yaml'), `${ns('a')}---\n${policy('p')}`);
      const s = start([sub]);
      await s.synced;
      expect(healths).toEqual([{ complete: true }]);
      renameSync(sub, join(dir, 'rules.unmounted'));
      await waitFor('incomplete', () => complete() === false);
      await new Promise((r) => setTimeout(r, 200)); // several retries
      expect(names(s)).toEqual(['a', 'a/p']);
      expect(deletes()).toEqual([]);
      expect(s.health()).toMatchObject({ complete: false, reason: expect.stringContaining(sub) });
      renameSync(join(dir, 'rules.unmounted'), sub);
      await waitFor('complete again', () => complete() === true);
      // Edits are followed again (the watch was re-opened on the returned directory).
      writeFileSync(join(sub, 'a.yaml'), ns('a'));
      await waitFor('p deleted by a real edit', () => !names(s).includes('a/p'));
      expect(names(s)).toEqual(['a']);
    });

    it('a directory emptied of manifests keeps them; an explicit empty List removes them', async () => {
      writeFileSync(join(dir, 'a.yaml'), `${ns('a')}---\n${policy('p')}`);
      const s = start([dir]);
      await s.synced;
      rmSync(join(dir, 'a.yaml'));
      await waitFor('incomplete', () => complete() === false);
      expect(names(s)).toEqual(['a', 'a/p']);
      expect(deletes()).toEqual([]);
      writeFileSync(join(dir, 'none.yaml'), 'apiVersion: v1\nkind: List\nitems: []\n');
      await waitFor('complete', () => complete() === true);
      expect(names(s)).toEqual([]);
    });

    it('a file caught half-written (0 bytes, then cut short) keeps its last clean read', async () => {
      const file = join(dir, 'a.yaml');
      writeFileSync(file, `${ns('a')}---\n${policy('p')}`);
      const s = start([dir]);
      await s.synced;
      writeFileSync(file, '');
      await waitFor('incomplete', () => complete() === false);
      expect(names(s)).toEqual(['a', 'a/p']);
      writeFileSync(file, `${ns('a')}---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namesp`);
      await waitFor('the truncated document is reported', () => s.problems().some((p) => p.object === `${file}#1`));
      expect(names(s)).toEqual(['a', 'a/p']);
      expect(deletes()).toEqual([]);
    });

    it('a file that does not read at start-up holds back `synced` (nothing is programmed) until it does', async () => {
      writeFileSync(join(dir, 'a.yaml'), ns('a'));
      writeFileSync(join(dir, 'b.yaml'), `${policy('p')}---\nkind: [`);
      const s = start([dir]);
      let synced = false;
      void s.synced.then(() => (synced = true));
      await waitFor('incomplete', () => complete() === false);
      await new Promise((r) => setTimeout(r, 150));
      expect(synced).toBe(false);
      writeFileSync(join(dir, 'b.yaml'), policy('p'));
      await waitFor('synced', () => synced);
      expect(names(s)).toEqual(['a', 'a/p']);
    });

    it('logs once per change of state, then at most once per interval', async () => {
      const logs: string[] = [];
      const logger: Logger = { ...quiet, error: (m) => void logs.push(`error ${m}`), info: (m) => void logs.push(`info ${m}`) };
      let now = 0;
      writeFileSync(join(dir, 'a.yaml'), ns('a'));
      const s = start([dir], { logger, now: () => now, retryMs: 10, logEveryMs: 60_000 });
      await s.synced;
      writeFileSync(join(dir, 'a.yaml'), 'kind: [');
      await waitFor('incomplete', () => complete() === false);
      await new Promise((r) => setTimeout(r, 200)); // ~20 retries, the clock does not move
      expect(logs).toEqual(['error manifests not read completely; keeping the last clean read of what is missing']);
      now = 60_000;
      await waitFor('the minute reminder', () => logs.length === 2);
      await new Promise((r) => setTimeout(r, 100));
      expect(logs[1]).toBe('error manifests still not read completely; keeping the last clean read');
      writeFileSync(join(dir, 'a.yaml'), ns('a'));
      await waitFor('recovered', () => complete() === true);
      expect(logs).toHaveLength(3);
      expect(logs[2]).toBe('info manifests read completely again; following them');
      expect(healths.map((h) => h.complete)).toEqual([true, false, true]);
    });
  });
});
