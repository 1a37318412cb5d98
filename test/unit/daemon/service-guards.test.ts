// The daemon's hook watch (service-guards.ts): while kube-proxy (or anyone) keeps netfence's FORWARD jump
// from being first, every check asks for a repair again: a repair that did not take (the resync failed, or
// kube-proxy re-prepended its jump right after it) must not leave the hole open until the drift check.

import { createServiceGuards } from '../../../src/daemon/service-guards.js';
import { compile } from '../../../src/compile/index.js';
import { nullLogger } from '../../../src/log.js';
import type { IpFamily } from '../../../src/model/index.js';
import { FakeClock } from '../../fakes/fake-clock.js';
import { loadGoldenCase } from '../../helpers/golden.js';

const golden = loadGoldenCase('seed-db-policy');
const desired = compile(golden.snapshot, golden.settings).desired;
const KUBE_FIRST = '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD';
const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup() {
  const clock = new FakeClock();
  const counts = { resyncs: 0, displaced: 0 };
  const guards = createServiceGuards({
    config: { hookCheckIntervalMs: 1000, dryRun: false },
    kernel: { firstRule: async (_family: IpFamily, _chain: string) => KUBE_FIRST, supports: (f: IpFamily) => f === 4 },
    reconciler: { resyncNow: () => void counts.resyncs++ },
    metrics: { countHookDisplaced: () => void counts.displaced++, setIpvsDetected: () => undefined },
    health: { ipvsDetected: () => undefined },
    logger: nullLogger,
    netns: undefined,
    clock,
  });
  const tick = async () => {
    clock.advance(1000);
    for (let i = 0; i < 3; i++) await settle();
  };
  return { guards, counts, tick };
}

describe('hook watch: a displaced jump', () => {
  it('is repaired on every check while it stays displaced, and counted (and logged) once', async () => {
    const { guards, counts, tick } = setup();
    guards.programmed(desired);
    guards.start();
    try {
      for (let i = 0; i < 3; i++) await tick();
      // Nothing repaired it (the fake kernel keeps KUBE-FORWARD first): three checks, three repairs asked for.
      expect(counts.resyncs).toBe(3);
      expect(counts.displaced).toBe(1);
    } finally {
      guards.stop();
    }
  });

  it('asks for nothing before the first sync told it what must be first', async () => {
    const { guards, counts, tick } = setup();
    guards.start();
    try {
      await tick();
      expect(counts.resyncs).toBe(0);
    } finally {
      guards.stop();
    }
  });
});
