// The sync loop publishes each sync's report; the daemon's parts subscribe to it side by side instead of
// wrapping one another. Every subscriber hears every report, in the order it subscribed, until it leaves.

import { defaultNodeSettings, emptySnapshot, type ClusterSnapshot, type Problem } from '../../../src/model/index.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import type { SyncReport } from '../../../src/reconcile/sync-reports.js';
import { nullLogger } from '../../../src/log.js';
import { FakeClock } from '../../fakes/fake-clock.js';

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

function setup(fail: () => boolean) {
  const clock = new FakeClock();
  const problem: Problem = { object: 'NetworkPolicy a/b', field: 'spec', message: 'bad', severity: 'error' };
  const reconciler = new Reconciler({
    source: { snapshot: (): ClusterSnapshot => emptySnapshot, problems: () => [problem] },
    settings: () => defaultNodeSettings('n1', ['10.244.1.0/24']),
    syncer: {
      sync: async () => {
        if (fail()) throw new Error('iptables-restore: line 3 failed');
        return { plans: [], readKernel: true, drift: false };
      },
      planOnly: async () => [],
      markOutOfSync: () => undefined,
    },
    logger: nullLogger,
    clock,
    batchWindowMs: 10,
    resyncIntervalMs: 60_000,
  });
  return { reconciler, clock };
}

describe('sync reports', () => {
  it('every subscriber hears each sync, its problems and failures, in subscription order', async () => {
    let failing = false;
    const { reconciler, clock } = setup(() => failing);
    const heard: string[] = [];
    const subscriber = (name: string) => ({
      heartbeat: () => void heard.push(`${name} heartbeat`),
      problems: (p: readonly Problem[]) => void heard.push(`${name} problems ${p.length}`),
      synced: (r: SyncReport) => void heard.push(`${name} synced ${r.reason}`),
      failed: (f: { stage: string }) => void heard.push(`${name} failed ${f.stage}`),
    });
    reconciler.reports.subscribe(subscriber('health'));
    const leave = reconciler.reports.subscribe(subscriber('flows'));
    reconciler.start();
    clock.advance(50);
    await settle();
    expect(heard).toEqual([
      'health heartbeat',
      'flows heartbeat',
      'health problems 1',
      'flows problems 1',
      'health synced change',
      'flows synced change',
    ]);

    heard.length = 0;
    leave();
    failing = true;
    reconciler.changed();
    clock.advance(50);
    await settle();
    expect(heard).toEqual(['health heartbeat', 'health problems 1', 'health failed apply']);
    reconciler.stop();
  });

  it('a subscriber with only one interest is told only that', async () => {
    const { reconciler, clock } = setup(() => false);
    const desired: unknown[] = [];
    reconciler.reports.subscribe({ synced: (r) => void desired.push(r.desired) });
    reconciler.start();
    clock.advance(50);
    await settle();
    expect(desired).toHaveLength(1);
    reconciler.stop();
  });
});
