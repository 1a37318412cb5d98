// ClusterSource backed by manifest files (`--resources`): loads them, then re-reads after changes.
//
// We watch directories, not files: editors save by writing a new file and renaming it over the old
// one, and a ConfigMap volume updates by swapping its `..data` symlink; both replace the inode a
// file watch would be holding. Every directory the loader reads gets its own plain watch (why not a
// recursive one: manifest-watch.ts); a given file is watched through its parent directory. Bursts of
// events are debounced into one reload, and a reload that changes nothing emits nothing. The debounce is
// capped: a reload runs at most `maxDelayMs` after the first event it answers, however many follow (a file
// renamed 200 times a second elsewhere in the folder would otherwise postpone a new deny for as long as the
// flood lasts), as the sync loop folds a burst of API events without waiting for it to end. Watches can
// still miss a change (an inotify queue overflow, a filesystem that sends no events), so every
// `checkIntervalMs` the files' identity, size and times are compared with those of the last read, and
// any difference re-reads them.
//
// A read that is not complete never shrinks the cluster (losing a policy would open traffic): a file
// that does not read cleanly keeps the objects of its last clean read, and a given path that is gone,
// unreadable or holds no manifest any more keeps every file it held. Meanwhile the source is
// *incomplete* (reported through `onHealth`, logged on each change and then once a minute) and
// re-reads every `retryMs`, since a vanished directory cannot deliver events. `synced` waits for the
// first complete read: before it there is nothing good to keep, and the kernel keeps what it has.

import { formatProblem, type ClusterSnapshot, type Problem } from '../model/index.js';
import { DirectoryWatches, manifestFingerprint, openFsWatch, type OpenWatch } from './manifest-watch.js';
import { Collector, incompleteRead, loadFile, pathFiles, readBudget, type ManifestLimits } from './manifests.js';
import { OBJECT_KINDS } from './object-kind.js';
import { ChangeEmitter, ObjectStore, type ClusterChange, type ClusterSource, type Logger } from './source.js';

/** Whether the last read saw every manifest; when not, which files/paths are served from an older read. */
export type SourceHealth =
  { readonly complete: true } | { readonly complete: false; readonly reason: string; readonly errors: readonly Problem[] };

export interface ManifestSourceOptions {
  readonly paths: readonly string[];
  readonly logger: Logger;
  /** Quiet time after the last file event before re-reading. Default 100 ms. */
  readonly debounceMs?: number;
  /** A reload runs at most this long after the first file event it answers, even while events keep coming. Default 1 s. */
  readonly maxDelayMs?: number;
  /** While a read is incomplete, re-read this often even without file events. Default 5 s. */
  readonly retryMs?: number;
  /** Compare the files with the last read this often, catching changes no watch reported. Default 5 s. */
  readonly checkIntervalMs?: number;
  /** Files (and the total of the paths) above these sizes are not read: see ManifestLimits. */
  readonly limits?: ManifestLimits;
  /** Opens one directory's watch; tests pass one that drops events. */
  readonly openWatch?: OpenWatch;
  /** Repeat the "still incomplete" log at most this often. Default 60 s. */
  readonly logEveryMs?: number;
  /** Told when completeness changes (and at the first read). */
  readonly onHealth?: (health: SourceHealth) => void;
  readonly now?: () => number;
}

export class ManifestSource implements ClusterSource {
  readonly synced: Promise<void>;
  private markSynced!: () => void;
  private readonly store = new ObjectStore();
  private readonly changes: ChangeEmitter;
  private loadProblems: readonly Problem[] = [];
  private readonly watches: DirectoryWatches;
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly checkTimer: NodeJS.Timeout;
  /** The files as they were when last read, and whether one was too recently written to trust its times. */
  private lastRead: { print: string; racy: boolean } | undefined;
  private stopped = false;
  private readonly opts: ManifestSourceOptions;
  private readonly logger: Logger;
  private readonly debounceMs: number;
  private readonly maxDelayMs: number;
  /** When the first file event not yet answered by a reload arrived (performance.now), if one is pending. */
  private pendingSince: number | undefined;
  /** Per file, the objects of its last clean read. */
  private lastGood = new Map<string, ClusterSnapshot>();
  /** Per given path, the files it held at its last read (kept while the path cannot be listed). */
  private filesOf = new Map<string, readonly string[]>();
  private healthState: SourceHealth | undefined;
  private lastLogAt = -Infinity;

  constructor(opts: ManifestSourceOptions) {
    this.opts = opts;
    this.logger = opts.logger;
    this.debounceMs = opts.debounceMs ?? 100;
    this.maxDelayMs = Math.max(this.debounceMs, opts.maxDelayMs ?? 1_000);
    this.changes = new ChangeEmitter(opts.logger);
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
    this.watches = new DirectoryWatches(
      opts.openWatch ?? openFsWatch,
      () => this.scheduleReload(),
      (dir, err) => {
        this.logger.warn('watching manifests failed; re-opening the watch', { path: dir, error: String(err) });
        this.scheduleReload();
      },
      (dir, err) =>
        this.logger.debug('cannot watch a manifest directory; the periodic check follows it', { path: dir, error: String(err) }),
    );
    // Watch before the first read, so a change made during it is not missed.
    this.watches.refresh(opts.paths);
    this.checkTimer = setInterval(() => this.checkFiles(), opts.checkIntervalMs ?? 5_000);
    this.checkTimer.unref();
    // The first load runs after the constructor returns, so subscribers added right away see its adds.
    void Promise.resolve().then(() => this.safeReload());
  }

  snapshot(): ClusterSnapshot {
    return this.store.snapshot();
  }

  problems(): readonly Problem[] {
    return this.loadProblems;
  }

  health(): SourceHealth | undefined {
    return this.healthState;
  }

  onChange(cb: (change: ClusterChange) => void): () => void {
    return this.changes.on(cb);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
    clearInterval(this.checkTimer);
    this.watches.close();
  }

  /** Re-reads every path now and applies the difference. */
  reload(): void {
    // Taken before reading: a write during the read shows up as a difference at the next check.
    this.lastRead = manifestFingerprint(this.opts.paths, (this.opts.now ?? Date.now)());
    const problems: Problem[] = [];
    const fresh = new ObjectStore();
    const good = new Map<string, ClusterSnapshot>();
    const filesOf = new Map<string, readonly string[]>();
    const kept: string[] = [];
    const budget = readBudget(this.opts.limits);
    const keep = (file: string): void => {
      const previous = this.lastGood.get(file);
      if (previous) {
        addAll(fresh, previous);
        good.set(file, previous);
      }
    };
    for (const path of this.opts.paths) {
      const listing: Problem[] = [];
      const files = pathFiles(path, { problem: (p) => void listing.push(p) });
      problems.push(...listing);
      const known = new Set(files);
      if (incompleteRead(listing).length > 0) {
        // Part of the path could not be listed (or none of it): a file missing from the listing may
        // still exist, so what it held stays. A file deleted from a readable directory is a real delete.
        for (const file of this.filesOf.get(path) ?? []) {
          if (!known.has(file)) {
            known.add(file);
            keep(file);
          }
        }
        kept.push(path);
      }
      filesOf.set(path, [...known]);
      for (const file of files) {
        const collector = new Collector();
        loadFile(file, collector, budget);
        problems.push(...collector.problems);
        if (incompleteRead(collector.problems).length > 0) {
          keep(file);
          kept.push(file);
        } else {
          addAll(fresh, collector.snapshot());
          good.set(file, collector.snapshot());
        }
      }
    }
    this.lastGood = good;
    this.filesOf = filesOf;
    this.loadProblems = problems;
    const changes: ClusterChange[] = [];
    for (const kind of OBJECT_KINDS) {
      for (const key of this.store.keys(kind)) {
        if (fresh.get(kind, key) === undefined) pushDefined(changes, this.store.delete(kind, key));
      }
      for (const key of fresh.keys(kind)) pushDefined(changes, this.store.set(kind, key, fresh.get(kind, key)!));
    }
    this.logger.debug('manifests loaded', { paths: filesOf.size, problems: problems.length, changes: changes.length });
    this.report(kept, problems);
    for (const c of changes) this.changes.emit(c);
    if (kept.length === 0) this.markSynced();
    // A directory that just got its watch may have received a file before the watch existed.
    if (this.watches.refresh(this.opts.paths)) this.scheduleReload();
  }

  /** The periodic check: re-reads when the files differ from the last read (a change no watch reported). */
  private checkFiles(): void {
    if (this.stopped || this.timer !== undefined || this.lastRead === undefined) return;
    const now = manifestFingerprint(this.opts.paths, (this.opts.now ?? Date.now)());
    if (now.print === this.lastRead.print && !this.lastRead.racy) return;
    if (now.print !== this.lastRead.print)
      this.logger.warn('manifests changed without a file event (found by the periodic check); re-reading');
    this.safeReload();
  }

  /** Completeness: told to `onHealth` on change; logged on change and then at most every `logEveryMs`. */
  private report(kept: readonly string[], problems: readonly Problem[]): void {
    const errors = incompleteRead(problems);
    const health: SourceHealth =
      kept.length === 0
        ? { complete: true }
        : { complete: false, reason: `cannot read ${kept.length} manifest path(s)/file(s) completely: ${kept.join(', ')}`, errors };
    const key = (h: SourceHealth | undefined) =>
      h === undefined ? '' : h.complete ? 'ok' : `${h.reason}\n${h.errors.map(formatProblem).join('\n')}`;
    const changed = key(health) !== key(this.healthState);
    const now = (this.opts.now ?? Date.now)();
    const first = this.healthState === undefined;
    this.healthState = health;
    if (changed) this.opts.onHealth?.(health);
    if (health.complete) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
      if (changed && !first) this.logger.info('manifests read completely again; following them');
      if (changed) for (const p of problems) this.logger.warn('manifest problem', { ...p });
      return;
    }
    this.scheduleRetry();
    if (!changed && now - this.lastLogAt < (this.opts.logEveryMs ?? 60_000)) return;
    this.lastLogAt = now;
    this.logger.error(
      changed
        ? 'manifests not read completely; keeping the last clean read of what is missing'
        : 'manifests still not read completely; keeping the last clean read',
      {
        kept,
        problems: errors.map(formatProblem),
      },
    );
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.safeReload();
    }, this.opts.retryMs ?? 5_000);
    this.retryTimer.unref?.();
  }

  private safeReload(): void {
    if (this.stopped) return;
    try {
      this.reload();
    } catch (err) {
      // Keep the last good state: losing policies because a read failed would open traffic.
      this.logger.error('reloading manifests failed; keeping the previous state', { error: String(err) });
      this.scheduleRetry();
    }
  }

  private scheduleReload(): void {
    if (this.stopped) return;
    const now = performance.now();
    this.pendingSince ??= now;
    clearTimeout(this.timer);
    // Trailing debounce, but never past the cap: a steady stream of events still gets a reload per cap.
    const delayMs = Math.max(0, Math.min(this.debounceMs, this.pendingSince + this.maxDelayMs - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pendingSince = undefined;
      this.safeReload();
    }, delayMs);
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
