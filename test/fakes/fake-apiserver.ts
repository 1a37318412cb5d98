// An in-process Kubernetes API server for tests: the list/watch wire protocol for namespaces, pods,
// nodes and networkpolicies, over plain HTTP on 127.0.0.1 (client-node accepts http:// only with
// `insecure-skip-tls-verify: true`, which writeKubeconfig sets).
//
// What it does like the real server (and what informers depend on):
// - one global, monotonically increasing resourceVersion (etcd's revision); a list carries the
//   current one in metadata.resourceVersion, every stored object its own;
// - `?watch=true&resourceVersion=N` replays the events after N from a bounded history, then streams
//   live ones as JSON lines `{type, object}` (chunked); no N (or "0") starts with ADDED for each object;
// - a watch from an N older than the history gets one `ERROR` event whose object is a `Status` with
//   code 410 (reason Expired), then the stream ends; that is what makes an informer relist;
// - `allowWatchBookmarks=true` enables BOOKMARK events (sent by `bookmark()` or on an interval);
// - `timeoutSeconds` ends a watch normally after that long.
// - `fieldSelector` (`a=b`, `a==b`, `a!=b`, comma-separated, all must hold) on lists and watches, over the
//   field labels the real server accepts (pods: pkg/apis/core/v1/conversion.go; option `podFieldLabels`
//   narrows them to emulate an older server); an unknown label is 400 BadRequest. A watch filters as the
//   watch cache does (apiserver storage/cacher/cache_watcher.go convertToWatchEvent): an object that starts
//   matching arrives as ADDED, one that stops matching as DELETED carrying its previous (matching) state
//   stamped with the event's resourceVersion.
// - WatchList (option `watchList`, the WatchList feature gate): `sendInitialEvents=true` with
//   `resourceVersionMatch=NotOlderThan` streams the current state as ADDED events, then (with bookmarks
//   allowed) a BOOKMARK annotated `k8s.io/initial-events-end: "true"` at the state's resourceVersion, then
//   live events. Without the gate it is refused as the real server refuses it: 422 Invalid
//   (apimachinery meta/internalversion/validation validateWatchOptions).
// - clusternetworkpolicies (policy.networking.k8s.io/v1alpha2, a CRD) only while `crdInstalled`
//   (option `clusterNetworkPolicyCrd`, or installCrd()/uninstallCrd()): discovery at
//   /apis/policy.networking.k8s.io/v1alpha2 and the resource paths 404 otherwise, as without the CRD.
//   scriptDiscovery() answers the next discovery requests as scripted (listed, absent, or an HTTP status),
//   whatever is installed, as an API server or aggregation layer that is restarting would.
// Paged lists (`limit`/`continue`, see serveList), and large lists gzipped when asked (`compressLists`).
// TokenReview and SubjectAccessReview (non-resource paths): answered from `tokens` and `nonResourceGrants`.
// Not served: label selectors, writes over HTTP — except
// events.k8s.io/v1 Events, which the daemon writes: POST creates (409 AlreadyExists on a taken name,
// 422 when required fields are missing), PATCH applies a JSON Patch (add/replace) or a merge patch.
//
// Hostile WatchList servers (hostileWatchList): one endless line, endless ADDED events, silence, garbage; and
// endlessLine() on the open watches. The paged lists stay honest, so a client can fall back to them.
//
// Test controls: create/update/delete/apply, dropWatches, compact, stop/start (same port),
// holdLists (delay a resource's list until released), holdInitialEventsEnd, failRequests, truncateLists (a list cut off
// halfway), and a `requests` log.

import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** A scripted answer to ClusterNetworkPolicy discovery: the resource listed, the group-version without it, or this status. */
export type DiscoveryAnswer = 'listed' | 'absent' | number;

export type Resource = 'namespaces' | 'pods' | 'nodes' | 'networkpolicies' | 'clusternetworkpolicies';

interface ResourceInfo {
  readonly kind: string;
  readonly apiVersion: string;
  readonly prefix: string;
  readonly namespaced: boolean;
}

export const RESOURCES: { readonly [R in Resource]: ResourceInfo } = {
  namespaces: { kind: 'Namespace', apiVersion: 'v1', prefix: '/api/v1', namespaced: false },
  pods: { kind: 'Pod', apiVersion: 'v1', prefix: '/api/v1', namespaced: true },
  nodes: { kind: 'Node', apiVersion: 'v1', prefix: '/api/v1', namespaced: false },
  networkpolicies: { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', prefix: '/apis/networking.k8s.io/v1', namespaced: true },
  clusternetworkpolicies: {
    kind: 'ClusterNetworkPolicy',
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    prefix: '/apis/policy.networking.k8s.io/v1alpha2',
    namespaced: false,
  },
};

const CNP_DISCOVERY = '/apis/policy.networking.k8s.io/v1alpha2';

const RESOURCE_OF_KIND: Readonly<Record<string, Resource>> = Object.fromEntries(
  Object.entries(RESOURCES).map(([r, info]) => [info.kind, r as Resource]),
);

/** A Kubernetes object as JSON. Only metadata.name (and namespace) are required by the fake. */
export interface KubeObject {
  readonly kind?: string;
  readonly apiVersion?: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [k: string]: unknown };
  readonly [k: string]: unknown;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface StoredEvent {
  readonly rv: number;
  readonly resource: Resource;
  readonly type: EventType;
  readonly object: KubeObject;
  /** The object before this event (MODIFIED, DELETED): field-selected watches compare both. */
  readonly prev?: KubeObject | undefined;
}

interface Watcher {
  readonly resource: Resource;
  readonly namespace: string | undefined;
  readonly bookmarks: boolean;
  readonly fields: FieldSelector;
  readonly res: ServerResponse;
}

/** A parsed `fieldSelector`: every requirement must hold. */
type FieldSelector = readonly { readonly field: string; readonly equal: boolean; readonly value: string }[];

/** Pod field labels the API server accepts (pkg/apis/core/v1/conversion.go; spec.hostNetwork since 1.28). */
export const POD_FIELD_LABELS = [
  'metadata.name',
  'metadata.namespace',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.schedulerName',
  'spec.serviceAccountName',
  'spec.hostNetwork',
  'status.phase',
  'status.podIP',
  'status.podIPs',
  'status.nominatedNodeName',
] as const;

/** The annotation on the BOOKMARK that ends a WatchList's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/**
 * How a hostile server answers a WatchList request (`sendInitialEvents=true`): 'endless-line' streams one
 * line that never ends, 'endless-events' ADDED events of new pods forever, 'silence' accepts the request and
 * never answers, 'garbage' sends a line that is not an event and keeps the stream open.
 */
export type HostileStream = 'endless-line' | 'endless-events' | 'silence' | 'garbage';

export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly resource: Resource | undefined;
  readonly watch: boolean;
}

export interface FakeApiServerOptions {
  /** How many events the watch history keeps before old resourceVersions become 410 Gone. */
  readonly historyLimit?: number;
  /** Send a BOOKMARK to bookmark-enabled watches this often (0: only when bookmark() is called). */
  readonly bookmarkIntervalMs?: number;
  /** Serve the ClusterNetworkPolicy CRD from the start (default: not installed, 404 like a bare cluster). */
  readonly clusterNetworkPolicyCrd?: boolean;
  /**
   * The WatchList feature gate (default off, as before Kubernetes 1.32): serve `sendInitialEvents=true`.
   * 'ignored': accept and ignore the WatchList parameters (a plain watch, no bookmark), as a proxy that drops
   * them or a server before 1.19 would.
   */
  readonly watchList?: boolean | 'ignored';
  /** Pod field labels accepted in field selectors (default POD_FIELD_LABELS); fewer emulate an older server. */
  readonly podFieldLabels?: readonly string[];
  /**
   * gzip list responses over 128 KiB for clients that accept it, as the API server does (APIResponseCompression,
   * on by default since 1.16; get and list only, never watch streams). Default off.
   */
  readonly compressLists?: boolean;
}

export class FakeApiServer {
  /** Every request served, in arrival order. */
  readonly requests: RequestRecord[] = [];
  /** Resources of the watches answered with 410 Gone, in order. */
  readonly expiredWatches: Resource[] = [];
  private readonly store = new Map<Resource, Map<string, KubeObject>>(
    (Object.keys(RESOURCES) as Resource[]).map((r) => [r, new Map<string, KubeObject>()]),
  );
  private history: StoredEvent[] = [];
  /** Watches may start from any resourceVersion ≥ horizon; older ones get 410. */
  private horizon = 0;
  private rv = 1;
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly eventStore = new Map<string, KubeObject>();
  /** Paged lists in progress: the objects of their first page's snapshot, by the id their continue token carries. */
  private readonly pagedLists = new Map<string, readonly KubeObject[]>();
  private pagedListIds = 0;
  private readonly held = new Map<Resource, Promise<void>>();
  private readonly failures = new Map<Resource, { status: number; remaining: number }>();
  private readonly truncations = new Map<Resource, number>();
  private readonly corrupt = new Set<Resource>();
  private readonly heldEnds = new Map<Resource, Promise<void>>();
  private readonly hostile = new Map<Resource, HostileStream>();
  private readonly discoveryScript: DiscoveryAnswer[] = [];
  private readonly podFieldLabels: ReadonlySet<string>;
  private readonly compressLists: boolean;
  private server: Server | undefined;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private portNumber = 0;
  private closedBytes = 0;
  private readonly historyLimit: number;
  private readonly bookmarkIntervalMs: number;

  /** Whether the ClusterNetworkPolicy CRD is installed. */
  crdInstalled: boolean;
  /** Whether WatchList (`sendInitialEvents`) is served; may be switched while running. */
  watchList: boolean | 'ignored';

  constructor(opts: FakeApiServerOptions = {}) {
    this.crdInstalled = opts.clusterNetworkPolicyCrd ?? false;
    this.historyLimit = opts.historyLimit ?? 1000;
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 0;
    this.watchList = opts.watchList ?? false;
    this.podFieldLabels = new Set(opts.podFieldLabels ?? POD_FIELD_LABELS);
    this.compressLists = opts.compressLists ?? false;
  }

  get port(): number {
    return this.portNumber;
  }

  get url(): string {
    return `http://127.0.0.1:${this.portNumber}`;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Writes `<dir>/kubeconfig` pointing at this server; returns its path. */
  writeKubeconfig(dir: string): string {
    return writeKubeconfig(this, dir);
  }

  /** Bytes written to clients so far (HTTP headers and bodies, lists and watch streams): the API load. */
  get bytesSent(): number {
    let open = 0;
    for (const socket of this.sockets) open += socket.bytesWritten;
    return this.closedBytes + open;
  }

  /** Open watch connections, per resource (tests wait on this to know informers are watching). */
  watchCount(resource?: Resource): number {
    return [...this.watchers].filter((w) => resource === undefined || w.resource === resource).length;
  }

  /** Listens on 127.0.0.1 (a free port the first time, the same port after a stop()). */
  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((req, res) => void this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => {
        this.closedBytes += socket.bytesWritten;
        this.sockets.delete(socket);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.portNumber, '127.0.0.1', () => resolve());
    });
    this.portNumber = (server.address() as { port: number }).port;
    this.server = server;
    if (this.bookmarkIntervalMs > 0) this.bookmarkTimer = setInterval(() => this.bookmark(), this.bookmarkIntervalMs);
  }

  /** Closes the listener and every connection abruptly, as a crashed API server would. State is kept. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    clearInterval(this.bookmarkTimer);
    this.watchers.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  // --- object store ---------------------------------------------------------------------------

  create(obj: KubeObject): KubeObject {
    const { resource, key } = this.locate(obj);
    if (this.store.get(resource)!.has(key)) throw new Error(`${resource} ${key} already exists`);
    return this.write(resource, key, 'ADDED', obj, { uid: randomUUID(), creationTimestamp: new Date().toISOString() });
  }

  update(obj: KubeObject): KubeObject {
    const { resource, key } = this.locate(obj);
    const old = this.store.get(resource)!.get(key);
    if (!old) throw new Error(`${resource} ${key} does not exist`);
    return this.write(resource, key, 'MODIFIED', obj, { uid: old.metadata['uid'], creationTimestamp: old.metadata['creationTimestamp'] });
  }

  /** create or update. */
  apply(obj: KubeObject): KubeObject {
    const { resource, key } = this.locate(obj);
    return this.store.get(resource)!.has(key) ? this.update(obj) : this.create(obj);
  }

  delete(obj: Pick<KubeObject, 'kind' | 'metadata'>): void {
    const { resource, key } = this.locate(obj);
    const old = this.store.get(resource)!.get(key);
    if (!old) throw new Error(`${resource} ${key} does not exist`);
    this.store.get(resource)!.delete(key);
    // The DELETED event carries the object as it was, stamped with the deletion's resourceVersion.
    const rv = ++this.rv;
    this.record({
      rv,
      resource,
      type: 'DELETED',
      object: { ...old, metadata: { ...old.metadata, resourceVersion: String(rv) } },
      prev: old,
    });
  }

  get(kind: string, name: string, namespace?: string): KubeObject | undefined {
    const { resource, key } = this.locate({ kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
    return this.store.get(resource)!.get(key);
  }

  installCrd(): void {
    this.crdInstalled = true;
  }

  /** Removing a CRD removes its objects; open watches end. */
  uninstallCrd(): void {
    this.crdInstalled = false;
    this.store.get('clusternetworkpolicies')!.clear();
    for (const w of [...this.watchers]) {
      if (w.resource !== 'clusternetworkpolicies') continue;
      w.res.end();
      this.watchers.delete(w);
    }
  }

  // --- failure injection ----------------------------------------------------------------------

  /** The next ClusterNetworkPolicy discovery requests get these answers, in order; then the truth again. */
  scriptDiscovery(...answers: DiscoveryAnswer[]): void {
    this.discoveryScript.push(...answers);
  }

  /** Scripted discovery answers not yet given. */
  get discoveryScriptLeft(): number {
    return this.discoveryScript.length;
  }

  /** Closes every watch connection abruptly (socket destroyed mid-stream). */
  dropWatches(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  /** Forgets the event history: the next watch from any resourceVersion before now gets 410 Gone. */
  compact(): void {
    this.history = [];
    this.horizon = this.rv;
  }

  /** List requests for the resource wait until the returned function is called. */
  holdLists(resource: Resource): () => void {
    let release!: () => void;
    this.held.set(resource, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.held.delete(resource);
      release();
    };
  }

  /** WatchList streams of the resource send their initial events but hold the end BOOKMARK until released. */
  holdInitialEventsEnd(resource: Resource): () => void {
    let release!: () => void;
    this.heldEnds.set(resource, new Promise<void>((resolve) => (release = resolve)));
    return () => {
      this.heldEnds.delete(resource);
      release();
    };
  }

  /** The next `times` requests (list or watch) for the resource get this HTTP status and a Status body. */
  failRequests(resource: Resource, status: number, times = 1): void {
    this.failures.set(resource, { status, remaining: times });
  }

  /** The next `times` lists of the resource fail halfway: 200, half the body, then the connection is cut. */
  truncateLists(resource: Resource, times = 1): void {
    this.truncations.set(resource, times);
  }

  /**
   * The next event written for the resource reaches open watches as a corrupted line (cut in half), as a
   * broken proxy or a truncated chunk would deliver it. The event is still stored and in the history.
   */
  corruptNextEvent(resource: Resource): void {
    this.corrupt.add(resource);
  }

  /** Writes one raw line (no JSON encoding) to every open watch of the resource. */
  sendRawLine(resource: Resource, line: string): void {
    for (const w of this.watchers) if (w.resource === resource) w.res.write(`${line}\n`);
  }

  /** WatchList requests for the resource (all resources when none is named) are answered as `mode` says; undefined: honestly again. */
  hostileWatchList(mode: HostileStream | undefined, resource?: Resource): void {
    for (const r of resource ? [resource] : (Object.keys(RESOURCES) as Resource[])) {
      if (mode) this.hostile.set(r, mode);
      else this.hostile.delete(r);
    }
  }

  /** Every open watch of the resource gets one line that never ends (as fast as the client reads). */
  endlessLine(resource: Resource): void {
    for (const w of this.watchers) if (w.resource === resource) pump(w.res, () => ENDLESS_CHUNK);
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.watchers) {
      if (!w.bookmarks) continue;
      const info = RESOURCES[w.resource];
      send(w.res, {
        type: 'BOOKMARK',
        object: { kind: info.kind, apiVersion: info.apiVersion, metadata: { resourceVersion: String(this.rv) } },
      });
    }
  }

  // --- internals ------------------------------------------------------------------------------

  private locate(obj: Pick<KubeObject, 'kind' | 'metadata'>): { resource: Resource; key: string } {
    const resource = obj.kind ? RESOURCE_OF_KIND[obj.kind] : undefined;
    if (!resource) throw new Error(`fake API server does not serve kind ${String(obj.kind)}`);
    if (!RESOURCES[resource].namespaced) return { resource, key: obj.metadata.name };
    return { resource, key: `${obj.metadata.namespace ?? 'default'}/${obj.metadata.name}` };
  }

  private write(resource: Resource, key: string, type: EventType, obj: KubeObject, keep: Record<string, unknown>): KubeObject {
    const info = RESOURCES[resource];
    const rv = ++this.rv;
    const stored: KubeObject = structuredClone({
      ...obj,
      kind: info.kind,
      apiVersion: info.apiVersion,
      metadata: {
        ...obj.metadata,
        ...(info.namespaced ? { namespace: obj.metadata.namespace ?? 'default' } : {}),
        ...keep,
        resourceVersion: String(rv),
      },
    });
    const prev = this.store.get(resource)!.get(key);
    this.store.get(resource)!.set(key, stored);
    this.record({ rv, resource, type, object: stored, prev });
    return stored;
  }

  private record(event: StoredEvent): void {
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.horizon = dropped[dropped.length - 1]!.rv;
    }
    const corrupt = this.corrupt.delete(event.resource);
    for (const w of this.watchers) {
      if (w.resource !== event.resource || !matchesNamespace(event.object, w.namespace)) continue;
      const seen = watchEventFor(event, w.fields);
      if (!seen) continue;
      if (corrupt) {
        const text = JSON.stringify(seen);
        w.res.write(`${text.slice(0, Math.floor(text.length / 2))}\n`);
      } else send(w.res, seen);
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const route = parseRoute(url.pathname);
    const watch = query['watch'] === 'true' || query['watch'] === '1';
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query, resource: route?.resource, watch });
    if (req.method === 'POST' && url.pathname === '/apis/authentication.k8s.io/v1/tokenreviews') return this.serveTokenReview(req, res);
    if (req.method === 'POST' && url.pathname === '/apis/authorization.k8s.io/v1/subjectaccessreviews')
      return this.serveAccessReview(req, res);
    const eventRoute = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(url.pathname);
    if (eventRoute)
      return this.serveEventWrite(req, res, decodeURIComponent(eventRoute[1]!), eventRoute[2] && decodeURIComponent(eventRoute[2]));
    if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', `the fake API server only serves GET`);
    const scripted = url.pathname === CNP_DISCOVERY ? this.discoveryScript.shift() : undefined;
    if (typeof scripted === 'number')
      return status(res, scripted, scripted === 404 ? 'NotFound' : 'ServiceUnavailable', `scripted discovery answer (${url.pathname})`);
    if (scripted === 'absent') {
      return json(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: 'policy.networking.k8s.io/v1alpha2',
        resources: [],
      });
    }
    if (url.pathname === CNP_DISCOVERY && (scripted === 'listed' || this.crdInstalled)) {
      return json(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: 'policy.networking.k8s.io/v1alpha2',
        resources: [
          {
            name: 'clusternetworkpolicies',
            singularName: 'clusternetworkpolicy',
            namespaced: false,
            kind: 'ClusterNetworkPolicy',
            shortNames: ['cnp'],
            verbs: ['get', 'list', 'watch'],
          },
        ],
      });
    }
    if (route?.resource === 'clusternetworkpolicies' && !this.crdInstalled) {
      return status(res, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    }
    if (!route) return status(res, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    const failure = this.failures.get(route.resource);
    if (failure && failure.remaining > 0) {
      if (--failure.remaining === 0) this.failures.delete(route.resource);
      return status(res, failure.status, 'InternalError', `injected failure ${failure.status}`);
    }
    if (route.name !== undefined) return this.serveGet(res, route.resource, route.namespace, route.name);
    const fields = this.parseFields(route.resource, query['fieldSelector'] ?? '');
    if (typeof fields === 'string') return status(res, 400, 'BadRequest', fields);
    if (watch) return this.serveWatch(req, res, route.resource, route.namespace, query, fields);
    await this.held.get(route.resource);
    if (!this.server) return; // stopped while held
    const truncate = this.truncations.get(route.resource) ?? 0;
    if (truncate > 0) {
      if (truncate === 1) this.truncations.delete(route.resource);
      else this.truncations.set(route.resource, truncate - 1);
      return this.serveList(res, route.resource, route.namespace, fields, query, true);
    }
    const gzip = this.compressLists && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
    return this.serveList(res, route.resource, route.namespace, fields, query, false, gzip);
  }

  /** Bearer tokens the TokenReview endpoint knows, and whose they are. */
  readonly tokens = new Map<string, { readonly username: string; readonly groups: readonly string[] }>();
  /** RBAC for non-resource paths as SubjectAccessReview answers it: `user verb path` granted. */
  readonly nonResourceGrants = new Set<string>();
  /** TokenReviews and SubjectAccessReviews answered. */
  reviews = 0;

  private async serveTokenReview(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(req)) as { spec?: { token?: string } };
    this.reviews++;
    const user = this.tokens.get(body.spec?.token ?? '');
    return json(res, 201, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: body.spec,
      status: user ? { authenticated: true, user: { username: user.username, groups: user.groups } } : { authenticated: false },
    });
  }

  private async serveAccessReview(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(req)) as { spec?: { user?: string; nonResourceAttributes?: { verb?: string; path?: string } } };
    this.reviews++;
    const attrs = body.spec?.nonResourceAttributes;
    const allowed = attrs !== undefined && this.nonResourceGrants.has(`${body.spec?.user} ${attrs.verb} ${attrs.path}`);
    return json(res, 201, { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: body.spec, status: { allowed } });
  }

  /** Events written through the API (events.k8s.io/v1), in creation order. */
  events(): KubeObject[] {
    return [...this.eventStore.values()];
  }

  private async serveEventWrite(req: IncomingMessage, res: ServerResponse, namespace: string, name: string | undefined): Promise<void> {
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return status(res, 400, 'BadRequest', 'body is not JSON');
    }
    if (req.method === 'POST' && name === undefined) {
      const event = body as KubeObject;
      const missing = ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason', 'type', 'regarding'].filter(
        (k) => event[k] === undefined,
      );
      if (!event.metadata?.name || missing.length > 0)
        return status(res, 422, 'Invalid', `Event is invalid: missing ${['metadata.name', ...missing].join(', ')}`);
      if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(String(event['eventTime'])))
        return status(res, 422, 'Invalid', `eventTime must be a MicroTime, got ${String(event['eventTime'])}`);
      const key = `${namespace}/${event.metadata.name}`;
      if (this.eventStore.has(key))
        return status(res, 409, 'AlreadyExists', `events.events.k8s.io "${event.metadata.name}" already exists`);
      const stored = { ...event, metadata: { ...event.metadata, namespace, resourceVersion: String(++this.rv) } };
      this.eventStore.set(key, stored);
      return json(res, 201, stored);
    }
    if (req.method === 'PATCH' && name !== undefined) {
      const key = `${namespace}/${name}`;
      const current = this.eventStore.get(key);
      if (!current) return status(res, 404, 'NotFound', `events.events.k8s.io "${name}" not found`);
      let patched: Record<string, unknown> = structuredClone(current) as Record<string, unknown>;
      if (Array.isArray(body)) {
        for (const op of body as { op: string; path: string; value: unknown }[]) {
          const field = /^\/([A-Za-z]+)$/.exec(op.path)?.[1];
          if ((op.op !== 'add' && op.op !== 'replace') || !field)
            return status(res, 422, 'Invalid', `unsupported patch op ${JSON.stringify(op)}`);
          if (op.op === 'replace' && !(field in patched)) return status(res, 422, 'Invalid', `replace of missing ${op.path}`);
          patched[field] = op.value;
        }
      } else {
        patched = { ...patched, ...(body as Record<string, unknown>) };
      }
      const stored: KubeObject = { ...patched, metadata: { ...current.metadata, resourceVersion: String(++this.rv) } };
      this.eventStore.set(key, stored);
      return json(res, 200, stored);
    }
    return status(res, 405, 'MethodNotAllowed', `${req.method} is not served for events`);
  }

  private serveGet(res: ServerResponse, resource: Resource, namespace: string | undefined, name: string): void {
    const key = RESOURCES[resource].namespaced ? `${namespace}/${name}` : name;
    const obj = this.store.get(resource)!.get(key);
    if (!obj) return status(res, 404, 'NotFound', `${resource} "${name}" not found`);
    json(res, 200, obj);
  }

  /**
   * A list, paged when the client sends `limit`: the `continue` token is `<offset>:<resourceVersion>:<id>` and
   * every page is served from the first page's snapshot and reports its resourceVersion, as the API server's
   * consistent snapshot does. The snapshot is kept until its last page is served; a token whose snapshot is
   * gone pages over the current objects (a write between pages then shows up early; watches from that
   * resourceVersion replay it anyway). Kept rather than filtered again per page: at 100,000 pods, filtering
   * every object for each of 200 pages made this fake, not the client, the slowest part of a start-up.
   */
  private serveList(
    res: ServerResponse,
    resource: Resource,
    namespace: string | undefined,
    fields: FieldSelector,
    query: Record<string, string> = {},
    truncate = false,
    gzip = false,
  ): void {
    const info = RESOURCES[resource];
    const limit = Number(query['limit'] ?? 0);
    const [offsetText, rvText, idText] = (query['continue'] ?? '').split(':');
    const id = idText || String(++this.pagedListIds);
    const all = this.pagedLists.get(id) ?? this.listed(resource, namespace, fields);
    const offset = Number(offsetText || 0);
    const rv = rvText || String(this.rv);
    const items = limit > 0 ? all.slice(offset, offset + limit) : all;
    const more = limit > 0 && offset + limit < all.length;
    this.pagedLists.delete(id);
    if (more) this.pagedLists.set(id, all);
    // Lists a client gave up on halfway are not kept for ever: the oldest go first.
    for (const old of this.pagedLists.keys()) if (this.pagedLists.size > 16) this.pagedLists.delete(old);
    const metadata = { resourceVersion: rv, ...(more ? { continue: `${offset + limit}:${rv}:${id}` } : {}) };
    const body = { kind: `${info.kind}List`, apiVersion: info.apiVersion, metadata, items };
    if (gzip) {
      const text = JSON.stringify(body);
      // The API server's threshold (apiserver filters/compression.go defaultGzipThresholdBytes).
      if (Buffer.byteLength(text) > 128 * 1024) {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        return void res.end(gzipSync(text, { level: 4 }));
      }
    }
    if (!truncate) return json(res, 200, body);
    // Chunked, so the client cannot know the length: it sees a body that stops mid-object.
    const text = JSON.stringify(body);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.write(text.slice(0, Math.floor(text.length / 2)), () => res.socket?.destroy());
  }

  /**
   * The objects a list returns, in key order: the API server reads a list from etcd (or its watch cache) by
   * key, `<namespace>/<name>` under the resource's prefix.
   */
  private listed(resource: Resource, namespace: string | undefined, fields: FieldSelector): KubeObject[] {
    const keyed: [string, KubeObject][] = [];
    for (const o of this.store.get(resource)!.values())
      if (matchesNamespace(o, namespace) && matchesFields(o, fields)) keyed.push([`${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]);
    return keyed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o);
  }

  private async serveWatch(
    req: IncomingMessage,
    res: ServerResponse,
    resource: Resource,
    namespace: string | undefined,
    query: Record<string, string>,
    fields: FieldSelector,
  ): Promise<void> {
    const bookmarks = query['allowWatchBookmarks'] === 'true';
    const ignored = this.watchList === 'ignored';
    const initialEvents = ignored ? undefined : query['sendInitialEvents'];
    const match = ignored ? undefined : query['resourceVersionMatch'];
    if (initialEvents !== undefined || match !== undefined) {
      const problems = watchListProblems(initialEvents, match, this.watchList === true);
      if (problems.length > 0) return invalidListOptions(res, problems);
    }
    const hostile = initialEvents === 'true' ? this.hostile.get(resource) : undefined;
    if (hostile) return this.serveHostile(res, resource, hostile);
    const visible = (o: KubeObject) => matchesNamespace(o, namespace) && matchesFields(o, fields);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    const from = query['resourceVersion'] ?? '';
    if (initialEvents === 'true') {
      // WatchList: the state now (this fake always has the newest, which is "not older than" any asked-for
      // version), as ADDED events, then the bookmark that says the state is complete.
      const rv = this.rv;
      for (const o of this.store.get(resource)!.values()) if (visible(o)) send(res, { type: 'ADDED', object: o });
      const held = this.heldEnds.get(resource);
      if (held) {
        // Live events meanwhile are not lost: they are replayed from the history after the bookmark.
        await held;
        if (res.writableEnded || res.destroyed) return;
      }
      if (bookmarks) {
        const info = RESOURCES[resource];
        send(res, {
          type: 'BOOKMARK',
          object: {
            kind: info.kind,
            apiVersion: info.apiVersion,
            metadata: { resourceVersion: String(rv), annotations: { [INITIAL_EVENTS_END]: 'true' } },
          },
        });
      }
      for (const e of this.history) if (e.rv > rv && e.resource === resource) sendEvent(res, e, namespace, fields);
    } else if (from === '' || from === '0') {
      // "Start at most recent": synthetic ADDED events for the current state first.
      for (const o of this.store.get(resource)!.values()) if (visible(o)) send(res, { type: 'ADDED', object: o });
    } else {
      const n = Number(from);
      if (!Number.isInteger(n) || n < this.horizon) {
        this.expiredWatches.push(resource);
        send(res, {
          type: 'ERROR',
          object: {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message: `too old resource version: ${from} (${this.horizon})`,
            reason: 'Expired',
            code: 410,
          },
        });
        res.end();
        return;
      }
      for (const e of this.history) if (e.rv > n && e.resource === resource) sendEvent(res, e, namespace, fields);
    }
    const watcher: Watcher = { resource, namespace, bookmarks, fields, res };
    this.watchers.add(watcher);
    const timeout = Number(query['timeoutSeconds']);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    const done = () => {
      clearTimeout(timer);
      this.watchers.delete(watcher);
    };
    res.on('close', done);
    req.on('close', done);
  }

  private serveHostile(res: ServerResponse, resource: Resource, mode: HostileStream): void {
    if (mode === 'silence') return;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    if (mode === 'garbage') return void res.write('<html><body>502 Bad Gateway</body></html>\n');
    if (mode === 'endless-line') {
      res.write('{"type":"ADDED","object":{"metadata":{"name":"');
      return pump(res, () => ENDLESS_CHUNK);
    }
    // Endless events: new pods, 200 to a write, each with a name never sent before.
    const info = RESOURCES[resource];
    let n = 0;
    pump(res, () => {
      let text = '';
      for (let i = 0; i < 200; i++, n++) {
        const object = {
          kind: info.kind,
          apiVersion: info.apiVersion,
          metadata: { name: `flood-${n}`, namespace: 'flood', uid: `uid-${n}`, resourceVersion: String(this.rv), labels: { app: 'flood' } },
          spec: { nodeName: 'elsewhere', containers: [{ name: 'c' }] },
          status: { phase: 'Running', podIP: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` },
        };
        text += `${JSON.stringify({ type: 'ADDED', object })}\n`;
      }
      return text;
    });
  }

  /** The parsed selector, or the 400 message the real server gives for a label it does not accept. */
  private parseFields(resource: Resource, text: string): FieldSelector | string {
    const accepted =
      resource === 'pods'
        ? this.podFieldLabels
        : new Set(['metadata.name', ...(RESOURCES[resource].namespaced ? ['metadata.namespace'] : [])]);
    const out: { field: string; equal: boolean; value: string }[] = [];
    for (const term of text.split(',').filter((t) => t !== '')) {
      const m = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
      if (!m) return `invalid field selector "${text}": ${term}`;
      const field = m[1]!;
      if (!accepted.has(field)) {
        const gvr = `${RESOURCES[resource].prefix.replace(/^\/apis?\//, '')}, Resource=${resource}`;
        return `Unable to find "${gvr.startsWith('v1') ? `/${gvr}` : gvr}" that match label selector "", field selector "${text}": field label not supported: ${field}`;
      }
      out.push({ field, equal: m[2] !== '!=', value: m[3]! });
    }
    return out;
  }
}

/** The fields a selector can name, as the server renders them (pod strategy ToSelectableFields). */
function selectableFields(obj: KubeObject): Record<string, string> {
  const spec = (obj['spec'] ?? {}) as Record<string, unknown>;
  const status = (obj['status'] ?? {}) as Record<string, unknown>;
  const podIPs = status['podIPs'] as { ip?: string }[] | undefined;
  return {
    'metadata.name': obj.metadata.name,
    'metadata.namespace': obj.metadata.namespace ?? '',
    'spec.nodeName': String(spec['nodeName'] ?? ''),
    'spec.restartPolicy': String(spec['restartPolicy'] ?? ''),
    'spec.schedulerName': String(spec['schedulerName'] ?? ''),
    'spec.serviceAccountName': String(spec['serviceAccountName'] ?? ''),
    'spec.hostNetwork': String(spec['hostNetwork'] === true),
    'status.phase': String(status['phase'] ?? ''),
    'status.podIP': podIPs?.[0]?.ip ?? String(status['podIP'] ?? ''),
    'status.nominatedNodeName': String(status['nominatedNodeName'] ?? ''),
  };
}

function matchesFields(obj: KubeObject, fields: FieldSelector): boolean {
  if (fields.length === 0) return true;
  const values = selectableFields(obj);
  return fields.every((f) => (values[f.field] === f.value) === f.equal);
}

/**
 * What a watch with this selector sees of a stored event (the watch cache's convertToWatchEvent): ADDED
 * when the object starts matching, MODIFIED while it matches, DELETED (its previous state, at the event's
 * resourceVersion) when it stops matching or is deleted; nothing when it matched neither before nor after.
 */
function watchEventFor(event: StoredEvent, fields: FieldSelector): { type: EventType; object: KubeObject } | undefined {
  if (fields.length === 0) return { type: event.type, object: event.object };
  const now = event.type !== 'DELETED' && matchesFields(event.object, fields);
  const before = event.prev !== undefined && matchesFields(event.prev, fields);
  if (now) return { type: before ? 'MODIFIED' : 'ADDED', object: event.object };
  if (!before) return undefined;
  return { type: 'DELETED', object: { ...event.prev!, metadata: { ...event.prev!.metadata, resourceVersion: String(event.rv) } } };
}

function sendEvent(res: ServerResponse, e: StoredEvent, namespace: string | undefined, fields: FieldSelector): void {
  if (!matchesNamespace(e.object, namespace)) return;
  const seen = watchEventFor(e, fields);
  if (seen) send(res, seen);
}

/** validateWatchOptions (apimachinery meta/internalversion/validation) for the WatchList parameters. */
function watchListProblems(initialEvents: string | undefined, match: string | undefined, enabled: boolean): string[] {
  const problems: string[] = [];
  if (initialEvents !== undefined) {
    if (match !== 'NotOlderThan')
      problems.push('resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    if (!enabled)
      problems.push('sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled');
  }
  if (match !== undefined) {
    if (initialEvents === undefined)
      problems.push('resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
    if (match !== 'NotOlderThan') problems.push(`resourceVersionMatch: Unsupported value: "${match}": supported values: "NotOlderThan"`);
  }
  return problems;
}

/** 422 Invalid for ListOptions, shaped as errors.NewInvalid renders it. */
function invalidListOptions(res: ServerResponse, problems: readonly string[]): void {
  const message = `ListOptions.meta.k8s.io "" is invalid: ${problems.length === 1 ? problems[0] : `[${problems.join(', ')}]`}`;
  json(res, 422, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Invalid',
    details: {
      group: 'meta.k8s.io',
      kind: 'ListOptions',
      causes: problems.map((p) => ({
        reason: 'FieldValueForbidden',
        message: p.slice(p.indexOf(': ') + 2),
        field: p.slice(0, p.indexOf(':')),
      })),
    },
    code: 422,
  });
}

interface Route {
  readonly resource: Resource;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

/** `/api/v1/pods`, `/api/v1/namespaces/ns/pods[/name]`, `/api/v1/namespaces[/name]`, `/apis/networking.k8s.io/v1/…`. */
function parseRoute(path: string): Route | undefined {
  for (const [resource, info] of Object.entries(RESOURCES) as [Resource, ResourceInfo][]) {
    if (!path.startsWith(`${info.prefix}/`)) continue;
    const parts = path
      .slice(info.prefix.length + 1)
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent);
    if (parts[0] === resource && parts.length <= 2) return { resource, namespace: undefined, name: parts[1] };
    if (info.namespaced && parts[0] === 'namespaces' && parts[2] === resource && parts.length <= 4) {
      return { resource, namespace: parts[1], name: parts[3] };
    }
  }
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function matchesNamespace(obj: KubeObject, namespace: string | undefined): boolean {
  return namespace === undefined || obj.metadata.namespace === namespace;
}

const ENDLESS_CHUNK = 'a'.repeat(64 * 1024);

/** Writes `next()` for as long as the response is open, as fast as the client reads (waits for 'drain'). */
function pump(res: ServerResponse, next: () => string): void {
  const more = (): void => {
    while (!res.writableEnded && !res.destroyed) {
      if (!res.write(next())) return void res.once('drain', more);
    }
  };
  more();
}

function send(res: ServerResponse, event: unknown): void {
  if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(event)}\n`);
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** Writes `<dir>/kubeconfig` pointing at the server and returns its path. */
export function writeKubeconfig(server: FakeApiServer, dir: string): string {
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      '  cluster:',
      `    server: ${server.url}`,
      // client-node refuses http:// unless TLS verification is skipped (config.js createAgent).
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: fake',
      '  user: {token: fake-token}',
      'contexts:',
      '- name: fake',
      '  context: {cluster: fake, user: fake}',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  return path;
}
