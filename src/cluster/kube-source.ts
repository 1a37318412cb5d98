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
// in compile/cluster-state.ts), so they need not cross the wire. A pod that stops matching (a Job's pod
// completing) arrives as a DELETED event, as the API server's watch cache filters; a relist drops it
// likewise. Servers before 1.28 do not know `spec.hostNetwork` (400): the selector falls back to the phase
// alone, and without that to none.

import { CustomObjectsApi, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';
import type { ClusterSnapshot, Problem } from '../model/index.js';
import { convert, type Converted, type ModelOf } from './convert.js';
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
  type StreamRefusalReason,
} from './kube-list.js';
import { slimObject } from './slim.js';
import type { ObjectKind } from './object-kind.js';
import { ChangeEmitter, ObjectStore, type ClusterChange, type ClusterSource, type Logger } from './source.js';

export interface BackoffOptions {
  /** First retry delay (before jitter). Default 500 ms. */
  readonly initialMs?: number;
  /** Cap on the retry delay. Default 30 s. */
  readonly maxMs?: number;
}

export interface KubeSourceOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly backoff?: BackoffOptions;
  /** Source of jitter in [0, 1); injectable for tests. */
  readonly random?: () => number;
  /** Server-side watch timeout; default a random 300–600 s per watch. */
  readonly watchTimeoutSeconds?: number;
  /** How often to look again for the ClusterNetworkPolicy API while it is not installed. Default 60 s. */
  readonly crdRecheckMs?: number;
  /**
   * After a 404 for a kind that can vanish (ClusterNetworkPolicy): how far apart the discovery requests are
   * that must all say it is gone (GONE_CONFIRMATIONS of them) before its objects are forgotten. Default 5 s.
   */
  readonly goneConfirmIntervalMs?: number;
  /**
   * Told while a kind that answered 404 is not yet confirmed gone (what, and since when), and undefined once
   * it is settled (served again, or confirmed gone). Meanwhile its last state is kept: the daemon is not ready.
   */
  readonly onUnconfirmed?: (reason: string | undefined) => void;
  /** Read each kind's initial state as a WatchList stream where the server offers it (default true). */
  readonly watchList?: boolean;
  /**
   * Ask only for pods that can count in policy (not Succeeded/Failed, not hostNetwork). The daemon does;
   * the one-shot commands keep every pod (trace resolves any pod's name). Default false.
   */
  readonly peerPodsOnly?: boolean;
  /** Bounds on each kind's initial state (DEFAULT_INITIAL_STATE_LIMITS for what is not given). */
  readonly limits?: Partial<InitialStateLimits>;
  /** Called for every response refused for breaking a bound or the protocol (already logged). */
  readonly onRefused?: (refusal: StreamRefusal) => void;
  /**
   * Called for every failed list, watch or discovery before it is logged and retried. A one-shot command
   * gives up on the errors retrying cannot mend (connection refused, unauthorized) and says so itself: it
   * returns true, and the failure is not logged.
   */
  readonly onFailure?: (err: unknown) => boolean;
}

/** A refused response: which kind, which request, and why. */
export interface StreamRefusal {
  readonly kind: ObjectKind;
  readonly request: 'watch-list' | 'list' | 'watch';
  readonly reason: StreamRefusalReason;
}

/**
 * Four kinds stream at once: a server flooding all four with small pods took the daemon to a 548 MiB peak at
 * 150,000 objects each (Kubernetes' own ceiling for pods; the DaemonSet's limit is 512Mi), 438 MiB at 100,000 on Node 24;
 * all kinds together are held to 1.25 times the per-kind bound (KubeSource's InFlightObjects): 331–375 MiB.
 * 1 GiB of JSON is ~10 KiB for each of those. 120 s for a WatchList stream is the xl tier's (50,000 pods) many
 * times over; 60 s a page is the API server's own request timeout, past which it gives up on a list itself.
 * The daemon's configuration (initialList*, listPageTimeoutSeconds) carries the same defaults.
 */
export const DEFAULT_INITIAL_STATE_LIMITS: InitialStateLimits = {
  maxObjects: 100_000,
  maxBytes: 1024 * 1024 * 1024,
  streamTimeoutMs: 120_000,
  pageTimeoutMs: 60_000,
};

/** Pod field selectors, most selective first; each is tried when the server refused the one before (400). */
const PEER_POD_SELECTORS: readonly (string | undefined)[] = [
  'status.phase!=Succeeded,status.phase!=Failed,spec.hostNetwork=false',
  'status.phase!=Succeeded,status.phase!=Failed',
  undefined,
];

/** ClusterNetworkPolicy (network-policy-api v0.2.0): a CRD, so it may not be installed. */
const CNP_API = { group: 'policy.networking.k8s.io', version: 'v1alpha2', plural: 'clusternetworkpolicies' } as const;

/**
 * Absent answers from discovery, in a row and `goneConfirmIntervalMs` apart, that make a kind gone after its
 * list or watch answered 404. One 404 is not enough: an API server or aggregation layer that is restarting
 * answers 404 for a CRD's resources (and its discovery) for a moment, and believing it would remove every
 * ClusterNetworkPolicy from the kernel, opening what they deny, until the next discovery found them again.
 */
export const GONE_CONFIRMATIONS = 3;

type AnyList = KubernetesListObject<KubernetesObject>;

interface KindWatch {
  readonly kind: ObjectKind;
  readonly path: string;
  /** Field selectors to try in order (the last that the server accepts is kept); none: no selector. */
  readonly fieldSelectors?: readonly (string | undefined)[];
}

/**
 * Objects per list page. One unpaged list of 50,000 pods is a response of tens of megabytes held twice
 * over (text, parsed JSON) before slimming; in pages of 500, only one page is, and the daemon's heap does
 * not grow to that peak and stay there. (client-go's reflector pages by 500 too.) The API server serves
 * every page from the snapshot of the first one.
 */
export const LIST_PAGE_SIZE = 500;

/**
 * Delay before retry number `attempt` (0-based): exponential up to the cap, then "equal jitter"
 * (50–100% of that), so nodes that lost the API together do not come back in lockstep.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: () => number): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.5 + random() / 2));
}

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
  private readonly crdRecheckMs: number;
  /** True until discovery has said whether the ClusterNetworkPolicy API exists (sync waits for that). */
  private discovering = true;
  private cnpAbsentLogged = false;
  private discoveryTimer: NodeJS.Timeout | undefined;
  private discoveryAttempts = 0;
  private readonly goneConfirmIntervalMs: number;
  private readonly onUnconfirmed: (reason: string | undefined) => void;
  /** The ClusterNetworkPolicy API answered 404 and is not yet confirmed gone: absent answers so far, since when. */
  private suspect: { absent: number; since: Date; timer: NodeJS.Timeout | undefined } | undefined;
  /** Discovery listed it again: settled once its watch is connected (a second 404 before that suspects it again). */
  private resuming = false;
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
    this.crdRecheckMs = opts.crdRecheckMs ?? 60_000;
    this.goneConfirmIntervalMs = opts.goneConfirmIntervalMs ?? 5_000;
    this.onUnconfirmed = opts.onUnconfirmed ?? (() => undefined);
    this.watchList = opts.watchList ?? true;
    const limits = { ...DEFAULT_INITIAL_STATE_LIMITS, ...opts.limits };
    // All kinds together: room for the largest kind at its bound plus a quarter of that for the others.
    this.limits = { ...limits, inFlight: new InFlightObjects(Math.ceil(limits.maxObjects * 1.25)) };
    this.onRefused = opts.onRefused ?? (() => undefined);
    this.onFailure = opts.onFailure ?? (() => false);

    // Pods of all namespaces and all nodes: policy peers can be anywhere.
    const watches: readonly KindWatch[] = [
      { kind: 'Namespace', path: '/api/v1/namespaces' },
      { kind: 'Pod', path: '/api/v1/pods', ...(opts.peerPodsOnly ? { fieldSelectors: PEER_POD_SELECTORS } : {}) },
      { kind: 'Node', path: '/api/v1/nodes' },
      { kind: 'NetworkPolicy', path: '/apis/networking.k8s.io/v1/networkpolicies' },
    ];
    for (const w of watches) this.informers.set(w.kind, this.makeInformer(opts.kubeConfig, w));
    for (const kind of this.informers.keys()) this.startInformer(kind);
    void this.discoverClusterPolicies();
  }

  /**
   * Watches ClusterNetworkPolicies once discovery lists them. A cluster without the CRD gets a 404:
   * that is logged once and looked at again every `crdRecheckMs` (installing the CRD later is picked up),
   * never retried as an error. Other failures retry with backoff, and sync waits: programming without
   * the admin tier's Denies would open traffic they close.
   */
  private async discoverClusterPolicies(): Promise<void> {
    this.discoveryTimer = undefined;
    if (this.stopped) return;
    const answer = await this.askDiscovery();
    if (this.stopped) return;
    if (typeof answer !== 'boolean') {
      const delayMs = backoffDelay(this.discoveryAttempts++, this.initialMs, this.maxMs, this.random);
      if (!this.onFailure(answer.error))
        this.logger.warn('ClusterNetworkPolicy discovery failed; retrying', { delayMs, error: describeError(answer.error) });
      this.scheduleDiscovery(delayMs);
      return;
    }
    const installed = answer;
    this.discoveryAttempts = 0;
    if (installed && !this.informers.has('ClusterNetworkPolicy')) {
      this.logger.info('ClusterNetworkPolicy API found; watching it', { api: `${CNP_API.group}/${CNP_API.version}` });
      this.cnpAbsentLogged = false;
      this.informers.set('ClusterNetworkPolicy', this.makeInformer(this.kubeConfig, this.cnpWatch()));
      this.startInformer('ClusterNetworkPolicy');
    } else if (!installed) {
      if (!this.cnpAbsentLogged) {
        this.logger.info('ClusterNetworkPolicy API not installed; enforcing NetworkPolicy only', {
          api: `${CNP_API.group}/${CNP_API.version}`,
        });
        this.cnpAbsentLogged = true;
      }
      this.scheduleDiscovery(this.crdRecheckMs);
    }
    this.discovering = false;
    this.maybeSynced();
  }

  /** Whether discovery lists the ClusterNetworkPolicy resource (a 404 for its group-version: no); other failures as they are. */
  private async askDiscovery(): Promise<boolean | { error: unknown }> {
    try {
      const custom = this.kubeConfig.makeApiClient(CustomObjectsApi);
      const list = await custom.getAPIResources({ group: CNP_API.group, version: CNP_API.version });
      return (list.resources ?? []).some((r) => r.name === CNP_API.plural);
    } catch (err) {
      return statusOf(err) === 404 ? false : { error: err };
    }
  }

  /**
   * The ClusterNetworkPolicy list or watch answered 404. Nothing is forgotten yet: the informer stays stopped,
   * the policies last seen stay in the store (so in the kernel), the daemon is told (not ready), and discovery
   * is asked every `goneConfirmIntervalMs`: GONE_CONFIRMATIONS absent answers in a row drop the policies; an
   * answer that lists the resource restarts the informer (resuming its watch).
   */
  private suspectGone(err: unknown): void {
    if (this.suspect) return;
    this.resuming = false;
    this.suspect = { absent: 0, since: new Date(), timer: undefined };
    this.logger.warn('the ClusterNetworkPolicy API answered 404; confirming through discovery, still enforcing its policies', {
      confirmations: GONE_CONFIRMATIONS,
      intervalMs: this.goneConfirmIntervalMs,
      error: describeError(err),
    });
    this.reportSuspect();
    this.scheduleConfirm();
  }

  private reportSuspect(): void {
    if (!this.suspect) return this.onUnconfirmed(undefined);
    this.onUnconfirmed(
      `the ClusterNetworkPolicy API answered 404 at ${this.suspect.since.toISOString()}; confirming it is gone ` +
        `(${this.suspect.absent} of ${GONE_CONFIRMATIONS} absent answers from discovery), its last policies still enforced`,
    );
  }

  private scheduleConfirm(): void {
    if (this.stopped || !this.suspect) return;
    this.suspect.timer = setTimeout(() => void this.confirmGone(), this.goneConfirmIntervalMs);
    this.suspect.timer.unref();
  }

  private async confirmGone(): Promise<void> {
    if (this.stopped || !this.suspect) return;
    const answer = await this.askDiscovery();
    if (this.stopped || !this.suspect) return;
    if (answer === true) {
      this.logger.info('discovery lists the ClusterNetworkPolicy API again; watching it again', { absentAnswers: this.suspect.absent });
      this.suspect = undefined;
      // Still not settled: ready again only once its watch is connected (onConnected in makeInformer).
      this.resuming = true;
      if (this.informers.has('ClusterNetworkPolicy')) this.startInformer('ClusterNetworkPolicy');
      return;
    }
    // A failed discovery request says nothing either way: the count stands and discovery is asked again.
    if (answer === false) this.suspect.absent++;
    else
      this.logger.warn('ClusterNetworkPolicy discovery failed while confirming the API is gone; asking again', {
        error: describeError(answer.error),
      });
    if (this.suspect.absent < GONE_CONFIRMATIONS) {
      this.reportSuspect();
      return this.scheduleConfirm();
    }
    this.suspect = undefined;
    this.dropClusterPolicies();
    this.reportSuspect();
  }

  private scheduleDiscovery(delayMs: number): void {
    if (this.stopped) return;
    this.discoveryTimer = setTimeout(() => void this.discoverClusterPolicies(), delayMs);
    this.discoveryTimer.unref();
  }

  private cnpWatch(): KindWatch {
    return { kind: 'ClusterNetworkPolicy', path: `/apis/${CNP_API.group}/${CNP_API.version}/${CNP_API.plural}` };
  }

  /** The CRD went away (its objects with it): forget them and go back to discovery. */
  private dropClusterPolicies(): void {
    const informer = this.informers.get('ClusterNetworkPolicy');
    this.informers.delete('ClusterNetworkPolicy');
    this.listed.delete('ClusterNetworkPolicy');
    this.attempts.delete('ClusterNetworkPolicy');
    clearTimeout(this.retryTimers.get('ClusterNetworkPolicy'));
    this.retryTimers.delete('ClusterNetworkPolicy');
    void informer?.stop().catch(() => undefined);
    for (const key of this.store.keys('ClusterNetworkPolicy')) {
      this.setProblems('ClusterNetworkPolicy', key, []);
      this.changes.emit(this.store.delete('ClusterNetworkPolicy', key));
    }
    this.logger.warn('ClusterNetworkPolicy API gone (discovery confirmed it); its policies are no longer enforced', {
      confirmations: GONE_CONFIRMATIONS,
      intervalMs: this.goneConfirmIntervalMs,
    });
    this.scheduleDiscovery(this.crdRecheckMs);
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
    clearTimeout(this.discoveryTimer);
    clearTimeout(this.suspect?.timer);
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  private makeInformer(kubeConfig: KubeConfig, w: KindWatch): KindInformer {
    const watch = new GuardedWatch(kubeConfig, {
      slim: (obj) => arrive(w.kind, obj),
      isStopped: () => this.stopped,
      // The informer watches only after its list has been processed, so the first watch of a kind
      // means that kind's first full list is in the store.
      onWatchStart: () => this.markListed(w.kind),
      onConnected: () => {
        this.attempts.set(w.kind, 0);
        if (w.kind === 'ClusterNetworkPolicy' && this.resuming) {
          this.resuming = false;
          this.logger.info('watching ClusterNetworkPolicies again; their API is confirmed served');
          this.onUnconfirmed(undefined);
        }
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
    const slim = (obj: KubernetesObject) => arrive(w.kind, obj);
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
    if (kind === 'ClusterNetworkPolicy' && statusOf(err) === 404) return this.suspectGone(err);
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
    if (this.syncedOnce || this.discovering) return;
    if (this.listed.size === this.informers.size) {
      this.syncedOnce = true;
      this.logger.info('cluster synced', { nodes: this.snapshot().nodes.length, pods: this.snapshot().pods.length });
      this.markSynced();
    }
  }

  private upsert(kind: ObjectKind, obj: KubernetesObject): void {
    const key = keyOf(kind, obj);
    const result = (obj as Partial<Arrived>).converted ?? convert(kind, obj);
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

/** An object as the informer holds it between its arrival and its turn: its names, and what it converted to. */
interface Arrived extends KubernetesObject {
  readonly converted: Converted<ModelOf[ObjectKind]>;
}

/**
 * Converted as it is decoded, not when the informer applies it: a list's objects wait until the whole list
 * has arrived (a list that fails halfway applies nothing), and 100,000 pods waiting as slimmed API objects
 * were most of the daemon's heap at that moment, each one promoted and marked again by every collection
 * while the list grew. What waits now is the model object the store keeps anyway. The conversion is the same
 * as applying it would do (of the slimmed object); its problems are reported when it is applied.
 */
function arrive(kind: ObjectKind, obj: KubernetesObject): Arrived {
  const slim = slimObject(kind, obj);
  const meta = slim.metadata;
  return {
    metadata: { name: meta?.name, namespace: meta?.namespace, resourceVersion: meta?.resourceVersion },
    converted: convert(kind, slim),
  } as Arrived;
}

function keyOf(kind: ObjectKind, obj: KubernetesObject): string {
  const name = obj.metadata?.name ?? '';
  if (kind === 'Namespace' || kind === 'Node' || kind === 'ClusterNetworkPolicy') return name;
  return `${obj.metadata?.namespace || 'default'}/${name}`;
}

/** The HTTP status of a client-node error (ApiException `code`), if it has one. */
function statusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  const code = e?.code ?? e?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as Error & { code?: unknown; statusCode?: unknown };
  const code = e.statusCode ?? e.code;
  return code !== undefined ? `${e.message} (${String(code)})` : e.message;
}
