// Every sync failure is logged, reported with its stage and retried; none is swallowed (a Node
// podCIDR of 10.244.1.0/33 made every compile throw outside the reconciler's catch, and the runner caught
// it without a word while the node stayed ready and ignored every later change).

import { ConfigError } from '../../../src/config/load.js';
import { defaultNodeSettings, emptySnapshot, type ClusterSnapshot, type DesiredState } from '../../../src/model/index.js';
import { HealthState } from '../../../src/observe/health.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import type { Clock } from '../../../src/reconcile/runner.js';
import type { SyncResult } from '../../../src/reconcile/syncer.js';

/** A clock whose timers run when the test advances time. */
function fakeClock(): Clock & { advance(ms: number): Promise<void> } {
  let now = 0;
  let timers: { at: number; fn: () => void; id: number }[] = [];
  let nextId = 0;
  return {
    now: () => now,
    setTimeout: (fn, ms) => {
      const id = ++nextId;
      timers.push({ at: now + ms, fn, id });
      return id;
    },
    clearTimeout: (h) => void (timers = timers.filter((t) => t.id !== h)),
    async advance(ms) {
      const end = now + ms;
      for (;;) {
        const next = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!next) break;
        timers = timers.filter((t) => t !== next);
        now = next.at;
        next.fn();
        for (let i = 0; i < 20; i++) await Promise.resolve();
      }
      now = end;
    },
  };
}

function setup(settingsThrow: () => boolean) {
  const logged: { level: string; msg: string }[] = [];
  const log = (level: string) => (msg: string) => void logged.push({ level, msg });
  const failures: string[] = [];
  const applied: DesiredState[] = [];
  const clock = fakeClock();
  const reconciler = new Reconciler({
    source: { snapshot: (): ClusterSnapshot => emptySnapshot, problems: () => [] },
    settings: () => {
      if (settingsThrow()) throw new ConfigError(['pod CIDR "10.244.1.0/33" is not a CIDR']);
      return defaultNodeSettings('n1', ['10.244.1.0/24']);
    },
    syncer: {
      sync: async (desired): Promise<SyncResult> => {
        applied.push(desired);
        return { plans: [], readKernel: true, drift: false };
      },
      planOnly: async () => [],
      markOutOfSync: () => undefined,
    },
    logger: { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') },
    clock,
    batchWindowMs: 10,
    resyncIntervalMs: 60_000,
    observer: { failed: ({ stage }) => void failures.push(stage) },
  });
  return { reconciler, clock, logged, failures, applied };
}

describe('sync failures are logged, reported and retried', () => {
  it('a compile that throws is logged as an error and reported with stage "compile"', async () => {
    let broken = true;
    const t = setup(() => broken);
    t.reconciler.start();
    await t.clock.advance(50);
    expect(t.failures).toEqual(['compile']);
    expect(t.logged.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      expect.stringContaining('compiling the cluster state failed'),
    ]);
    expect(t.applied).toEqual([]);
    // Retried with backoff; once the input is fixed, the next retry programs it.
    broken = false;
    await t.clock.advance(1_000);
    expect(t.applied).toHaveLength(1);
    t.reconciler.stop();
  });
});

describe('readiness follows sync failures', () => {
  it('a node whose last sync failed is not ready; the next good sync makes it ready again', () => {
    const health = new HealthState({ now: () => 0, stallAfterMs: 1_000 });
    health.bridgeNfCallIptables(true);
    health.fullSyncProgrammed();
    expect(health.readiness()).toEqual({ ok: true });
    health.lastSyncFailed('compile: pod CIDR "10.244.1.0/33" is not a CIDR');
    expect(health.readiness()).toEqual({
      ok: false,
      reason: 'last sync failed (retrying): compile: pod CIDR "10.244.1.0/33" is not a CIDR',
    });
    health.lastSyncFailed(undefined);
    expect(health.readiness()).toEqual({ ok: true });
  });
});
