// A set the new rules no longer use is destroyed once the kernel lets go of it, not at the next drift check:
// iptables-nft drops a deleted rule's set reference asynchronously, so the destroy right after the rules
// changed can fail "in use". That refusal must not hold back the rest of the change, nor the other stale sets.

import { compile } from '../../../src/compile/index.js';
import type { ClusterSnapshot } from '../../../src/model/index.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { loadGoldenCase } from '../../helpers/golden.js';
import { Syncer } from '../../../src/reconcile/syncer.js';
import { OWN, ReconcilerHarness, memoryLogger, parseFilter, ourChains, parseSets } from '../../helpers/kernel-asserts.js';

const golden = loadGoldenCase('seed-db-policy');
/** The same cluster without its policies: every policy set and chain becomes stale. */
const withoutPolicies: ClusterSnapshot = { ...golden.snapshot, policies: [] };
const after = compile(withoutPolicies, golden.settings).desired;
const setNames = (kernel: FakeKernel): string[] => [...parseSets(kernel.ipset.save()).keys()].sort();
const chainNames = (kernel: FakeKernel): string[] => [...ourChains(parseFilter(kernel.save(4))).keys()].sort();

describe('stale sets the kernel still holds', () => {
  const before = golden.result.desired;
  const stale = before.v4.ipsets.map((s) => s.name as string).filter((n) => !after.v4.ipsets.some((s) => s.name === n));
  const wanted = [...after.v4.ipsets, ...after.v6.ipsets].map((s) => s.name as string).sort();

  it('the golden case has more than one set that goes stale (the test needs a busy one and others)', () => {
    expect(stale.length).toBeGreaterThan(1);
  });

  it('are destroyed within a second of being released, without a drift check; the rest of the change is applied at once', async () => {
    const kernel = new FakeKernel();
    const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings, resyncIntervalMs: 30_000 });
    try {
      await harness.start();
      // The first in name order: a batch destroy stops at it, so the others prove they do not wait behind it.
      const busy = [...stale].sort()[0]!;
      kernel.holdSet(busy);

      expect(await harness.change(withoutPolicies)).toMatchObject({ kind: 'synced', reason: 'change' });
      expect(chainNames(kernel)).toEqual(after.v4.chains.map((c) => c.name as string).sort());
      expect(setNames(kernel)).toEqual([...wanted, busy].sort());

      // Still held for a while: retried, and kept, without a word of failure.
      await harness.passTime(1_000);
      expect(setNames(kernel)).toContain(busy);
      kernel.releaseSet(busy);
      const released = harness.clock.now();
      for (let waited = 0; setNames(kernel).includes(busy) && waited < 10_000; waited += 50) await harness.passTime(50);
      expect(setNames(kernel)).toEqual(wanted);
      // The backoff had reached 800 ms by the release (100, 200, 400 ms before it): gone within one more step.
      expect(harness.clock.now() - released).toBeLessThanOrEqual(1_600);
      expect(harness.events.map((e) => e.kind)).toEqual(['synced', 'synced']);
      expect(harness.events.some((e) => e.reason === 'periodic')).toBe(false);
      expect(harness.logger.lines.filter((l) => l.level === 'error')).toEqual([]);

      // What is left is exactly what was programmed: the drift check finds nothing to do.
      kernel.writes.length = 0;
      expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
      expect(kernel.writes).toEqual([]);
    } finally {
      harness.stop();
    }
  });

  it('a set that becomes wanted again before it is released is kept', async () => {
    const kernel = new FakeKernel();
    const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings, resyncIntervalMs: 30_000 });
    try {
      await harness.start();
      const busy = stale[0]!;
      kernel.holdSet(busy);
      await harness.change(withoutPolicies);
      expect(setNames(kernel)).toContain(busy);
      // The policies come back while the kernel still holds the set: the pending destroy is dropped.
      expect(await harness.change(golden.snapshot)).toMatchObject({ kind: 'synced' });
      kernel.releaseSet(busy);
      await harness.passTime(10_000);
      expect(setNames(kernel)).toEqual([...before.v4.ipsets, ...before.v6.ipsets].map((s) => s.name as string).sort());
    } finally {
      harness.stop();
    }
  });

  it('a drift-check read taken before the retry destroyed the set is not planned against (no false drift)', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(before);
    const busy = stale[0]!;
    kernel.holdSet(busy);
    expect((await syncer.sync(after)).undestroyed).toEqual([busy]);
    await syncer.readAhead();
    kernel.releaseSet(busy);
    expect(await syncer.destroyLeftovers()).toEqual([]);
    const check = await syncer.sync(after, { readKernel: true });
    expect(check.drift).toBe(false);
    expect(check.plans.flatMap((p) => p.changes)).toEqual([]);
  });
});
