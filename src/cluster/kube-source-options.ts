// What KubeSource is given and the fixed values it works by: its options, the bounds on each kind's
// initial state, the pod field selectors, the ClusterNetworkPolicy API, the retry backoff, and the small
// helpers that read a client-node object or error.

import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { InitialStateLimits, StreamRefusalReason } from './kube-list.js';
import type { ObjectKind } from './object-kind.js';
import type { Logger } from './source.js';

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
export const PEER_POD_SELECTORS: readonly (string | undefined)[] = [
  'status.phase!=Succeeded,status.phase!=Failed,spec.hostNetwork=false',
  'status.phase!=Succeeded,status.phase!=Failed',
  undefined,
];

/** ClusterNetworkPolicy (network-policy-api v0.2.0): a CRD, so it may not be installed. */
export const CNP_API = { group: 'policy.networking.k8s.io', version: 'v1alpha2', plural: 'clusternetworkpolicies' } as const;

/**
 * Absent answers from discovery, in a row and `goneConfirmIntervalMs` apart, that make a kind gone after its
 * list or watch answered 404. One 404 is not enough: an API server or aggregation layer that is restarting
 * answers 404 for a CRD's resources (and its discovery) for a moment, and believing it would remove every
 * ClusterNetworkPolicy from the kernel, opening what they deny, until the next discovery found them again.
 */
export const GONE_CONFIRMATIONS = 3;

export type AnyList = KubernetesListObject<KubernetesObject>;

export interface KindWatch {
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

export function keyOf(kind: ObjectKind, obj: KubernetesObject): string {
  const name = obj.metadata?.name ?? '';
  if (kind === 'Namespace' || kind === 'Node' || kind === 'ClusterNetworkPolicy') return name;
  return `${obj.metadata?.namespace || 'default'}/${name}`;
}

/** The HTTP status of a client-node error (ApiException `code`), if it has one. */
export function statusOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  const code = e?.code ?? e?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as Error & { code?: unknown; statusCode?: unknown };
  const code = e.statusCode ?? e.code;
  return code !== undefined ? `${e.message} (${String(code)})` : e.message;
}
