// The manifest source follows edits however they are saved: any number of renames over a file (editors,
// `sed -i`, write-then-rename), then in-place writes, in the given folder and in folders below it. What the
// watches miss, the periodic check finds: here with a watch that drops every event.

import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManifestSource, type ManifestSourceOptions } from '../../../src/cluster/manifest-source.js';
import { openFsWatch, type OpenWatch } from '../../../src/cluster/manifest-watch.js';
import type { Logger } from '../../../src/cluster/source.js';

const warnings: string[] = [];
const logger: Logger = { info: () => {}, warn: (m) => void warnings.push(m), error: () => {}, debug: () => {} };

async function waitFor(what: string, cond: () => boolean, timeoutMs = 4_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A namespace whose label `v` says which edit wrote it. */
const ns = (version: number) => `apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {v: "${version}"}}\n`;

let dir: string;
let source: ManifestSource | undefined;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'nft-mwatch-'));
  warnings.length = 0;
});
afterEach(async () => {
  await source?.stop();
  source = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function start(paths: string[], extra: Partial<ManifestSourceOptions> = {}): ManifestSource {
  source = new ManifestSource({ paths, logger, debounceMs: 20, retryMs: 50, ...extra });
  return source;
}

const version = (s: ManifestSource): string | undefined => s.snapshot().namespaces.find((n) => n.name === 'a')?.labels['v'];

/** Writes a temporary file beside `file` and renames it over `file`, as editors and `sed -i` do. */
function replaceByRename(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

// No periodic check within these tests' time: what is followed here, the watches reported.
const WATCH_ONLY = { checkIntervalMs: 600_000 };

describe('manifest watches', () => {
  it.each([
    { name: 'a file in the watched folder', sub: '' },
    { name: 'a file in a folder below it', sub: 'deeper/still' },
  ])('five renames over $name, then an in-place write: every edit is followed', async ({ sub }) => {
    mkdirSync(join(dir, sub), { recursive: true });
    const file = join(dir, sub, 'a.yaml');
    writeFileSync(file, ns(0));
    const s = start([dir], WATCH_ONLY);
    await s.synced;
    expect(version(s)).toBe('0');
    for (let i = 1; i <= 5; i++) {
      replaceByRename(file, ns(i));
      await waitFor(`rename ${i} followed`, () => version(s) === String(i));
    }
    writeFileSync(file, ns(6));
    await waitFor('in-place write followed', () => version(s) === '6');
  });

  it('a file given by path, replaced by rename five times, then written in place: every edit is followed', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, ns(0));
    const s = start([file], WATCH_ONLY);
    await s.synced;
    for (let i = 1; i <= 5; i++) {
      replaceByRename(file, ns(i));
      await waitFor(`rename ${i} followed`, () => version(s) === String(i));
    }
    writeFileSync(file, ns(6));
    await waitFor('in-place write followed', () => version(s) === '6');
  });

  it('a folder created after start is watched too: renames inside it are followed', async () => {
    writeFileSync(join(dir, 'a.yaml'), ns(0));
    const s = start([dir], WATCH_ONLY);
    await s.synced;
    mkdirSync(join(dir, 'new'));
    const file = join(dir, 'new', 'b.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {v: "1"}}\n');
    const b = () => s.snapshot().namespaces.find((n) => n.name === 'b')?.labels['v'];
    await waitFor('new folder read', () => b() === '1');
    for (let i = 2; i <= 4; i++) {
      replaceByRename(file, `apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {v: "${i}"}}\n`);
      await waitFor(`rename ${i} in the new folder followed`, () => b() === String(i));
    }
  });

  it('a flood of renames of an unrelated file does not hold back an edit: it is read while the flood goes on', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, ns(0));
    writeFileSync(join(dir, 'noise.yaml'), '# nothing\n');
    // Each event would push a plain trailing debounce out again: one every millisecond, a 50 ms quiet time never comes.
    const s = start([dir], { ...WATCH_ONLY, debounceMs: 50, maxDelayMs: 200 });
    await s.synced;
    let renames = 0;
    const flood = setInterval(() => {
      for (let i = 0; i < 5; i++) replaceByRename(join(dir, 'noise.yaml'), `# ${renames++}\n`);
    }, 1);
    try {
      replaceByRename(file, ns(1));
      await waitFor('the edit read during the flood', () => version(s) === '1');
    } finally {
      clearInterval(flood);
    }
    // The flood was still running when the edit was read (it ran until the check above returned).
    expect(renames).toBeGreaterThan(0);
  });

  it('a directory that cannot be watched is tried again at the next read, not in a loop of reads', async () => {
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'a.yaml'), ns(0));
    let attempts = 0;
    const failsBelow: OpenWatch = (watched, onEvent, onError) => {
      if (watched === join(dir, 'sub')) {
        attempts++;
        throw new Error('ENOSPC: System limit for number of file watchers reached');
      }
      return openFsWatch(watched, onEvent, onError);
    };
    const s = start([dir], { ...WATCH_ONLY, openWatch: failsBelow });
    await s.synced;
    await new Promise((r) => setTimeout(r, 500));
    // Once at start, once after the first read; a read per failure would be ~25 by now (20 ms debounce).
    expect(attempts).toBeLessThanOrEqual(3);
  });

  it('a folder that could not be watched (out of inotify watches) is watched once it can be: its edits are followed', async () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    writeFileSync(join(sub, 'a.yaml'), ns(0));
    let exhausted = true;
    const limited: OpenWatch = (watched, onEvent, onError) => {
      if (exhausted && watched === sub) throw new Error('ENOSPC: System limit for number of file watchers reached');
      return openFsWatch(watched, onEvent, onError);
    };
    const s = start([dir], { ...WATCH_ONLY, openWatch: limited });
    await s.synced;
    // Watches are freed elsewhere; the next read (an edit another watch reports) gets the folder its watch.
    exhausted = false;
    writeFileSync(join(dir, 'other.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n');
    await waitFor('the edit beside it read', () => s.snapshot().namespaces.some((n) => n.name === 'other'));
    for (let i = 1; i <= 2; i++) {
      replaceByRename(join(sub, 'a.yaml'), ns(i));
      await waitFor(`edit ${i} in the once unwatchable folder followed`, () => version(s) === String(i));
    }
  });

  it('a folder whose watch failed while open is watched again: its later edits are followed', async () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    const file = join(sub, 'a.yaml');
    writeFileSync(file, ns(0));
    let failSub: ((err: unknown) => void) | undefined;
    const failable: OpenWatch = (watched, onEvent, onError) => {
      if (watched === sub) failSub = onError;
      return openFsWatch(watched, onEvent, onError);
    };
    const s = start([dir], { ...WATCH_ONLY, openWatch: failable });
    await s.synced;
    // What fs.watch reports when its inotify watch breaks (the folder's file system went away, an EIO…).
    failSub!(new Error('EIO: watch failed'));
    // The failure itself is worth a read: an edit made around it is found either way.
    writeFileSync(file, ns(1));
    await waitFor('the edit around the failure read', () => version(s) === '1');
    for (let i = 2; i <= 3; i++) {
      replaceByRename(file, ns(i));
      await waitFor(`edit ${i} after the failure followed`, () => version(s) === String(i));
    }
  });

  it('a file written into a new folder before its watch opened is read at once, not at the periodic check', async () => {
    writeFileSync(join(dir, 'a.yaml'), ns(0));
    const fresh = join(dir, 'new');
    // The write lands after the read that found the folder (empty) and before its watch opens: the one
    // window no watch can report.
    let written = false;
    const writesFirst: OpenWatch = (watched, onEvent, onError) => {
      if (watched === fresh && !written) {
        written = true;
        writeFileSync(join(fresh, 'b.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n');
      }
      return openFsWatch(watched, onEvent, onError);
    };
    const s = start([dir], { ...WATCH_ONLY, openWatch: writesFirst });
    await s.synced;
    mkdirSync(fresh);
    await waitFor('the file written before the watch opened read', () => s.snapshot().namespaces.some((n) => n.name === 'b'));
    expect(written).toBe(true);
  });
});

describe('the periodic content check', () => {
  /** Watches that open fine and never report anything: every event is missed. */
  const deaf: OpenWatch = () => ({ close: () => {} });

  it('finds a rename-replace and an in-place write no watch reported, within the interval, and says so', async () => {
    const file = join(dir, 'a.yaml');
    writeFileSync(file, ns(0));
    const s = start([dir], { openWatch: deaf, checkIntervalMs: 100 });
    await s.synced;
    replaceByRename(file, ns(1));
    await waitFor('rename found by the check', () => version(s) === '1');
    // Same size as the text before it, written at once after a read: its times are all that differ, if
    // the clock ticked; when it did not, the read counts as racy and the next check reads again.
    writeFileSync(file, ns(2));
    await waitFor('same-size in-place write found by the check', () => version(s) === '2');
    expect(warnings).toContain('manifests changed without a file event (found by the periodic check); re-reading');
  });

  it('finds a new file in a new folder no watch reported', async () => {
    writeFileSync(join(dir, 'a.yaml'), ns(0));
    const s = start([dir], { openWatch: deaf, checkIntervalMs: 100 });
    await s.synced;
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'b.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n');
    await waitFor('new file found by the check', () => s.snapshot().namespaces.some((n) => n.name === 'b'));
  });
});
