// Manifest files past the size limits are refused before they are read: parsing costs many times a file's
// size in memory (a 200 MB file took `compile` to a 4.5 GB heap and an abort). The error names the file and
// the limit; a one-shot command exits 2 and prints nothing; nothing else of the read is lost.

import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { ManifestSource, type SourceHealth } from '../../../src/cluster/manifest-source.js';
import { loadManifests } from '../../../src/cluster/manifests.js';
import { DEFAULT_MANIFEST_LIMITS } from '../../../src/model/index.js';

const ns = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}}\n`;

async function run(argv: readonly string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => void out.push(t), err: (t) => void err.push(t) });
  return { code, out: out.join(''), err: err.join('') };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-size-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('manifest size limits', () => {
  it('a file above the per-file limit is an error naming it and the limit; the other files still load', () => {
    writeFileSync(join(dir, 'a.yaml'), ns('a'));
    writeFileSync(join(dir, 'b.yaml'), `${ns('b')}---\n${ns('bb')}`);
    const loaded = loadManifests([dir], { maxFileBytes: 100, maxTotalBytes: 10_000 });
    expect(loaded.snapshot.namespaces.map((n) => n.name)).toEqual(['a']);
    expect(loaded.problems).toEqual([
      {
        object: join(dir, 'b.yaml'),
        field: '(file)',
        message: 'is 107 bytes, above the limit of 100 bytes for one manifest file (manifestMaxFileBytes); not read',
        severity: 'error',
      },
    ]);
  });

  it('files that together pass the total limit: the ones past it are errors, those before it load', () => {
    mkdirSync(join(dir, 'sub'));
    for (const name of ['a', 'b', 'c']) writeFileSync(join(dir, 'sub', `${name}.yaml`), ns(name));
    // Each file is 51 bytes: two fit in 120, the third would make 153.
    const loaded = loadManifests([dir], { maxFileBytes: 100, maxTotalBytes: 120 });
    expect(loaded.snapshot.namespaces.map((n) => n.name)).toEqual(['a', 'b']);
    expect(loaded.problems.map((p) => [p.object, p.message])).toEqual([
      [
        join(dir, 'sub', 'c.yaml'),
        'would bring the manifests of this read to 153 bytes, above the limit of 120 bytes for all of them together (manifestMaxTotalBytes); not read',
      ],
    ]);
  });

  it('the limits are maxima: a file of exactly the per-file limit, and files making exactly the total, are read', () => {
    for (const name of ['a', 'b']) writeFileSync(join(dir, `${name}.yaml`), ns(name));
    // Each file is 51 bytes.
    const exact = loadManifests([dir], { maxFileBytes: 51, maxTotalBytes: 102 });
    expect(exact.problems).toEqual([]);
    expect(exact.snapshot.namespaces.map((n) => n.name)).toEqual(['a', 'b']);
    // One byte less of either limit refuses a file.
    expect(loadManifests([dir], { maxFileBytes: 50, maxTotalBytes: 102 }).problems.map((p) => p.object)).toEqual([
      join(dir, 'a.yaml'),
      join(dir, 'b.yaml'),
    ]);
    expect(loadManifests([dir], { maxFileBytes: 51, maxTotalBytes: 101 }).problems.map((p) => p.object)).toEqual([join(dir, 'b.yaml')]);
  });

  it('compile with a file above --manifest-max-file-bytes: exit 2, the file and limit named, nothing printed', async () => {
    writeFileSync(join(dir, 'big.yaml'), ns('a').padEnd(2000, '#'));
    const r = await run(['compile', '--node-name', 'node-1', '--resources', dir, '--manifest-max-file-bytes', '1000']);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`error: ${join(dir, 'big.yaml')}: (file): is 2000 bytes, above the limit of 1000 bytes for one manifest file`);
    expect(r.out).toBe('');
  });

  it('the default limit refuses a file one byte past it without reading it (a sparse file: no disk used)', async () => {
    const file = join(dir, 'huge.yaml');
    closeSync(openSync(file, 'w'));
    truncateSync(file, DEFAULT_MANIFEST_LIMITS.maxFileBytes + 1);
    const r = await run(['compile', '--node-name', 'node-1', '--resources', dir]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      `error: ${file}: (file): is 32.0 MiB (${DEFAULT_MANIFEST_LIMITS.maxFileBytes + 1} bytes), above the limit of 32.0 MiB`,
    );
    expect(r.out).toBe('');
  });

  it('daemon source: a file that grows past the limit keeps its last clean read and reports the source incomplete', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, ns('a'));
    const healths: SourceHealth[] = [];
    const errors: string[] = [];
    const logger = {
      info: () => {},
      warn: () => {},
      debug: () => {},
      error: (_m: string, f?: Record<string, unknown>) => void errors.push(JSON.stringify(f)),
    };
    const source = new ManifestSource({
      paths: [dir],
      logger,
      debounceMs: 20,
      retryMs: 50,
      limits: { maxFileBytes: 100, maxTotalBytes: 1000 },
      onHealth: (h) => healths.push(h),
    });
    try {
      await source.synced;
      writeFileSync(file, ns('b').padEnd(500, '#'));
      const deadline = Date.now() + 4_000;
      while (healths.at(-1)?.complete !== false && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(healths.at(-1)).toMatchObject({ complete: false });
      // What the kernel enforces is not shrunk nor replaced by the refused file's content.
      expect(source.snapshot().namespaces.map((n) => n.name)).toEqual(['a']);
      expect(errors.join('\n')).toContain('is 500 bytes, above the limit of 100 bytes for one manifest file');
    } finally {
      await source.stop();
    }
  });
});
