// The observability endpoints on the metrics port: /healthz (liveness), /readyz (readiness),
// /metrics (Prometheus text) and /flows. Plain node:http: four read-only routes do not need a framework.
//
// /flows and /learned name pods, addresses and policies: a client other than the node itself (loopback) must prove who
// it is and be allowed (`authorize`: TokenReview and SubjectAccessReview, as kube-rbac-proxy does). On a
// node address, the port is also served on loopback, where the kubelet probes from.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseListenAddress, type ListenAddress } from '../config/listen-address.js';
import { nullLogger, type Logger } from '../log.js';
import { ConnectionAdmission, isLoopback, type AdmissionLimits } from './connection-admission.js';
import type { Check, HealthChecks } from './health.js';
import type { Metrics } from './metrics.js';
import type { ConnectionRefusal } from './metrics-hostile.js';
import type { FlowsAnswer } from './flows-query.js';
import type { LearnedAnswer } from './learned-answer.js';

/** `/learned?pod=&address=`: what the DNS agent learned for one pod and destination; `{ error }` for a bad query. */
export type LearnedHandler = (query: URLSearchParams) => Promise<LearnedAnswer | { readonly error: string }>;

export interface ObserveServerOptions {
  readonly health: HealthChecks;
  readonly metrics: Pick<Metrics, 'render' | 'contentType'>;
  readonly logger?: Logger;
  /**
   * `/flows?pod=&namespace=&policy=&since=`: recent denied flows as JSON (`netfence drops`); 404 when absent,
   * 400 (with the reason as JSON) for a query that cannot be read.
   */
  readonly flows?: (query: URLSearchParams) => FlowsAnswer;
  /** `/learned` (ClusterNetworkPolicy `domainNames`); also set later with serveLearned. 404 while absent. */
  readonly learned?: LearnedHandler;
  /** Bounds on what clients may hold; defaults in CONNECTION_LIMITS. */
  readonly limits?: Partial<ConnectionLimits>;
  /** Peers that may use the slots others cannot (default: loopback, where the kubelet probes from). */
  readonly isReservedPeer?: (address: string) => boolean;
  /** Told of every connection closed on arrival (logged once per thousand). */
  readonly onConnectionRefused?: (why: ConnectionRefusal) => void;
  /**
   * Decides a request for /flows from a peer other than loopback, from its bearer token (undefined: none
   * sent). Absent: such requests are refused (403), since nothing can say who is asking.
   */
  readonly authorize?: RequestAuthorizer;
  /** Told of every /flows or /learned request refused for want of authentication or authorisation. */
  readonly onAuthRefused?: (why: AuthRefusal) => void;
}

/** What a bearer token may do on a path: allowed, or why not (`unauthenticated`: 401, `forbidden`: 403, `error`: 503). */
export type AuthDecision =
  { readonly allowed: true; readonly user: string } | { readonly allowed: false; readonly why: AuthRefusal; readonly message: string };
export type AuthRefusal = 'unauthenticated' | 'forbidden' | 'error';
export type RequestAuthorizer = (
  token: string | undefined,
  request: { readonly verb: 'get'; readonly path: string },
) => Promise<AuthDecision>;

const AUTH_STATUS: { readonly [K in AuthRefusal]: number } = { unauthenticated: 401, forbidden: 403, error: 503 };

/** `maxConnections`: open connections at once (more are closed on arrival); probes and a scraper need a handful. */
export interface ConnectionLimits extends AdmissionLimits {
  /** A connection that sends or receives nothing for this long is closed (idle keep-alives, silent clients). */
  readonly idleMs: number;
  /** Time allowed to receive a request's headers, and the whole request. */
  readonly headersMs: number;
  readonly requestMs: number;
  /** How long a kept-alive connection may wait for its next request. */
  readonly keepAliveMs: number;
}

/**
 * Idle connections used to be kept forever: enough of them exhausted the daemon's file descriptors, and the
 * next iptables-restore could not be started. Every connection now has a bounded life and a bounded count,
 * so the descriptors the daemon needs for its own work stay free whatever clients do.
 */
export const CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 64,
  // A scraper keeps one or two connections; eight leave room for retries.
  maxPerPeer: 8,
  // The kubelet's two probes, with room for a slow one of each and for `netfence drops` run on the node.
  reservedForLoopback: 16,
  idleMs: 15_000,
  headersMs: 5_000,
  requestMs: 10_000,
  keepAliveMs: 5_000,
};

/** A host that already takes loopback connections (a wildcard, or loopback itself): no second listener is needed. */
function coversLoopback(host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::' || host === 'localhost' || isLoopback(host);
}

export class ObserveServer {
  private servers: Server[] = [];
  private readonly logger: Logger;
  private learned: LearnedHandler | undefined;
  /** Where the loopback listener bound, when the main address is a node address. */
  loopback: ListenAddress | undefined;

  constructor(private readonly options: ObserveServerOptions) {
    this.logger = options.logger ?? nullLogger;
    this.learned = options.learned;
  }

  /** Serves /learned from now on (the DNS agent starts after the server, which answers probes from the start). */
  serveLearned(handler: LearnedHandler): void {
    this.learned = handler;
  }

  /** Listens on `host:port` (port 0 picks a free one) and resolves to the address actually bound. */
  async start(listen: string | ListenAddress): Promise<ListenAddress> {
    if (this.servers.length > 0) throw new Error('observe server already started');
    const address = typeof listen === 'string' ? parseListenAddress(listen) : listen;
    if (!address) throw new Error(`listen address "${String(listen)}" is not host:port`);
    const bound = await this.listen(address);
    this.logger.info('serving /healthz /readyz /metrics', { address: bound.host, port: bound.port });
    // The kubelet probes 127.0.0.1 (deploy/daemonset.yaml): a node address alone would fail every probe.
    if (!coversLoopback(address.host)) {
      try {
        this.loopback = await this.listen({ host: '127.0.0.1', port: bound.port });
      } catch (err) {
        await this.stop();
        throw new Error(
          `listening on 127.0.0.1:${bound.port} beside ${address.host} (for the kubelet's probes): ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
      this.logger.info('also serving on loopback, for the kubelet probes', { address: this.loopback.host, port: this.loopback.port });
    }
    return bound;
  }

  private async listen(address: ListenAddress): Promise<ListenAddress> {
    const limits = { ...CONNECTION_LIMITS, ...this.options.limits };
    const server = createServer(
      {
        headersTimeout: limits.headersMs,
        requestTimeout: limits.requestMs,
        keepAliveTimeout: limits.keepAliveMs,
        connectionsCheckingInterval: 1_000,
      },
      (req, res) => void this.handle(req, res),
    );
    // Probes and scrapes are short; do not let a stuck client hold a socket forever. With no 'timeout'
    // listener the server destroys a socket that stays idle this long.
    server.timeout = limits.idleMs;
    const admission = new ConnectionAdmission(limits, this.options.isReservedPeer);
    let refused = 0;
    server.on('connection', (socket: Socket) => {
      const peer = socket.remoteAddress ?? '';
      const why = admission.admit(peer);
      if (why === undefined) return void socket.once('close', () => admission.release(peer));
      socket.destroy();
      this.options.onConnectionRefused?.(why);
      // Logged once per thousand, so a flood of connections cannot turn into a flood of log lines.
      if (refused++ % 1000 === 0)
        this.logger.warn('refusing connections past a limit', {
          why,
          peer,
          maxConnections: limits.maxConnections,
          maxPerPeer: limits.maxPerPeer,
          refused,
        });
    });
    // A client that sends garbage or vanishes mid-request is its own problem: close its socket quietly.
    server.on('clientError', (_err, socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // An empty host listens on every interface (both families where the kernel allows).
      const onListening = (): void => {
        server.off('error', reject);
        resolve();
      };
      if (address.host === '') server.listen(address.port, onListening);
      else server.listen(address.port, address.host, onListening);
    });
    server.on('error', (err) => this.logger.error('observe server error', { err }));
    this.servers.push(server);
    const bound = server.address() as AddressInfo;
    return { host: bound.address, port: bound.port };
  }

  async stop(): Promise<void> {
    const servers = this.servers;
    this.servers = [];
    this.loopback = undefined;
    for (const server of servers) {
      // Keep-alive connections (Prometheus keeps one) would otherwise hold close() open.
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    switch (path) {
      case '/healthz':
        return sendCheck(res, this.options.health.liveness());
      case '/readyz':
        return sendCheck(res, this.options.health.readiness());
      case '/startupz':
        return sendCheck(res, this.options.health.startup?.() ?? this.options.health.liveness());
      case '/metrics':
        try {
          const text = await this.options.metrics.render();
          return send(res, 200, text, { 'Content-Type': this.options.metrics.contentType });
        } catch (err) {
          this.logger.error('rendering metrics failed', { err });
          return send(res, 500, 'rendering metrics failed\n');
        }
      case '/flows': {
        if (!this.options.flows) return send(res, 404, 'flow log is off (flowLogs: false)\n');
        const refusal = await this.refusal(req, path);
        if (refusal) return sendRefusal(res, refusal);
        const answer = this.options.flows(url.searchParams);
        return send(res, 'error' in answer ? 400 : 200, `${JSON.stringify(answer)}\n`, { 'Content-Type': 'application/json' });
      }
      case '/learned': {
        const learned = this.learned;
        if (!learned) return send(res, 404, 'no DNS agent here (dry-run)\n');
        const refusal = await this.refusal(req, path);
        if (refusal) return sendRefusal(res, refusal);
        try {
          const answer = await learned(url.searchParams);
          return send(res, 'error' in answer ? 400 : 200, `${JSON.stringify(answer)}\n`, { 'Content-Type': 'application/json' });
        } catch (err) {
          this.logger.error('reading learned sets failed', { err });
          return send(res, 500, 'reading learned sets failed\n');
        }
      }
      default:
        return send(res, 404, 'not found: try /healthz, /readyz or /metrics\n');
    }
  }

  /** Why a request may not read `path`, or undefined: loopback (the node itself) always may. */
  private async refusal(req: IncomingMessage, path: string): Promise<{ why: AuthRefusal; message: string } | undefined> {
    if (isLoopback(req.socket.remoteAddress ?? '')) return undefined;
    const header = req.headers.authorization;
    const token = header !== undefined && /^Bearer \S+$/i.test(header) ? header.slice('Bearer '.length).trim() : undefined;
    let decision: AuthDecision;
    if (!this.options.authorize)
      decision = {
        allowed: false,
        why: 'forbidden',
        message: `${path} is served to loopback only: no API server to authenticate others with`,
      };
    else {
      try {
        decision = await this.options.authorize(token, { verb: 'get', path });
      } catch (err) {
        decision = { allowed: false, why: 'error', message: `cannot check who is asking: ${(err as Error).message}` };
      }
    }
    if (decision.allowed) return undefined;
    this.options.onAuthRefused?.(decision.why);
    return decision;
  }
}

function sendRefusal(res: ServerResponse, refusal: { why: AuthRefusal; message: string }): void {
  send(res, AUTH_STATUS[refusal.why], `${refusal.message}\n`, refusal.why === 'unauthenticated' ? { 'WWW-Authenticate': 'Bearer' } : {});
}

function sendCheck(res: ServerResponse, check: Check): void {
  if (check.ok) send(res, 200, check.detail === undefined ? 'ok\n' : `ok (${check.detail})\n`);
  else send(res, 503, `${check.reason}\n`);
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
