// A sync must not hold the event loop for the whole compile of many big policies: /healthz and /metrics are
// served from the same loop, and thirty policies with thousands of ipBlock excepts each, arriving at once,
// used to keep it busy for seconds on a loaded node. New policies are read one per turn of the loop.

import { defaultNodeSettings, type ClusterSnapshot, type DesiredState } from '../../../src/model/index.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import type { SyncResult } from '../../../src/reconcile/syncer.js';
import { blockPeer, egress, makePolicy, rule, sel, selectPods, snapshot, types } from '../../helpers/builders.js';

const excepts = (n: number, seed: number): string[] =>
  Array.from({ length: n }, (_, i) => `${11 + seed}.0.${(i >> 8) & 255}.${i & 255}/32`);

it('other work of the event loop runs between the policies a sync reads', async () => {
  const policies = [0, 1, 2].map((i) =>
    makePolicy('prod', `blocklist-${i}`, selectPods(sel()), types('Egress'), egress(rule([blockPeer('0.0.0.0/0', ...excepts(2_000, i))]))),
  );
  const snap: ClusterSnapshot = snapshot({ namespaces: [], pods: [], policies });
  // Counts turns of the loop (setImmediate callbacks) until the sync reaches the kernel.
  let turns = 0;
  let applied: DesiredState | undefined;
  const tick = (): void => {
    if (applied) return;
    turns++;
    setImmediate(tick);
  };
  // The runner's timers run only when the test says; no timer of its own can give the loop a turn.
  const timers: (() => void)[] = [];
  const clock = { now: () => 0, setTimeout: (fn: () => void) => timers.push(fn), clearTimeout: () => undefined };
  const reconciler = new Reconciler({
    source: { snapshot: () => snap, problems: () => [] },
    settings: () => defaultNodeSettings('n1', ['10.244.1.0/24']),
    syncer: {
      sync: async (desired): Promise<SyncResult> => {
        applied = desired;
        return { plans: [], readKernel: true, drift: false };
      },
      planOnly: async () => [],
      markOutOfSync: () => undefined,
    },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined },
    clock,
    batchWindowMs: 0,
    resyncIntervalMs: 60_000,
  });
  reconciler.start();
  setImmediate(tick);
  // The first sync's timer; then wait (by turns of the loop, not time) for it to reach the kernel.
  timers.shift()?.();
  for (let i = 0; i < 10_000 && !applied; i++) await new Promise((resolve) => setImmediate(resolve));
  reconciler.stop();
  expect(applied).toBeDefined();
  // One turn before the sync started, then at least one between each two of the three policies.
  expect(turns).toBeGreaterThanOrEqual(3);
});
