// The observability endpoints on the metrics port: /healthz (liveness), /readyz (readiness) and
// /metrics (Prometheus text). Plain node:http: three read-only routes do not need a framework.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseListenAddress, type ListenAddress } from '../config/listen-address.js';
import { nullLogger, type Logger } from '../log.js';
import { ConnectionAdmission, type AdmissionLimits } from './connection-admission.js';
import type { Check, HealthChecks } from './health.js';
import type { Metrics } from './metrics.js';
import type { ConnectionRefusal } from './metrics-hostile.js';
import type { FlowsAnswer } from './flows-query.js';

export interface ObserveServerOptions {
  readonly health: HealthChecks;
  readonly metrics: Pick<Metrics, 'render' | 'contentType'>;
  readonly logger?: Logger;
  /**
   * `/flows?pod=&namespace=&policy=&since=`: recent denied flows as JSON (`netfence drops`); 404 when absent,
   * 400 (with the reason as JSON) for a query that cannot be read.
   */
  readonly flows?: (query: URLSearchParams) => FlowsAnswer;
  /** Bounds on what clients may hold; defaults in CONNECTION_LIMITS. */
  readonly limits?: Partial<ConnectionLimits>;
  /** Peers that may use the slots others cannot (default: loopback, where the kubelet probes from). */
  readonly isReservedPeer?: (address: string) => boolean;
  /** Told of every connection closed on arrival (logged once per thousand). */
  readonly onConnectionRefused?: (why: ConnectionRefusal) => void;
}

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

export class ObserveServer {
  private server: Server | undefined;
  private readonly logger: Logger;

  constructor(private readonly options: ObserveServerOptions) {
    this.logger = options.logger ?? nullLogger;
  }

  /** Listens on `host:port` (port 0 picks a free one) and resolves to the address actually bound. */
  async start(listen: string | ListenAddress): Promise<ListenAddress> {
    if (this.server) throw new Error('observe server already started');
    const address = typeof listen === 'string' ? parseListenAddress(listen) : listen;
    if (!address) throw new Error(`listen address "${String(listen)}" is not host:port`);
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
    this.server = server;
    const bound = server.address() as AddressInfo;
    this.logger.info('serving /healthz /readyz /metrics', { address: bound.address, port: bound.port });
    return { host: bound.address, port: bound.port };
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    // Keep-alive connections (Prometheus keeps one) would otherwise hold close() open.
    server.closeAllConnections();
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
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
        const answer = this.options.flows(url.searchParams);
        return send(res, 'error' in answer ? 400 : 200, `${JSON.stringify(answer)}\n`, { 'Content-Type': 'application/json' });
      }
      default:
        return send(res, 404, 'not found: try /healthz, /readyz or /metrics\n');
    }
  }
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
