// The observability server bounds what clients can hold: idle connections used to stay open
// forever, and enough of them exhausted the daemon's file descriptors. Loopback only.

import { connect, type Socket } from 'node:net';
import type { HealthChecks } from '../../../src/observe/health.js';
import * as httpServer from '../../../src/observe/http-server.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import { createMetrics } from '../../../src/observe/metrics.js';

const checks: HealthChecks = { liveness: () => ({ ok: true }), readiness: () => ({ ok: true }) };

/** Opens a TCP connection and resolves once it is established; `closed` resolves when the server ends it. */
function idleConnection(port: number, localAddress = '127.0.0.1'): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => undefined); // a reset from the server is what some tests expect
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

async function healthz(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) });
  await res.text();
  return res.status;
}

describe('ObserveServer connection limits', () => {
  it('has bounded defaults', () => {
    expect(httpServer.CONNECTION_LIMITS.maxConnections).toBeLessThanOrEqual(256);
    expect(httpServer.CONNECTION_LIMITS.idleMs).toBeLessThanOrEqual(60_000);
  });

  it('closes connections past maxConnections at once and idle ones after the idle timeout', async () => {
    const server = new ObserveServer({
      health: checks,
      metrics: createMetrics(),
      limits: { maxConnections: 4, idleMs: 400, headersMs: 300, requestMs: 400 },
    });
    const { port } = await server.start('127.0.0.1:0');
    const open: { socket: Socket; closed: Promise<void> }[] = [];
    try {
      for (let i = 0; i < 12; i++) open.push(await idleConnection(port));
      const state = () =>
        Promise.race([
          Promise.all(open.map((c) => c.closed)).then(() => 'all closed'),
          new Promise((r) => setTimeout(() => r('some open'), 3_000)),
        ]);
      // Every idle connection ends: the 8 past the limit at once, the first 4 after the idle timeout.
      expect(await state()).toBe('all closed');
      expect(await healthz(port)).toBe(200);
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });

  it('keeps answering probes while idle connections sit at the limit', async () => {
    const server = new ObserveServer({
      health: checks,
      metrics: createMetrics(),
      limits: { maxConnections: 3, idleMs: 60_000, headersMs: 60_000, requestMs: 60_000 },
    });
    const { port } = await server.start('127.0.0.1:0');
    const open: { socket: Socket; closed: Promise<void> }[] = [];
    try {
      for (let i = 0; i < 3; i++) open.push(await idleConnection(port));
      // The limit refuses the probe too, but it frees nothing: the point is that the daemon is not harmed
      // and answers again as soon as a slot frees (here, one idle client leaves).
      open[0]!.socket.destroy();
      await open[0]!.closed;
      await new Promise((r) => setTimeout(r, 50));
      expect(await healthz(port)).toBe(200);
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });

  it('gives one peer a share only, and keeps slots for the reserved peer (the kubelet on loopback)', async () => {
    // 127.0.0.2 and 127.0.0.3 stand for pods: only 127.0.0.1 counts as reserved here, so loopback carries all three.
    const refusals: string[] = [];
    const server = new ObserveServer({
      health: checks,
      metrics: createMetrics(),
      limits: { maxConnections: 12, maxPerPeer: 6, reservedForLoopback: 4, idleMs: 60_000, headersMs: 60_000, requestMs: 60_000 },
      isReservedPeer: (address) => address === '127.0.0.1',
      onConnectionRefused: (why) => void refusals.push(why),
    });
    const { port } = await server.start('127.0.0.1:0');
    const open: { socket: Socket; closed: Promise<void> }[] = [];
    const stillOpen = async (conns: readonly { closed: Promise<void> }[]) => {
      let closed = 0;
      for (const c of conns) void c.closed.then(() => closed++);
      await new Promise((r) => setTimeout(r, 200));
      return conns.length - closed;
    };
    try {
      // One peer floods: it keeps its share (6) and no more.
      const flood = [];
      for (let i = 0; i < 20; i++) flood.push(await idleConnection(port, '127.0.0.2'));
      open.push(...flood);
      expect(await stillOpen(flood)).toBe(6);
      // A second peer gets the rest of what non-reserved peers may hold (12 − 4 reserved − 6 = 2).
      const second = [];
      for (let i = 0; i < 5; i++) second.push(await idleConnection(port, '127.0.0.3'));
      open.push(...second);
      expect(await stillOpen(second)).toBe(2);
      // The reserved peer still gets through, probes answered.
      for (let i = 0; i < 4; i++) expect(await healthz(port)).toBe(200);
      expect(refusals.filter((r) => r === 'per-peer')).toHaveLength(14);
      expect(refusals.filter((r) => r === 'total')).toHaveLength(3);
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });

  it('gives closed connections their slots back: peers that fill the share, leave and come back are served again', async () => {
    // 4 − 2 reserved: two non-reserved connections at once, whoever holds them.
    const server = new ObserveServer({
      health: checks,
      metrics: createMetrics(),
      limits: { maxConnections: 4, maxPerPeer: 2, reservedForLoopback: 2, idleMs: 60_000, headersMs: 60_000, requestMs: 60_000 },
      isReservedPeer: (address) => address === '127.0.0.1',
    });
    const { port } = await server.start('127.0.0.1:0');
    const open: { socket: Socket; closed: Promise<void> }[] = [];
    /** A connection from `from` the server keeps (it refuses by closing at once); retried until the deadline. */
    const kept = async (from: string): Promise<{ socket: Socket; closed: Promise<void> }> => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const c = await idleConnection(port, from);
        open.push(c);
        const refused = await Promise.race([c.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
        if (!refused) return c;
        if (Date.now() > deadline) throw new Error(`${from}: still refused 5 s after the earlier connections closed`);
      }
    };
    try {
      for (let round = 0; round < 3; round++) {
        const peer = `127.0.0.${round + 2}`;
        const share = [await kept(peer), await kept(peer)];
        // The kubelet's probes come and go meanwhile.
        expect(await healthz(port)).toBe(200);
        for (const c of share) c.socket.destroy();
        await Promise.all(share.map((c) => c.closed));
      }
      // The reserve is still whole: two non-reserved connections at most, however many probes came and went.
      await kept('127.0.0.9');
      await kept('127.0.0.10');
      const extra = await idleConnection(port, '127.0.0.11');
      open.push(extra);
      expect(await Promise.race([extra.closed.then(() => 'refused'), new Promise((r) => setTimeout(() => r('kept'), 3_000))])).toBe(
        'refused',
      );
    } finally {
      for (const c of open) c.socket.destroy();
      await server.stop();
    }
  });
});
