// ClusterSource backed by manifest files (`--resources`): loads them, then re-reads after changes.
//
// We watch directories, not files: editors save by writing a new file and renaming it over the old
// one, and a ConfigMap volume updates by swapping its `..data` symlink; both replace the inode a
// file watch would be holding. Each given directory is watched recursively; a given file through
// its parent directory. Bursts of events are debounced into one reload, and a reload that changes
// nothing emits nothing.

import { existsSync, statSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { ClusterSnapshot, Problem } from '../model/index.js';
import { loadManifests } from './manifests.js';
import { OBJECT_KINDS } from './convert.js';
import { ChangeEmitter, ObjectStore, type ClusterChange, type ClusterSource, type Logger } from './source.js';

export interface ManifestSourceOptions {
  readonly paths: readonly string[];
  readonly logger: Logger;
  /** Quiet time after the last file event before re-reading. Default 100 ms. */
  readonly debounceMs?: number;
}

export class ManifestSource implements ClusterSource {
  readonly synced: Promise<void>;
  private readonly store = new ObjectStore();
  private readonly changes: ChangeEmitter;
  private loadProblems: readonly Problem[] = [];
  private readonly watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly paths: readonly string[];
  private readonly logger: Logger;
  private readonly debounceMs: number;

  constructor(opts: ManifestSourceOptions) {
    this.paths = opts.paths;
    this.logger = opts.logger;
    this.debounceMs = opts.debounceMs ?? 100;
    this.changes = new ChangeEmitter(opts.logger);
    // Watch before the first read, so a change made during it is not missed.
    this.watchPaths();
    // The first load runs after the constructor returns, so subscribers added right away see its adds.
    this.synced = Promise.resolve().then(() => {
      if (!this.stopped) this.reload();
    });
  }

  snapshot(): ClusterSnapshot {
    return this.store.snapshot();
  }

  problems(): readonly Problem[] {
    return this.loadProblems;
  }

  onChange(cb: (change: ClusterChange) => void): () => void {
    return this.changes.on(cb);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
  }

  /** Re-reads every path now and applies the difference. */
  reload(): void {
    const loaded = loadManifests(this.paths);
    this.loadProblems = loaded.problems;
    const next = loaded.snapshot;
    const fresh = new ObjectStore();
    for (const n of next.namespaces) fresh.set('Namespace', n.name, n);
    for (const n of next.nodes) fresh.set('Node', n.name, n);
    for (const p of next.pods) fresh.set('Pod', `${p.namespace}/${p.name}`, p);
    for (const p of next.policies) fresh.set('NetworkPolicy', `${p.namespace}/${p.name}`, p);
    const changes: ClusterChange[] = [];
    for (const kind of OBJECT_KINDS) {
      for (const key of this.store.keys(kind)) {
        if (fresh.get(kind, key) === undefined) pushDefined(changes, this.store.delete(kind, key));
      }
      for (const key of fresh.keys(kind)) pushDefined(changes, this.store.set(kind, key, fresh.get(kind, key)!));
    }
    this.logger.debug('manifests loaded', { files: loaded.files.length, problems: loaded.problems.length, changes: changes.length });
    for (const p of loaded.problems) this.logger.warn('manifest problem', { ...p });
    for (const c of changes) this.changes.emit(c);
  }

  private watchPaths(): void {
    const targets = new Map<string, boolean>(); // path → recursive
    for (const path of this.paths) {
      const isDir = existsSync(path) && statSync(path).isDirectory();
      // A file (or a path that does not exist yet) is watched through its directory.
      if (isDir) targets.set(path, true);
      else if (!targets.has(dirname(path))) targets.set(dirname(path), false);
    }
    for (const [path, recursive] of targets) {
      try {
        const w = watch(path, { recursive }, () => this.scheduleReload());
        w.on('error', (err) => this.logger.warn('watching manifests failed', { path, error: String(err) }));
        this.watchers.push(w);
      } catch (err) {
        this.logger.warn('cannot watch manifests; changes will not be picked up', { path, error: String(err) });
      }
    }
  }

  private scheduleReload(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      try {
        this.reload();
      } catch (err) {
        // Keep the last good state: losing policies because a read failed would open traffic.
        this.logger.error('reloading manifests failed; keeping the previous state', { error: String(err) });
      }
    }, this.debounceMs);
  }
}

function pushDefined<T>(out: T[], v: T | undefined): void {
  if (v !== undefined) out.push(v);
}
