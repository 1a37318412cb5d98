// Drift repair on a real kernel: someone else edits what netfence owns, and ONE periodic run of the
// Reconciler (fake clock) notices and puts it back — while what is not ours stays as they left it.

import { jest } from '@jest/globals';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import type { FamilyState } from '../../src/model/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { loadGoldenCase } from '../helpers/golden.js';
import {
  BACKENDS,
  OWN,
  ReconcilerHarness,
  expectedFromRestore,
  ipset,
  iptables,
  iptablesRestore,
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

const golden = loadGoldenCase('seed-db-policy');
const desired = golden.result.desired.v4;
const expected = expectedFromRestore(golden.rules);
const expectedSets = parseSets(golden.ipsets);

const chainOf = (state: FamilyState, kind: 'policy' | 'workload', direction: 'ingress' | 'egress', owner: string): string => {
  const chain = state.chains.find(
    (c) =>
      c.role.kind === kind &&
      c.role.direction === direction &&
      (c.role.kind === 'policy' ? c.role.policy : c.role.kind === 'workload' ? c.role.pod : '') === owner,
  );
  if (!chain) throw new Error(`no ${kind} ${direction} chain for ${owner}`);
  return chain.name;
};
/** The db pod's ingress policy chain, the workload chain that jumps to it, and a set only that chain uses. */
const POLICY_IN = chainOf(desired, 'policy', 'ingress', 'default/test-network-policy');
const DB_IN = chainOf(desired, 'workload', 'ingress', 'default/db');
const FRONTEND_SET = desired.ipsets.find((s) => s.members.includes('10.244.1.11'))!.name;

interface Ctx {
  readonly netns: string;
  readonly backend: IptablesBackend;
  ipt(...args: string[]): Promise<string>;
}

interface DriftCase {
  readonly name: string;
  readonly mutate: (ctx: Ctx) => Promise<void>;
  /** Whether the run must report drift (a change to what we own). */
  readonly drift: boolean;
  /** FORWARD as it must look after the repair (`HOOK` stands for our hook rule). */
  readonly forward?: readonly string[];
  readonly policy?: string;
}

const HOOK = 'HOOK';

const DRIFTS: readonly DriftCase[] = [
  { name: 'nothing changed (control)', mutate: async () => undefined, drift: false },
  {
    name: 'a deleted chain (its jump removed first)',
    mutate: async ({ ipt, netns, backend }) => {
      const rules = parseFilter(await iptablesSave(netns, backend, 'filter')).rules.get(DB_IN) ?? [];
      const at = rules.findIndex((r) => r.endsWith(`-j ${POLICY_IN}`));
      if (at < 0) throw new Error(`${DB_IN} does not jump to ${POLICY_IN}`);
      await ipt('-D', DB_IN, String(at + 1));
      await ipt('-F', POLICY_IN);
      await ipt('-X', POLICY_IN);
    },
    drift: true,
  },
  { name: 'a flushed chain', mutate: ({ ipt }) => ipt('-F', POLICY_IN).then(() => undefined), drift: true },
  {
    name: 'an edited rule',
    mutate: ({ ipt }) => ipt('-R', POLICY_IN, '1', '-p', 'tcp', '-j', 'MARK', '--set-xmark', '0x10000/0x10000').then(() => undefined),
    drift: true,
  },
  { name: 'a removed hook', mutate: ({ ipt }) => ipt('-D', 'FORWARD', '1').then(() => undefined), drift: true },
  {
    name: 'a foreign rule inserted above our hook',
    mutate: ({ ipt }) => ipt('-I', 'FORWARD', '1', '-j', 'ACCEPT').then(() => undefined),
    drift: true,
    forward: [HOOK, '-A FORWARD -j ACCEPT'],
  },
  {
    name: 'a removed set member',
    mutate: ({ netns }) => ipset(netns, ['del', FRONTEND_SET, '10.244.1.11']).then(() => undefined),
    drift: true,
  },
  {
    name: 'an added set member',
    mutate: ({ netns }) => ipset(netns, ['add', FRONTEND_SET, '10.244.1.99']).then(() => undefined),
    drift: true,
  },
  {
    // A set can be destroyed only once no rule references it: flush the one chain that does first.
    name: 'a destroyed set (with the chain that used it flushed)',
    mutate: async ({ ipt, netns }) => {
      await ipt('-F', POLICY_IN);
      await ipset(netns, ['destroy', FRONTEND_SET]);
    },
    drift: true,
  },
  {
    // Today's ipset cannot change a set's type in place: the set is rebuilt in a temp set of the right
    // type, the chains moved over in one transaction, then the set recreated (plan/retype.ts).
    name: 'a set recreated by someone else as hash:net with a wider member',
    mutate: async ({ ipt, netns }) => {
      await ipt('-F', POLICY_IN);
      await ipset(netns, ['destroy', FRONTEND_SET]);
      await ipset(netns, ['create', FRONTEND_SET, 'hash:net', 'family', 'inet']);
      await ipset(netns, ['add', FRONTEND_SET, '10.244.0.0/16']);
    },
    drift: true,
  },
  {
    // The same, and our chain matching on the impostor again (what a repair that skipped the set did):
    // it allowed the whole /16. The chain cannot be left without the set for a moment.
    name: 'a set recreated as hash:net that our chain references again',
    mutate: async ({ ipt, netns, backend }) => {
      const rules = parseFilter(await iptablesSave(netns, backend, 'filter')).rules.get(POLICY_IN) ?? [];
      await ipt('-F', POLICY_IN);
      await ipset(netns, ['destroy', FRONTEND_SET]);
      await ipset(netns, ['create', FRONTEND_SET, 'hash:net', 'family', 'inet']);
      await ipset(netns, ['add', FRONTEND_SET, '10.244.0.0/16']);
      await iptablesRestore(netns, backend, `*filter\n:${POLICY_IN} - [0:0]\n${rules.join('\n')}\nCOMMIT\n`);
      expect(
        parseFilter(await iptablesSave(netns, backend, 'filter'))
          .rules.get(POLICY_IN)
          ?.some((r) => r.includes(FRONTEND_SET)),
      ).toBe(true);
    },
    drift: true,
  },
  {
    // We do not own the policy of a kernel chain: it stays as the user set it, and is no drift of ours.
    name: 'the FORWARD policy flipped to DROP',
    mutate: ({ ipt }) => ipt('-P', 'FORWARD', 'DROP').then(() => undefined),
    drift: false,
    policy: 'DROP',
  },
];

const CASES = BACKENDS.flatMap((backend) => DRIFTS.map((drift) => ({ backend, drift, name: drift.name })));

describeKernel('drift: one periodic run repairs what someone else changed', () => {
  it.each(CASES)('$name ($backend)', async ({ backend, drift }) => {
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
      try {
        const first = await harness.start();
        expect(first).toMatchObject({ kind: 'synced', reason: 'change' });
        const ctx: Ctx = { netns: ns.name, backend, ipt: (...args) => iptables(ns.name, backend, args) };
        await drift.mutate(ctx);
        // The edit really touched what we own (or, for the control cases, really did not).
        const seen = await new Syncer(kernel, OWN, memoryLogger()).planOnly(golden.result.desired);
        expect(seen.flatMap((p) => p.changes).length > 0).toBe(drift.drift);
        kernel.clear();

        const run = await harness.periodic();

        expect(run).toMatchObject({ kind: 'synced', reason: 'periodic', drift: drift.drift });
        if (!drift.drift) expect(kernel.writes).toEqual([]);
        else expect(kernel.writes.length).toBeGreaterThan(0);
        // Repaired: our chains byte-for-byte, our sets, our hook first and foreign FORWARD rules below it.
        const filter = parseFilter(await iptablesSave(ns.name, backend, 'filter'));
        expect(Object.fromEntries(ourChains(filter))).toEqual(Object.fromEntries(expected.chains));
        expect(Object.fromEntries(await savedSets(ns.name))).toEqual(Object.fromEntries(expectedSets));
        const hook = expected.hooks.get('FORWARD')?.[0];
        expect(filter.rules.get('FORWARD')).toEqual((drift.forward ?? [HOOK]).map((l) => (l === HOOK ? hook : l)));
        expect(filter.policies.get('FORWARD')).toBe(drift.policy ?? 'ACCEPT');
        // One run was enough: a fresh look at the kernel finds nothing left to do.
        const left = await new Syncer(kernel, OWN, memoryLogger()).planOnly(golden.result.desired);
        expect(left.flatMap((p) => p.changes)).toEqual([]);
        if (drift.drift)
          expect(harness.logger.lines.map((l) => l.msg)).toContain(
            'repaired drift: netfence-owned kernel state had been changed by someone else',
          );
      } finally {
        harness.stop();
      }
    });
  });
});
