// /startupz, the DaemonSet's startupProbe: started once the first full sync is programmed. Until then the sync
// loop is not running (it waits for every kind's first list), so a start longer than the stall window must
// not be judged by liveness; the kubelet asks liveness only after the startup probe passed.

import { request } from 'node:http';
import { HealthState } from '../../../src/observe/health.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import { createMetrics } from '../../../src/observe/metrics.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('/startupz', () => {
  let now = 0;
  const health = new HealthState({ now: () => now, stallAfterMs: 100_000 });
  const server = new ObserveServer({ health, metrics: createMetrics() });
  let port = 0;
  beforeAll(async () => {
    ({ port } = await server.start('127.0.0.1:0'));
  });
  afterAll(() => server.stop());

  it('a long start: not started (503) while the first lists run, started once the first sync is programmed', async () => {
    expect(await get(port, '/startupz')).toEqual({ status: 503, body: 'starting: first full sync not programmed yet\n' });
    // Five minutes of first lists: longer than the stall window, which liveness would call a dead loop.
    now += 300_000;
    expect(health.liveness().ok).toBe(false);
    expect((await get(port, '/startupz')).status).toBe(503);
    health.heartbeat();
    health.fullSyncProgrammed();
    // Started, and alive from here on; readiness still waits for the bridge sysctls, start-up does not.
    expect(await get(port, '/startupz')).toEqual({ status: 200, body: 'ok\n' });
    expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect((await get(port, '/readyz')).status).toBe(503);
  });

  it('a crashed loop fails it at once', () => {
    const crashed = new HealthState({ now: () => 0, stallAfterMs: 100_000 });
    crashed.loopStopped('TypeError: boom');
    expect(crashed.startup()).toEqual({ ok: false, reason: 'sync loop stopped: TypeError: boom' });
  });
});
