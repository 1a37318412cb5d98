import { request } from 'node:http';
import type { Check, HealthChecks } from '../../../src/observe/health.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import { createMetrics } from '../../../src/observe/metrics.js';

interface Reply {
  status: number;
  contentType: string | undefined;
  body: string;
}

function get(port: number, path: string, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ObserveServer', () => {
  const health = { live: { ok: true } as Check, ready: { ok: false, reason: 'first full sync not programmed yet' } as Check };
  const checks: HealthChecks = { liveness: () => health.live, readiness: () => health.ready };
  const metrics = createMetrics();
  const server = new ObserveServer({ health: checks, metrics });
  let port = 0;

  beforeAll(async () => {
    ({ port } = await server.start('127.0.0.1:0'));
  });
  afterAll(() => server.stop());

  it.each<{ name: string; path: string; method?: string; live?: Check; ready?: Check; status: number; body: string | RegExp }>([
    { name: 'healthz while alive', path: '/healthz', status: 200, body: 'ok\n' },
    {
      name: 'healthz when the loop stalled',
      path: '/healthz',
      live: { ok: false, reason: 'sync loop silent' },
      status: 503,
      body: 'sync loop silent\n',
    },
    { name: 'readyz before the first sync', path: '/readyz', status: 503, body: 'first full sync not programmed yet\n' },
    { name: 'readyz once ready', path: '/readyz', ready: { ok: true }, status: 200, body: 'ok\n' },
    { name: 'query strings are ignored', path: '/readyz?verbose=1', ready: { ok: true }, status: 200, body: 'ok\n' },
    { name: 'metrics', path: '/metrics', status: 200, body: /^netfence_ready 0$/m },
    { name: 'unknown path', path: '/', status: 404, body: 'not found: try /healthz, /readyz or /metrics\n' },
    { name: 'POST is refused', path: '/healthz', method: 'POST', status: 405, body: 'method not allowed\n' },
    { name: 'HEAD has no body', path: '/healthz', method: 'HEAD', status: 200, body: '' },
  ])('$name', async ({ path, method, live, ready, status, body }) => {
    health.live = live ?? { ok: true };
    health.ready = ready ?? { ok: false, reason: 'first full sync not programmed yet' };
    const reply = await get(port, path, method);
    expect(reply.status).toBe(status);
    if (typeof body === 'string') expect(reply.body).toBe(body);
    else expect(reply.body).toMatch(body);
  });

  it('serves metrics with the exposition content type', async () => {
    expect((await get(port, '/metrics')).contentType).toBe(metrics.contentType);
  });

  it('answers 500 when metrics cannot be rendered', async () => {
    const broken = new ObserveServer({
      health: checks,
      metrics: { contentType: 'text/plain', render: () => Promise.reject(new Error('boom')) },
    });
    const { port: brokenPort } = await broken.start({ host: '127.0.0.1', port: 0 });
    try {
      expect(await get(brokenPort, '/metrics')).toMatchObject({ status: 500, body: 'rendering metrics failed\n' });
    } finally {
      await broken.stop();
    }
  });

  it('refuses a second start and a bad address', async () => {
    await expect(server.start('127.0.0.1:0')).rejects.toThrow('already started');
    await expect(new ObserveServer({ health: checks, metrics }).start('nonsense')).rejects.toThrow('is not host:port');
  });

  it('stops listening on stop', async () => {
    const other = new ObserveServer({ health: checks, metrics });
    const { port: otherPort } = await other.start('127.0.0.1:0');
    await other.stop();
    await expect(get(otherPort, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
  });
});
