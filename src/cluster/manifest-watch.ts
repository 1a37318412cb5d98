// How the manifest source notices changes: one non-recursive watch per directory, and a fingerprint of
// every manifest file for the periodic check that catches what the watches miss.
//
// Not `fs.watch(dir, { recursive: true })`: on Linux, Node 20 emulates it with inotify watches it adds
// per file and directory, and after the first rename over a watched file it stops reporting that file
// for good (in-place writes included). A plain watch on a directory is one inotify watch on that
// directory: it reports every entry renamed into it, written or deleted, however often, on any Node.

import { readdirSync, statSync, watch } from 'node:fs';
import { dirname, join } from 'node:path';
import { manifestFiles } from './manifests.js';

export interface DirWatcher {
  close(): void;
}

/** Opens a watch on one directory (not recursive); `onEvent` for any change of its entries. */
export type OpenWatch = (dir: string, onEvent: () => void, onError: (err: unknown) => void) => DirWatcher;

export const openFsWatch: OpenWatch = (dir, onEvent, onError) => {
  const w = watch(dir, () => onEvent());
  w.on('error', onError);
  return w;
};

/** The directories whose entries decide what `paths` load, each with its inode (a directory replaced under its name needs a new watch). */
function watchedDirectories(paths: readonly string[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const add = (dir: string) => {
    const ino = inodeOf(dir);
    if (ino !== undefined || !out.has(dir)) out.set(dir, ino ?? -1n);
  };
  for (const path of paths) {
    const ino = inodeOf(path);
    if (ino !== undefined && isDirectory(path)) walk(path, add);
    // A file (or a path that does not exist yet) is watched through its directory.
    else add(dirname(path));
  }
  return out;
}

/** Directories below `dir` the loader descends into (not hidden: as manifestFiles skips them). */
function walk(dir: string, add: (dir: string) => void): void {
  add(dir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const child = join(dir, name);
    if (isDirectory(child)) walk(child, add);
  }
}

/**
 * One watch per directory, re-armed by `refresh`: directories that appeared get a watch, vanished or
 * replaced ones lose theirs, unchanged ones keep theirs (so no event is lost while re-arming).
 */
export class DirectoryWatches {
  private readonly open = new Map<string, { ino: bigint; watcher: DirWatcher | undefined }>();

  /**
   * `onError`: a watch failed while open (it is re-opened by the next refresh). `onOpenFailed`: a directory
   * could not be watched (gone, or out of inotify watches); tried again at each refresh.
   */
  constructor(
    private readonly openWatch: OpenWatch,
    private readonly onEvent: () => void,
    private readonly onError: (dir: string, err: unknown) => void,
    private readonly onOpenFailed: (dir: string, err: unknown) => void,
  ) {}

  /** Returns true when a directory got a new watch: a file written into it before that may need a re-read. */
  refresh(paths: readonly string[]): boolean {
    const wanted = watchedDirectories(paths);
    for (const [dir, entry] of this.open) {
      if (wanted.get(dir) === entry.ino && entry.watcher !== undefined) continue;
      entry.watcher?.close();
      this.open.delete(dir);
    }
    let opened = false;
    for (const [dir, ino] of wanted) {
      if (this.open.has(dir)) continue;
      const watcher = this.tryOpen(dir);
      this.open.set(dir, { ino, watcher });
      if (watcher) opened = true;
    }
    return opened;
  }

  close(): void {
    for (const entry of this.open.values()) entry.watcher?.close();
    this.open.clear();
  }

  private tryOpen(dir: string): DirWatcher | undefined {
    try {
      return this.openWatch(dir, this.onEvent, (err) => {
        // A failed watch is closed and re-opened by the next refresh.
        const entry = this.open.get(dir);
        entry?.watcher?.close();
        if (entry) entry.watcher = undefined;
        this.onError(dir, err);
      });
    } catch (err) {
      // Not an event: re-reading now would only fail to open it again. The periodic check covers it meanwhile.
      this.onOpenFailed(dir, err);
      return undefined;
    }
  }
}

/**
 * What the manifests look like on disk without reading them: each file's identity, size and times.
 * Two equal fingerprints mean no file was added, removed, replaced or written in between — except for a
 * write that keeps the size within the same clock tick as the one before, which `racy` flags (as git's
 * "racily clean" index entries): a file modified within `racyMs` of `now` must be read again later.
 */
export function manifestFingerprint(paths: readonly string[], now: number, racyMs = 2_000): { print: string; racy: boolean } {
  const parts: string[] = [];
  let racy = false;
  for (const path of paths) {
    const errors: string[] = [];
    const files = manifestFiles(path, { problem: (p) => void errors.push(p.message) });
    parts.push(`${path}\n${errors.join('\n')}`);
    for (const file of files) {
      try {
        const s = statSync(file, { bigint: true });
        parts.push(`${file}\0${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`);
        if (Number(s.mtimeNs / 1_000_000n) > now - racyMs || Number(s.ctimeNs / 1_000_000n) > now - racyMs) racy = true;
      } catch (err) {
        parts.push(`${file}\0${(err as { code?: string }).code ?? 'unreadable'}`);
      }
    }
  }
  return { print: parts.join('\n'), racy };
}

function inodeOf(path: string): bigint | undefined {
  try {
    return statSync(path, { bigint: true }).ino;
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
