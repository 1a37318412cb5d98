// The initial state of one kind, read from the API server over the same authenticated fetch the watches use:
// either a WatchList stream (`sendInitialEvents=true`, Kubernetes ≥ 1.32 with the WatchList gate) or a paged
// list. Both hand each object to `slim` as soon as it is parsed, so what is kept is the slim copy only.
//
// Why not client-node's generated list calls: they deserialize every object into class instances with
// ObjectSerializer (every field of a full Pod, Dates for timestamps) only for slimObject to keep a few of
// them; parsing the JSON and slimming the plain objects does the same work with less (BENCHMARKS.md,
// "API load"). client-node still provides the config and authentication (applyToFetchOptions).

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { STATUS_CODES } from 'node:http';
import fetch, { type Response } from 'node-fetch';
import { LineSplitter, LineTooLongError, MAX_LINE_BYTES } from './line-splitter.js';

/** A request the API server answered with an error status (its `Status` body's reason and message, when it sent one). */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  constructor(
    readonly statusCode: number,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
  }
  /** client-node's ApiException calls it `code`; statusOf() reads either. */
  get code(): number {
    return this.statusCode;
  }
}

/** The initial state of a kind: its objects (slimmed) and the resourceVersion a watch continues from. */
export interface InitialState {
  readonly items: KubernetesObject[];
  readonly resourceVersion: string | undefined;
}

/**
 * What one initial state (a WatchList stream, or all the pages of a list) may cost before it is refused. A
 * server or proxy that streams forever, or never answers, would otherwise hold a fresh node unprogrammed, or
 * grow the daemon past its memory limit (docs/hostile-input.md).
 */
export interface InitialStateLimits {
  /** Objects received (each event or list item, kept or not). */
  readonly maxObjects: number;
  /** Bytes of response body read (after decompression). */
  readonly maxBytes: number;
  /** The whole WatchList stream, from the request to the initial-events-end bookmark. */
  readonly streamTimeoutMs: number;
  /** Each list page, from the request to the last byte of its body. */
  readonly pageTimeoutMs: number;
  /** Shared by the kinds whose initial states are read at once: objects received by all of them together. */
  readonly inFlight?: InFlightObjects;
}

/**
 * The objects all initial states being read at once have received so far. The four kinds stream at once, so a
 * per-kind bound alone let a server flooding every kind hold four times it: 438 MiB peak on Node 24 at
 * 100,000 objects each, near the DaemonSet's 512Mi. Together they may hold `max`; an initial state that
 * ends, or is refused, gives its share back.
 */
export class InFlightObjects {
  private used = 0;
  constructor(readonly max: number) {}
  take(n: number): boolean {
    this.used += n;
    return this.used <= this.max;
  }
  give(n: number): void {
    this.used -= n;
  }
}

/** Why an initial state or a watch stream was given up on (the `reason` of the refusal metric). */
export type StreamRefusalReason = 'line-too-long' | 'too-many-objects' | 'too-many-bytes' | 'deadline' | 'not-an-event';

/** A response netfence refused to read on: it broke a bound, or was not the protocol. */
export class StreamRefusedError extends Error {
  override readonly name = 'StreamRefusedError';
  constructor(
    readonly reason: StreamRefusalReason,
    readonly path: string,
    detail: string,
  ) {
    super(`${path}: ${detail}`);
  }
}

type Query = Readonly<Record<string, string | number | boolean | undefined>>;
type Slim = (obj: KubernetesObject) => KubernetesObject;

/** The annotation on the BOOKMARK that closes a WatchList's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** `path?query` on the current cluster's server, authenticated as client-node would; an error status throws ApiStatusError. */
export async function get(kubeConfig: KubeConfig, path: string, query: Query, signal?: AbortSignal): Promise<Response> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('No currently active cluster');
  const url = new URL(cluster.server + path);
  for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
  const init = await kubeConfig.applyToFetchOptions({});
  const response = await fetch(url.toString(), { ...init, method: 'GET', ...(signal ? { signal: signal as FetchSignal } : {}) });
  if (response.status !== 200) throw await statusError(response);
  return response;
}

type FetchSignal = NonNullable<Parameters<typeof fetch>[1]>['signal'];

async function statusError(response: Response): Promise<ApiStatusError> {
  const text = await response.text().catch(() => '');
  let body: { reason?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not a Status: keep the status line
  }
  const message =
    typeof body.message === 'string' ? body.message : response.statusText || STATUS_CODES[response.status] || 'request failed';
  return new ApiStatusError(response.status, typeof body.reason === 'string' ? body.reason : undefined, message);
}

/**
 * A paged list (`limit`, then `continue`). The API server serves every page from the first page's snapshot,
 * and each carries its resourceVersion. `isStopped` is asked between pages: a stopped source gives up. Each
 * page has a deadline, and the pages together are bounded in objects and bytes (StreamRefusedError).
 */
export async function listPaged(
  kubeConfig: KubeConfig,
  path: string,
  query: Query,
  pageSize: number,
  slim: Slim,
  isStopped: () => boolean,
  limits: InitialStateLimits,
): Promise<InitialState> {
  const items: KubernetesObject[] = [];
  const budget = new Budget(path, limits);
  let resourceVersion: string | undefined;
  let token: string | undefined;
  try {
    do {
      const page = await withDeadline(path, limits.pageTimeoutMs, 'a list page', async (signal) => {
        const response = await get(kubeConfig, path, { ...query, limit: pageSize, continue: token }, signal);
        // Decoded once, whole: a chunk may end inside a character, and one flat string parses faster than
        // a string built of hundreds of appended pieces.
        const chunks: Buffer[] = [];
        for await (const chunk of response.body) {
          budget.bytes((chunk as Buffer).length);
          chunks.push(chunk as Buffer);
        }
        return JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          metadata?: { resourceVersion?: string; continue?: string };
          items?: unknown;
        };
      });
      if (isStopped()) throw new Error('cluster source stopped');
      if (!Array.isArray(page.items)) throw new Error(`the list of ${path} has no items`);
      budget.objects(page.items.length);
      resourceVersion ??= page.metadata?.resourceVersion;
      for (const item of page.items as KubernetesObject[]) items.push(slim(item));
      token = page.metadata?.continue || undefined;
    } while (token);
    return { items, resourceVersion };
  } finally {
    budget.release();
  }
}

/** Counts what an initial state has cost so far, and refuses past its limits. */
class Budget {
  private objectCount = 0;
  /** Objects counted in limits.inFlight, given back by release(). */
  private shared = 0;
  private byteCount = 0;
  constructor(
    private readonly path: string,
    private readonly limits: InitialStateLimits,
  ) {}
  objects(n: number): void {
    this.objectCount += n;
    if (this.objectCount > this.limits.maxObjects)
      throw new StreamRefusedError('too-many-objects', this.path, `more than ${this.limits.maxObjects} objects in the initial state`);
    const shared = this.limits.inFlight;
    this.shared += n;
    if (shared && !shared.take(n))
      throw new StreamRefusedError(
        'too-many-objects',
        this.path,
        `more than ${shared.max} objects in the initial states of all kinds being read at once`,
      );
  }
  /** Gives this state's objects back to the shared count (once it is done, whatever the outcome). */
  release(): void {
    this.limits.inFlight?.give(this.shared);
    this.shared = 0;
  }
  bytes(n: number): void {
    this.byteCount += n;
    if (this.byteCount > this.limits.maxBytes)
      throw new StreamRefusedError('too-many-bytes', this.path, `more than ${this.limits.maxBytes} bytes in the initial state`);
  }
}

/**
 * Runs `fn` with a signal that aborts after `ms`; if it was the deadline that ended it, rejects with a
 * 'deadline' refusal (whatever error the abort surfaced as). The signal also aborts when `fn` settles, so
 * a response body left half-read is released.
 */
async function withDeadline<T>(path: string, ms: number, what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort();
  }, ms);
  try {
    return await fn(controller.signal);
  } catch (err) {
    if (expired) throw new StreamRefusedError('deadline', path, `${what} took longer than ${ms} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/**
 * A WatchList: one watch request that streams the state as ADDED events and closes it with a BOOKMARK
 * annotated `k8s.io/initial-events-end: "true"`, whose resourceVersion is the state's. The stream is closed
 * there; the informer's own watch continues from that resourceVersion (nothing is missed: the server replays
 * what happened after it). The API server builds no list for this (it streams from its watch cache), and
 * this process never holds more than one event's text at a time.
 *
 * A server without the WatchList gate answers 422 Invalid (isWatchListRefusal). One that ignores the
 * parameters (a proxy that drops them; a server older than 1.19, which did not check them) streams a plain
 * watch with no bookmark: the request carries timeoutSeconds, and a stream that ends cleanly before its
 * bookmark counts as a refusal too. A cut connection rejects as a failed list does: the caller retries. A
 * stream that breaks a bound (a line longer than MAX_LINE_BYTES, more objects or bytes than `limits` allow,
 * the deadline) or sends a line that is not an event rejects with StreamRefusedError.
 */
export async function streamInitialState(
  kubeConfig: KubeConfig,
  path: string,
  query: Query,
  slim: Slim,
  timeoutSeconds: number,
  limits: InitialStateLimits,
): Promise<InitialState> {
  return withDeadline(path, limits.streamTimeoutMs, 'the WatchList stream', async (signal) => {
    const response = await get(
      kubeConfig,
      path,
      {
        ...query,
        watch: true,
        sendInitialEvents: true,
        resourceVersionMatch: 'NotOlderThan',
        allowWatchBookmarks: true,
        timeoutSeconds,
      },
      signal,
    );
    // Keyed like the informer's cache: a MODIFIED or DELETED before the bookmark (the protocol sends none,
    // but a later event for the same object must not leave two) replaces or removes the earlier one.
    const items = new Map<string, KubernetesObject>();
    const budget = new Budget(path, limits);
    const lines = new LineSplitter(MAX_LINE_BYTES);
    try {
      for await (const chunk of response.body) {
        budget.bytes((chunk as Buffer).length);
        for (const line of splitOrRefuse(lines, chunk as Buffer, path)) {
          const end = readInitialEvent(line, path, items, slim, budget);
          if (end) return end;
        }
      }
      const last = lines.end();
      const end = last === undefined ? undefined : readInitialEvent(last, path, items, slim, budget);
      if (end) return end;
      throw new NoInitialEventsEnd(path);
    } finally {
      budget.release();
    }
  });
}

function splitOrRefuse(lines: LineSplitter, chunk: Buffer, path: string): string[] {
  try {
    return lines.push(chunk);
  } catch (err) {
    if (err instanceof LineTooLongError) throw new StreamRefusedError('line-too-long', path, err.message);
    throw err;
  }
}

/** One line of a WatchList stream: the finished state at its end bookmark, else undefined. */
function readInitialEvent(
  line: string,
  path: string,
  items: Map<string, KubernetesObject>,
  slim: Slim,
  budget: Budget,
): InitialState | undefined {
  if (line.trim() === '') return undefined;
  const event = decodeWatchEvent(line);
  if (!event) throw new StreamRefusedError('not-an-event', path, `a line of the WatchList stream is not an event: ${line.slice(0, 200)}`);
  const { type } = event;
  const object = event.object as KubernetesObject;
  if (type === 'ERROR') {
    const status = object as { code?: unknown; reason?: unknown; message?: unknown };
    throw new ApiStatusError(
      typeof status.code === 'number' ? status.code : 500,
      typeof status.reason === 'string' ? status.reason : undefined,
      typeof status.message === 'string' ? status.message : 'ERROR event in the WatchList stream',
    );
  }
  const meta = object.metadata;
  if (type === 'BOOKMARK') {
    if (meta?.annotations?.[INITIAL_EVENTS_END] === 'true') return { items: [...items.values()], resourceVersion: meta.resourceVersion };
    return undefined;
  }
  budget.objects(1);
  const key = `${meta?.namespace ?? ''}/${meta?.name ?? ''}`;
  if (type === 'DELETED') items.delete(key);
  else items.set(key, slim(object));
  return undefined;
}

/** A WatchList stream that ended cleanly without its initial-events-end bookmark: the server ignored the request. */
class NoInitialEventsEnd extends Error {
  override readonly name = 'NoInitialEventsEnd';
  constructor(path: string) {
    super(`the WatchList stream of ${path} ended without an initial-events-end bookmark (sendInitialEvents ignored)`);
  }
}

/** One watch stream line, `{"type": "...", "object": {...}}`; undefined for anything else (kube-watch.ts reads lines the same way). */
export function decodeWatchEvent(line: string): { readonly type: string; readonly object: Record<string, unknown> } | undefined {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (data === null || typeof data !== 'object') return undefined;
  const { type, object } = data as { type?: unknown; object?: unknown };
  if (typeof type !== 'string' || object === null || typeof object !== 'object' || Array.isArray(object)) return undefined;
  return { type, object: object as Record<string, unknown> };
}

/**
 * The server does not serve WatchList: 422 Invalid naming sendInitialEvents or resourceVersionMatch (the gate
 * is off, or the server predates it and forbids resourceVersionMatch on a watch). client-go falls back to a
 * list on any error of a WatchList request; a refusal is remembered, other errors are retried as they are.
 */
export function isWatchListRefusal(err: unknown): boolean {
  if (err instanceof NoInitialEventsEnd) return true;
  return err instanceof ApiStatusError && err.statusCode === 422 && /sendInitialEvents|resourceVersionMatch/.test(err.message);
}

/** The server does not know a field label of the selector (400, "field label not supported"). */
export function isFieldSelectorRefusal(err: unknown): boolean {
  return err instanceof ApiStatusError && err.statusCode === 400 && /field label not supported|field selector/i.test(err.message);
}
