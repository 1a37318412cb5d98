// Every golden case applied to a real kernel (nft and legacy), each in its own netns: the kernel then
// holds exactly the compiled chains and sets, our hook is the first rule of FORWARD, and applying the
// same state again writes nothing at all.

import { jest } from '@jest/globals';
import { openKernel } from '../../src/dataplane/kernel.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { goldenCaseNames, loadGoldenCase } from '../helpers/golden.js';
import {
  BACKENDS,
  OWN,
  expectedFromRestore,
  iptablesSave,
  memoryLogger,
  ourChains,
  parseFilter,
  parseSets,
  recordingKernel,
  savedSets,
} from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(20_000);

const CASES = BACKENDS.flatMap((backend) => goldenCaseNames().map((name) => ({ backend, name })));

describeKernel('apply: golden cases on a real kernel', () => {
  it('finds the golden corpus', () => {
    expect(goldenCaseNames().length).toBeGreaterThanOrEqual(5);
  });

  it.each(CASES)('$name ($backend): kernel holds exactly the compiled state; a second apply writes nothing', async ({ backend, name }) => {
    const golden = loadGoldenCase(name);
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const first = await new Syncer(kernel, OWN, memoryLogger()).sync(golden.result.desired, { readKernel: true });
      expect(first.plans.flatMap((p) => p.errors)).toEqual([]);

      // Chains: byte-for-byte, rule order included, no chain of ours more or less.
      const filter = parseFilter(await iptablesSave(ns.name, backend, 'filter'));
      const expected = expectedFromRestore(golden.rules);
      expect(Object.fromEntries(ourChains(filter))).toEqual(Object.fromEntries(expected.chains));
      // The hook: exactly one rule of ours in FORWARD, and it is the first rule.
      const forward = filter.rules.get('FORWARD') ?? [];
      expect(forward).toEqual(expected.hooks.get('FORWARD'));
      expect(expected.hooks.get('FORWARD')).toHaveLength(1);
      // INPUT holds our one jump only while ClusterNetworkPolicies exist (pods to this node); OUTPUT only while a
      // domainNames rule does (DNS answers of a resolver on the node).
      expect(filter.rules.get('INPUT') ?? []).toEqual(expected.hooks.get('INPUT') ?? []);
      expect((expected.hooks.get('INPUT') ?? []).length).toBe(golden.result.desired.v4.hooks.some((h) => h.chain === 'INPUT') ? 1 : 0);
      expect(filter.rules.get('OUTPUT') ?? []).toEqual(expected.hooks.get('OUTPUT') ?? []);
      expect((expected.hooks.get('OUTPUT') ?? []).length).toBe(golden.result.desired.dns ? 1 : 0);

      // A dual-stack case: the IPv6 chains and hook too, exactly as expected6.rules.
      if (golden.v6) {
        const filter6 = parseFilter(await iptablesSave(ns.name, backend, 'filter', 6));
        const expected6 = expectedFromRestore(golden.v6.rules);
        expect(Object.fromEntries(ourChains(filter6))).toEqual(Object.fromEntries(expected6.chains));
        expect(filter6.rules.get('FORWARD') ?? []).toEqual(expected6.hooks.get('FORWARD'));
      }

      // Sets: same names, types and members (as sets), of both families for a dual-stack case.
      expect(Object.fromEntries(await savedSets(ns.name))).toEqual(
        Object.fromEntries(parseSets(golden.ipsets + (golden.v6?.ipsets ?? ''))),
      );

      // Again, from a fresh Syncer that must read everything back: nothing to change, nothing written.
      kernel.clear();
      const again = await new Syncer(kernel, OWN, memoryLogger()).sync(golden.result.desired, { readKernel: true });
      expect(again.plans.flatMap((p) => p.changes)).toEqual([]);
      expect(kernel.writes).toEqual([]);
    });
  });
});
