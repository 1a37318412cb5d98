// The sync loop: source events → (batched) compile → plan → apply; the drift timer re-reads the kernel
// and repairs what someone else changed; failures keep the old rules and retry with backoff.

import { Compiler } from '../compile/index.js';
import type { ClusterSnapshot, NetworkPolicy, NodeSettings, Problem } from '../model/index.js';
import { formatPlanDiff, formatSummary, summarize } from '../plan/diff.js';
import { BoundedFrequencyRunner, type Clock, type RunReason } from './runner.js';
import { SyncReports, type SyncSubscriber } from './sync-reports.js';
import { SetsNotProgrammedError } from './set-writes.js';
import type { SyncLogger, Syncer } from './syncer.js';

export interface SnapshotSource {
  snapshot(): ClusterSnapshot;
  /** Load problems of the source itself (malformed manifests and the like). */
  problems(): readonly Problem[];
}

/** A subscriber given at construction (tests); the daemon's parts subscribe through `reports`. */
export type ReconcileObserver = SyncSubscriber;

export interface ReconcilerOptions {
  readonly source: SnapshotSource;
  /** Node settings may depend on the snapshot (the Node object's pod CIDR). */
  readonly settings: (snapshot: ClusterSnapshot) => NodeSettings;
  /** With `readAhead`, the drift check reads the kernel while changes are still programmed (runner.ts preparePeriodic). */
  readonly syncer: Pick<Syncer, 'sync' | 'planOnly' | 'markOutOfSync'> & Partial<Pick<Syncer, 'readAhead' | 'destroyLeftovers'>>;
  readonly logger: SyncLogger;
  readonly clock: Clock;
  readonly batchWindowMs: number;
  readonly resyncIntervalMs: number;
  readonly dryRun?: boolean;
  readonly observer?: ReconcileObserver;
  /**
   * Re-reads the kernel settings enforcement depends on (bridge-nf-call-iptables). Called on every sync that
   * re-reads the kernel (start, drift timer, retries): someone may switch them off at any time. Its failures
   * are its own to report; they never stop the sync.
   */
  readonly checkPreconditions?: () => Promise<void>;
}

/** Stale sets still in use are retried after 100 ms, 200 ms, … up to this (or the drift interval, if shorter). */
const CLEANUP_BASE_MS = 100;
const CLEANUP_MAX_MS = 5_000;

export class Reconciler {
  /** Each sync's result, failure, problems and budget, for whoever subscribes. */
  readonly reports = new SyncReports();
  private readonly runner: BoundedFrequencyRunner;
  /** Long-lived, so each sync recompiles only what the change touched (same answer as compile()). */
  private readonly compiler = new Compiler();
  private syncs = 0;
  private lastProblemKey = '';
  /** The snapshot whose policies were prepared last. */
  private prepared: ClusterSnapshot | undefined;
  /** Cleanup retries since a sync left stale sets behind. */
  private cleanups = 0;

  constructor(private readonly opts: ReconcilerOptions) {
    if (opts.observer) this.reports.subscribe(opts.observer);
    this.runner = new BoundedFrequencyRunner((reason) => this.syncOnce(reason), {
      batchWindowMs: opts.batchWindowMs,
      maxIntervalMs: opts.resyncIntervalMs,
      retryBaseMs: Math.max(100, opts.batchWindowMs),
      retryMaxMs: Math.min(opts.resyncIntervalMs, 30_000),
      clock: opts.clock,
      ...(opts.syncer.readAhead ? { preparePeriodic: () => opts.syncer.readAhead!() } : {}),
    });
  }

  /** Call once the source has its first full list of everything: nothing is written before. */
  start(): void {
    this.runner.start();
    this.runner.request();
  }

  stop(): void {
    this.runner.stop();
  }

  /** The source changed. */
  changed(): void {
    this.runner.request();
  }

  /** The kernel is known to differ from what we programmed: re-read and repair now, not at the next drift tick. */
  resyncNow(): void {
    this.runner.requestFull();
  }

  /** Number of completed syncs (tests wait on it). */
  get completedSyncs(): number {
    return this.syncs;
  }

  private async syncOnce(reason: RunReason): Promise<void> {
    if (reason === 'cleanup') return this.destroyLeftovers();
    const { clock, logger } = this.opts;
    this.reports.heartbeat();
    if (reason !== 'change' || this.syncs === 0) await this.opts.checkPreconditions?.().catch(() => undefined);
    const started = clock.now();
    let result: ReturnType<Compiler['compile']>;
    // Everything that reads or compiles the cluster state is inside the catch: an exception here used to
    // escape to the runner, which retried silently while the node stayed ready and ignored every change.
    try {
      const snapshot = this.opts.source.snapshot();
      // A policy with 10,000 excepts costs tens of milliseconds to read; thirty arriving at once would hold
      // the event loop (and /healthz) for seconds on a busy node. Read them one per turn of the loop first:
      // those that changed since the last snapshot prepared, when the source can say (not the whole list on
      // every change).
      for (const policy of this.policiesToPrepare(snapshot)) if (this.compiler.prepare(policy)) await yieldToEventLoop();
      result = this.compiler.compile(snapshot, this.opts.settings(snapshot));
      this.reportProblems([...this.opts.source.problems(), ...result.problems]);
      this.reports.budget(result.budget);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      logger.error('compiling the cluster state failed; the previous rules stay in place and the sync will be retried', {
        reason,
        error: error.message,
        stack: error.stack,
      });
      this.reports.failed({ reason, error, stage: 'compile' });
      throw error;
    }
    try {
      if (this.opts.dryRun) {
        const plans = await this.opts.syncer.planOnly(result.desired);
        const diff = formatPlanDiff(plans);
        logger.info(`dry run: ${formatSummary(summarize(plans))}`, diff ? { diff } : {});
        this.syncs++;
        return;
      }
      const applyStart = clock.now();
      const sync = await this.opts.syncer.sync(result.desired, { readKernel: reason !== 'change' });
      const now = clock.now();
      this.syncs++;
      this.cleanups = 0;
      if (sync.undestroyed?.length) this.scheduleCleanup(sync.undestroyed);
      const summary = summarize(sync.plans);
      if (sync.drift) logger.warn('repaired drift: netfence-owned kernel state had been changed by someone else', { changes: summary });
      else if (!summary.inSync) logger.info('programmed', { reason, ...summary });
      this.reports.synced({
        reason,
        readKernel: sync.readKernel,
        seconds: (now - started) / 1000,
        applySeconds: (now - applyStart) / 1000,
        plans: sync.plans,
        drift: sync.drift,
        desired: result.desired,
      });
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      this.opts.syncer.markOutOfSync(`apply failed: ${error.message}`);
      if (error instanceof SetsNotProgrammedError) {
        logger.error('ipsets could not be programmed; everything else was, and the sync will be retried', {
          reason,
          sets: error.sets.map((s) => s.name),
          error: error.message,
        });
      } else logger.error('apply failed; the previous rules stay in place and the sync will be retried', { reason, error: error.message });
      this.reports.failed({ reason, error, stage: 'apply' });
      throw error;
    }
  }

  /** The snapshot's policies that may be new since the last snapshot prepared (all of them when it cannot tell). */
  private policiesToPrepare(snapshot: ClusterSnapshot): Iterable<NetworkPolicy> {
    const delta = this.prepared ? snapshot.changes?.since(this.prepared) : undefined;
    this.prepared = snapshot;
    if (!delta) return snapshot.policies;
    return [...delta.policies.values()].filter((p): p is NetworkPolicy => p !== undefined);
  }

  /**
   * A set the new rules no longer use can still be held by the kernel for a moment (iptables-nft releases a
   * deleted rule's set reference asynchronously) or by someone else's rule: retried soon with a short backoff,
   * not left for the drift check.
   */
  private async destroyLeftovers(): Promise<void> {
    // A throw (the tool itself failing) is the runner's to retry, as a full sync that re-reads the kernel.
    const left = (await this.opts.syncer.destroyLeftovers?.()) ?? [];
    if (left.length > 0) return this.scheduleCleanup(left);
    this.opts.logger.info('destroyed stale ipsets once the kernel released them', { retries: this.cleanups });
    this.cleanups = 0;
  }

  private scheduleCleanup(sets: readonly string[]): void {
    if (!this.opts.syncer.destroyLeftovers) return;
    const delay = Math.min(CLEANUP_BASE_MS * 2 ** this.cleanups, CLEANUP_MAX_MS, this.opts.resyncIntervalMs);
    if (this.cleanups === 0) this.opts.logger.warn('stale ipsets are still in use; retrying their destroy', { sets, retryMs: delay });
    this.cleanups++;
    this.runner.requestCleanup(delay);
  }

  private reportProblems(problems: readonly Problem[]): void {
    this.reports.problems(problems);
    const key = problems.map((p) => `${p.object}|${p.field}|${p.message}`).join('\n');
    if (key === this.lastProblemKey) return;
    this.lastProblemKey = key;
    for (const p of problems) this.opts.logger[p.severity === 'error' ? 'error' : 'warn'](`${p.object}: ${p.field}: ${p.message}`);
  }
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
