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
import { loadManifests, manifestFiles } from './manifests.js';
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
  /** Per file, the objects of its last read without unreadable documents. */
  private lastGood = new Map<string, ClusterSnapshot>();

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
    const files: string[] = [];
    const problems: Problem[] = [];
    for (const path of this.paths) files.push(...manifestFiles(path, { problem: (p: Problem) => void problems.push(p) }));
    const fresh = new ObjectStore();
    const good = new Map<string, ClusterSnapshot>();
    for (const file of files) {
      const loaded = loadManifests([file]);
      problems.push(...loaded.problems);
      const broken = loaded.problems.some((p) => p.severity === 'error' && p.object.startsWith(`${file}#`));
      const previous = this.lastGood.get(file);
      // A document that does not parse any more (an editor mid-save, a typo) must not make its policies
      // vanish: that would open traffic. Until the file reads cleanly, what it held before stays.
      if (broken && previous) addAll(fresh, previous);
      addAll(fresh, loaded.snapshot);
      good.set(file, broken && previous ? previous : loaded.snapshot);
    }
    this.lastGood = good;
    this.loadProblems = problems;
    const loaded = { files, problems };
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

function addAll(store: ObjectStore, snapshot: ClusterSnapshot): void {
  for (const n of snapshot.namespaces) store.set('Namespace', n.name, n);
  for (const n of snapshot.nodes) store.set('Node', n.name, n);
  for (const p of snapshot.pods) store.set('Pod', `${p.namespace}/${p.name}`, p);
  for (const p of snapshot.policies) store.set('NetworkPolicy', `${p.namespace}/${p.name}`, p);
  for (const c of snapshot.clusterPolicies ?? []) store.set('ClusterNetworkPolicy', c.name, c);
}

function pushDefined<T>(out: T[], v: T | undefined): void {
  if (v !== undefined) out.push(v);
}
