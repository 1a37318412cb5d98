// ClusterSource backed by the API server: one informer (list, then watch: kind-informer.ts) per kind,
// every object converted on arrival into an ObjectStore, which is the only copy kept.
//
// The informer loop's behaviour this module is written around (kind-informer.ts, client-node's watch.js):
// - A watch that ends cleanly (server timeout, or after a 410 ERROR event) is reconnected by the
//   informer itself; after a 410 it relists, and the relist removes every key we hold (in the store,
//   or rejected with problems) that is missing from the new list, so deletions missed while
//   disconnected are reconciled.
// - Any other failure (connection refused, reset mid-stream, HTTP 5xx on list or watch) only fires
//   the `error` handler; the informer then stays stopped. We restart it with capped, jittered
//   backoff. A restart resumes watching from the last resourceVersion, relisting only if that is gone.
// - `stop()` aborts the open watch, and the abort arrives as one more `error` callback (ignored).
//   A watch still connecting when stop() runs is not aborted by the informer, so GuardedWatch aborts
//   it once it connects.
// - The watch has no client-side timeout (watch.js builds an AbortSignal.timeout and then overwrites
//   it) and ListWatch sends no timeoutSeconds, so a silently dead connection would go unnoticed for
//   as long as TCP keepalive takes. GuardedWatch asks the server to end each watch after 5–10 minutes
//   (as client-go's reflector does) and aborts it itself if the server has not done so 30 s later.
// - Exceptions thrown by our event handlers are swallowed by watch.js, so handlers catch and log.
// - A list that fails halfway (cut connection, unparsable body) rejects before the informer touches
//   its cache, so no delete is emitted for objects it did not get to; the retry relists.
// The informer is given a wrapped Watch (GuardedWatch) and our own list function (kube-list.ts): a WatchList stream where the
// server offers it, else a paged list, both as raw JSON over the watch's authenticated fetch.
//
// The pod informer may narrow what it receives with a field selector (option `peerPodsOnly`): pods that
// are Succeeded or Failed, or on the host network, never count in NetworkPolicy (DESIGN.md §3, countsAsPeer
// in compile/pod-peers.ts), so they need not cross the wire. A pod that stops matching (a Job's pod
// completing) arrives as a DELETED event, as the API server's watch cache filters; a relist drops it
// likewise. Servers before 1.28 do not know `spec.hostNetwork` (400): the selector falls back to the phase
// alone, and without that to none.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ClusterPolicyDiscovery, type DiscoveryHost } from './cnp-discovery.js';
import type { ClusterSnapshot, Problem } from '../model/index.js';
import { convert } from './convert.js';
import { KindInformer } from './kind-informer.js';
import { GuardedWatch } from './kube-watch.js';
import {
  InFlightObjects,
  isFieldSelectorRefusal,
  isWatchListRefusal,
  listPaged,
  streamInitialState,
  StreamRefusedError,
  type InitialState,
  type InitialStateLimits,
} from './kube-list.js';
import {
  backoffDelay,
  CNP_API,
  DEFAULT_INITIAL_STATE_LIMITS,
  describeError,
  keyOf,
  LIST_PAGE_SIZE,
  PEER_POD_SELECTORS,
  statusOf,
  type AnyList,
  type KindWatch,
  type KubeSourceOptions,
  type StreamRefusal,
} from './kube-source-options.js';
import { slimObject } from './slim.js';
import type { ObjectKind } from './object-kind.js';
import { ChangeEmitter, ObjectStore, type ClusterChange, type ClusterSource, type Logger } from './source.js';

export class KubeSource implements ClusterSource {
  readonly synced: Promise<void>;
  private readonly store = new ObjectStore();
  private readonly changes: ChangeEmitter;
  /** Problems per `kind key` of objects that were rejected or read with warnings. */
  private readonly objectProblems = new Map<string, readonly Problem[]>();
  private problemList: readonly Problem[] | undefined;
  private readonly informers = new Map<ObjectKind, KindInformer>();
  private readonly listed = new Set<ObjectKind>();
  private readonly attempts = new Map<ObjectKind, number>();
  private readonly retryTimers = new Map<ObjectKind, NodeJS.Timeout>();
  private markSynced!: () => void;
  private stopped = false;
  private readonly logger: Logger;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;
  private readonly watchTimeoutSeconds: number | undefined;
  private readonly kubeConfig: KubeConfig;
  private readonly discovery: ClusterPolicyDiscovery;
  /** Cleared for good once the server refuses WatchList (422): then every kind lists. */
  private watchList: boolean;
  /** Per kind, which of its fieldSelectors is in use. */
  private readonly selectorStep = new Map<ObjectKind, number>();
  private readonly limits: InitialStateLimits;
  private readonly onRefused: (refusal: StreamRefusal) => void;
  private readonly onFailure: (err: unknown) => boolean;

  constructor(opts: KubeSourceOptions) {
    this.watchTimeoutSeconds = opts.watchTimeoutSeconds;
    this.logger = opts.logger;
    this.changes = new ChangeEmitter(opts.logger);
    this.initialMs = opts.backoff?.initialMs ?? 500;
    this.maxMs = opts.backoff?.maxMs ?? 30_000;
    this.random = opts.random ?? Math.random;
    this.synced = new Promise<void>((resolve) => (this.markSynced = resolve));
    this.kubeConfig = opts.kubeConfig;
    this.watchList = opts.watchList ?? true;
    const limits = { ...DEFAULT_INITIAL_STATE_LIMITS, ...opts.limits };
    // All kinds together: room for the largest kind at its bound plus a quarter of that for the others.
    this.limits = { ...limits, inFlight: new InFlightObjects(Math.ceil(limits.maxObjects * 1.25)) };
    this.onRefused = opts.onRefused ?? (() => undefined);
    this.onFailure = opts.onFailure ?? (() => false);

    this.discovery = new ClusterPolicyDiscovery(this.discoveryHost(opts));

    // Pods of all namespaces and all nodes: policy peers can be anywhere.
    const watches: readonly KindWatch[] = [
      { kind: 'Namespace', path: '/api/v1/namespaces' },
      { kind: 'Pod', path: '/api/v1/pods', ...(opts.peerPodsOnly ? { fieldSelectors: PEER_POD_SELECTORS } : {}) },
      { kind: 'Node', path: '/api/v1/nodes' },
      { kind: 'NetworkPolicy', path: '/apis/networking.k8s.io/v1/networkpolicies' },
    ];
    for (const w of watches) this.informers.set(w.kind, this.makeInformer(opts.kubeConfig, w));
    for (const kind of this.informers.keys()) this.startInformer(kind);
    void this.discovery.discover();
  }

  /** The informer of a ClusterNetworkPolicy API discovery found, and what becomes of it when the API goes. */
  private discoveryHost(opts: KubeSourceOptions): DiscoveryHost {
    const cnp = 'ClusterNetworkPolicy';
    return {
      kubeConfig: this.kubeConfig,
      logger: this.logger,
      crdRecheckMs: opts.crdRecheckMs ?? 60_000,
      goneConfirmIntervalMs: opts.goneConfirmIntervalMs ?? 5_000,
      onUnconfirmed: opts.onUnconfirmed ?? (() => undefined),
      onFailure: this.onFailure,
      backoff: (attempt) => backoffDelay(attempt, this.initialMs, this.maxMs, this.random),
      isStopped: () => this.stopped,
      watching: () => this.informers.has(cnp),
      watch: () => {
        const path = `/apis/${CNP_API.group}/${CNP_API.version}/${CNP_API.plural}`;
        this.informers.set(cnp, this.makeInformer(this.kubeConfig, { kind: cnp, path }));
        this.startInformer(cnp);
      },
      resume: () => {
        if (this.informers.has(cnp)) this.startInformer(cnp);
      },
      forget: () => {
        const informer = this.informers.get(cnp);
        this.informers.delete(cnp);
        this.listed.delete(cnp);
        this.attempts.delete(cnp);
        clearTimeout(this.retryTimers.get(cnp));
        this.retryTimers.delete(cnp);
        void informer?.stop().catch(() => undefined);
        for (const key of this.store.keys(cnp)) {
          this.setProblems(cnp, key, []);
          this.changes.emit(this.store.delete(cnp, key));
        }
      },
      settled: () => this.maybeSynced(),
    };
  }

  snapshot(): ClusterSnapshot {
    return this.store.snapshot();
  }

  problems(): readonly Problem[] {
    this.problemList ??= [...this.objectProblems.values()].flat();
    return this.problemList;
  }

  onChange(cb: (change: ClusterChange) => void): () => void {
    return this.changes.on(cb);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.discovery.stop();
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private makeInformer(kubeConfig: KubeConfig, w: KindWatch): KindInformer {
    const watch = new GuardedWatch(kubeConfig, {
      slim: (obj) => slimObject(w.kind, obj),
      isStopped: () => this.stopped,
      // The informer watches only after its list has been processed, so the first watch of a kind
      // means that kind's first full list is in the store.
      onWatchStart: () => this.markListed(w.kind),
      onConnected: () => {
        this.attempts.set(w.kind, 0);
        if (w.kind === 'ClusterNetworkPolicy') this.discovery.connected();
      },
      timeoutSeconds: () => this.watchTimeoutSeconds ?? 300 + Math.floor(this.random() * 300),
      onDecodeError: (line) => {
        this.logger.warn('undecodable line in the watch stream; relisting', { kind: w.kind, line: line.slice(0, 200) });
        this.onRefused({ kind: w.kind, request: 'watch', reason: 'not-an-event' });
      },
      onLineTooLong: (err) => {
        this.logger.warn('refusing a watch stream: a line passed the length bound; watching again with backoff', {
          kind: w.kind,
          server: this.server(),
          path: w.path,
          error: err.message,
        });
        this.onRefused({ kind: w.kind, request: 'watch', reason: 'line-too-long' });
      },
      fieldSelector: () => this.fieldSelectorOf(w),
    });
    const list = async (): Promise<AnyList> => {
      const { items, resourceVersion } = await this.initialState(w);
      // Stopped while listing: make the informer give up instead of opening a watch.
      if (this.stopped) throw new Error('cluster source stopped');
      // The watch starts from this resourceVersion (the list's snapshot, or the WatchList's end bookmark).
      return { metadata: resourceVersion !== undefined ? { resourceVersion } : {}, items };
    };
    // Only the kind's current informer: one dropped with its CRD may still deliver a late event.
    const current = () => !this.stopped && this.informers.get(w.kind) === informer;
    const guarded =
      <T>(what: string, fn: (arg: T) => void) =>
      (arg: T) => {
        try {
          if (current()) fn(arg);
        } catch (err) {
          this.logger.error(`handling ${w.kind} ${what} failed`, { error: String(err) });
        }
      };
    const informer: KindInformer = new KindInformer(w.path, watch, list, {
      upsert: guarded('event', (obj: KubernetesObject) => this.upsert(w.kind, obj)),
      remove: guarded('deletion', (key: string) => this.remove(w.kind, key)),
      heldKeys: () => this.heldKeys(w.kind),
      keyOf: (obj) => keyOf(w.kind, obj),
      error: (err) => this.onInformerError(w.kind, err),
      connect: () => this.logger.debug('informer (re)connecting', { kind: w.kind }),
    });
    return informer;
  }

  private fieldSelectorOf(w: KindWatch): string | undefined {
    return w.fieldSelectors?.[this.selectorStep.get(w.kind) ?? 0];
  }

  /**
   * The kind's whole state, as a WatchList stream or a paged list. A refusal of WatchList (422) or of the
   * field selector (400) is logged once and the next way is tried at once; other failures reject (the
   * informer is restarted with backoff).
   */
  private async initialState(w: KindWatch): Promise<InitialState> {
    const slim = (obj: KubernetesObject) => slimObject(w.kind, obj);
    for (;;) {
      const fieldSelector = this.fieldSelectorOf(w);
      const query = { fieldSelector };
      const streamed = this.watchList;
      try {
        return streamed
          ? await streamInitialState(
              this.kubeConfig,
              w.path,
              query,
              slim,
              this.watchTimeoutSeconds ?? 300 + Math.floor(this.random() * 300),
              this.limits,
            )
          : await listPaged(this.kubeConfig, w.path, query, LIST_PAGE_SIZE, slim, () => this.stopped, this.limits);
      } catch (err) {
        if (this.stopped) throw err;
        if (err instanceof StreamRefusedError) this.refused(w, streamed ? 'watch-list' : 'list', err);
        if (streamed && (isWatchListRefusal(err) || err instanceof StreamRefusedError)) {
          // Kinds start together, so several may be refused before the first refusal is seen: log once.
          // A stream that broke a bound is not tried again either: paged lists are bounded page by page.
          if (!this.watchList) continue;
          this.watchList = false;
          const why = isWatchListRefusal(err)
            ? 'the API server does not serve WatchList (sendInitialEvents)'
            : 'a WatchList stream was refused';
          this.logger.info(`${why}; listing in pages instead`, {
            kind: w.kind,
            error: describeError(err),
          });
        } else if (fieldSelector !== undefined && isFieldSelectorRefusal(err)) {
          const step = (this.selectorStep.get(w.kind) ?? 0) + 1;
          this.selectorStep.set(w.kind, step);
          const next = w.fieldSelectors?.[step];
          this.logger.warn('the API server refused a field selector; asking with less', {
            kind: w.kind,
            refused: fieldSelector,
            next: next ?? 'none (every pod, filtered here)',
            error: describeError(err),
          });
        } else throw err;
      }
    }
  }

  /** Logs and counts a refused response (what was refused, and from which server and path). */
  private refused(w: KindWatch, request: StreamRefusal['request'], err: StreamRefusedError): void {
    this.logger.warn(`refusing the ${request === 'list' ? 'paged list' : 'WatchList stream'}: ${err.reason}`, {
      kind: w.kind,
      server: this.server(),
      path: w.path,
      error: err.message,
    });
    this.onRefused({ kind: w.kind, request, reason: err.reason });
  }

  private server(): string | undefined {
    return this.kubeConfig.getCurrentCluster()?.server;
  }

  private startInformer(kind: ObjectKind): void {
    const informer = this.informers.get(kind)!;
    informer.start().catch((err: unknown) => this.onInformerError(kind, err));
  }

  private onInformerError(kind: ObjectKind, err: unknown): void {
    // A ClusterNetworkPolicy informer dropped with its CRD still reports its stop: nothing to restart.
    if (this.stopped || this.retryTimers.has(kind) || !this.informers.has(kind)) return;
    if (kind === 'ClusterNetworkPolicy' && statusOf(err) === 404) return this.discovery.suspectGone(err);
    const attempt = this.attempts.get(kind) ?? 0;
    this.attempts.set(kind, attempt + 1);
    const delayMs = backoffDelay(attempt, this.initialMs, this.maxMs, this.random);
    // The store keeps the last state it saw: the kernel keeps enforcing it while the API is away.
    if (!this.onFailure(err))
      this.logger.warn('informer failed; retrying', { kind, attempt: attempt + 1, delayMs, error: describeError(err) });
    this.retryTimers.set(
      kind,
      setTimeout(() => {
        this.retryTimers.delete(kind);
        if (!this.stopped && this.informers.has(kind)) this.startInformer(kind);
      }, delayMs),
    );
  }

  private markListed(kind: ObjectKind): void {
    if (this.listed.has(kind)) return;
    this.listed.add(kind);
    this.logger.debug('initial list done', { kind, listed: [...this.listed] });
    this.maybeSynced();
  }

  private syncedOnce = false;
  private maybeSynced(): void {
    if (this.syncedOnce || this.discovery.discovering) return;
    if (this.listed.size === this.informers.size) {
      this.syncedOnce = true;
      this.logger.info('cluster synced', { nodes: this.snapshot().nodes.length, pods: this.snapshot().pods.length });
      this.markSynced();
    }
  }

  private upsert(kind: ObjectKind, obj: KubernetesObject): void {
    const key = keyOf(kind, obj);
    const result = convert(kind, obj);
    // A policy's problems travel on the policy; other kinds' problems are kept here.
    this.setProblems(kind, key, result.ok && (kind === 'NetworkPolicy' || kind === 'ClusterNetworkPolicy') ? [] : result.problems);
    if (!result.ok) {
      // The object still exists; dropping it would remove its rules (a local pod's chains, a peer's set
      // entry, a namespace's labels). Until a version reads again, the last one that did stays.
      const kept = this.store.get(kind, key) !== undefined;
      this.logger.warn(kept ? 'an update cannot be read; keeping the last version that could' : 'ignoring an object that cannot be read', {
        kind,
        key,
        problems: result.problems.map((p) => `${p.field}: ${p.message}`),
      });
      return;
    }
    this.changes.emit(this.store.set(kind, key, result.value));
  }

  private remove(kind: ObjectKind, key: string): void {
    this.setProblems(kind, key, []);
    this.changes.emit(this.store.delete(kind, key));
  }

  /** The kind's keys: stored, or rejected and so held only as problems (a relist must clear those too). */
  private heldKeys(kind: ObjectKind): Set<string> {
    const keys = new Set(this.store.keys(kind));
    const prefix = `${kind} `;
    for (const id of this.objectProblems.keys()) if (id.startsWith(prefix)) keys.add(id.slice(prefix.length));
    return keys;
  }

  private setProblems(kind: ObjectKind, key: string, problems: readonly Problem[]): void {
    const id = `${kind} ${key}`;
    if (problems.length === 0 && !this.objectProblems.has(id)) return;
    if (problems.length === 0) this.objectProblems.delete(id);
    else this.objectProblems.set(id, problems);
    this.problemList = undefined;
  }
}
