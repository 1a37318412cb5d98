// A failing apply leaves the previous rules enforced, is retried by the Reconciler with backoff (fake
// clock), and converges once the cause is gone. Two causes: injected failures at the KernelPort, and a
// real kernel refusal — a foreign chain still jumps to a chain of ours that the new state deletes, so
// the transaction's `-X` fails and iptables-restore must apply none of it.

import { jest } from '@jest/globals';
import { compile } from '../../src/compile/index.js';
import { DataplaneCommandError } from '../../src/dataplane/errors.js';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import type { ClusterSnapshot, DesiredState } from '../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { loadGoldenCase } from '../helpers/golden.js';
import {
  BACKENDS,
  OWN,
  memoryLogger,
  ReconcilerHarness,
  expectedFromRestore,
  iptables,
  iptablesSave,
  ourChains,
  parseFilter,
  parseSets,
  recordingKernel,
  savedSets,
} from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(20_000);

const golden = loadGoldenCase('seed-db-policy');
const v1 = golden.result.desired;

const withPort = (s: ClusterSnapshot, port: number): ClusterSnapshot => ({
  ...s,
  policies: s.policies.map((p) => ({
    ...p,
    ingress: (p.ingress ?? []).map((r) => ({ ...r, ports: [{ protocol: 'TCP' as const, port }] })),
  })),
});
const withoutPolicies = (s: ClusterSnapshot): ClusterSnapshot => ({ ...s, policies: [] });
const desiredOf = (s: ClusterSnapshot): DesiredState => compile(s, golden.settings).desired;

/** The kernel holds exactly `state`: our chains byte-for-byte and our sets. */
async function expectKernelHolds(netns: string, backend: IptablesBackend, state: DesiredState, label: string): Promise<void> {
  const filter = parseFilter(await iptablesSave(netns, backend, 'filter'));
  expect({ label, chains: Object.fromEntries(ourChains(filter)) }).toEqual({
    label,
    chains: Object.fromEntries(expectedFromRestore(renderFullRestore(state.v4)).chains),
  });
  expect({ label, sets: Object.fromEntries(await savedSets(netns)) }).toEqual({
    label,
    sets: Object.fromEntries(parseSets(renderIpsetRestore(state.v4.ipsets))),
  });
}

describeKernel('apply failures: old rules stay, retries converge', () => {
  it.each(BACKENDS)('injected iptables-restore failures are retried with backoff until one succeeds (%s)', async (backend) => {
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
      try {
        expect(await harness.start()).toMatchObject({ kind: 'synced' });
        const edited = withPort(golden.snapshot, 6380);
        const v2 = desiredOf(edited);
        kernel.failNextIptablesRestores(2);

        expect(await harness.change(edited)).toMatchObject({ kind: 'failed', reason: 'change' });
        await expectKernelHolds(ns.name, backend, v1, 'after the first failure');
        // Backoff: retryBase = max(100, batch window 50) ms, doubling.
        expect(harness.clock.nextDelay()).toBe(100);
        expect(await harness.next()).toMatchObject({ kind: 'failed', reason: 'retry' });
        await expectKernelHolds(ns.name, backend, v1, 'after the second failure');
        expect(harness.clock.nextDelay()).toBe(200);

        expect(await harness.next()).toMatchObject({ kind: 'synced', reason: 'retry' });
        await expectKernelHolds(ns.name, backend, v2, 'after the retry');
        expect(kernel.writes.filter((w) => w.op === 'iptables-restore')).toHaveLength(4); // first apply, two failures, the retry
        expect(harness.logger.lines.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
          'apply failed; the previous rules stay in place and the sync will be retried',
          'apply failed; the previous rules stay in place and the sync will be retried',
        ]);
        // No retry pending: what comes next is the drift check, on its own schedule (every interval since start).
        expect(harness.clock.now() + (harness.clock.nextDelay() ?? NaN)).toBe(harness.resyncIntervalMs);
      } finally {
        harness.stop();
      }
    });
  });

  it.each(BACKENDS)(
    'a foreign jump to a chain we delete makes the kernel refuse: nothing applied, retry converges (%s)',
    async (backend) => {
      await withNetns(async (ns) => {
        const ipt = (...args: string[]) => iptables(ns.name, backend, args);
        const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
        const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
        try {
          expect(await harness.start()).toMatchObject({ kind: 'synced' });
          const policyChain = v1.v4.chains.find((c) => c.role.kind === 'policy' && c.role.direction === 'ingress')!.name;
          await ipt('-N', 'FOREIGN-REF');
          await ipt('-A', 'FOREIGN-REF', '-j', policyChain);
          const v2 = desiredOf(withoutPolicies(golden.snapshot));
          expect(v2.v4.chains.map((c) => c.name)).not.toContain(policyChain);

          const failed = await harness.change(withoutPolicies(golden.snapshot));

          expect(failed).toMatchObject({ kind: 'failed', reason: 'change' });
          expect(failed.error).toBeInstanceOf(DataplaneCommandError);
          // The error names the line a human has to look at: the refused delete.
          const failure = failed.error as DataplaneCommandError;
          expect(failure.context.find((l) => l.startsWith('>'))).toMatch(new RegExp(`^>\\s+${failure.line}: -X ${policyChain}$`));
          // Atomic: the workload chains rewritten in the same transaction kept their old rules too.
          await expectKernelHolds(ns.name, backend, v1, 'after the refused transaction');
          expect(parseFilter(await iptablesSave(ns.name, backend, 'filter')).rules.get('FOREIGN-REF')).toEqual([
            `-A FOREIGN-REF -j ${policyChain}`,
          ]);

          await ipt('-F', 'FOREIGN-REF');
          expect(await harness.next()).toMatchObject({ kind: 'synced', reason: 'retry' });
          await expectKernelHolds(ns.name, backend, v2, 'after the retry');
          // The foreign chain itself is not ours: still there, as its owner left it.
          expect(parseFilter(await iptablesSave(ns.name, backend, 'filter')).declared.has('FOREIGN-REF')).toBe(true);
        } finally {
          harness.stop();
        }
      });
    },
  );
});

describeKernel('apply failures: a stale set someone else still references', () => {
  const frontendSet = v1.v4.ipsets.find((s) => s.members.includes('10.244.1.11'))!.name;
  /** The policy now admits role=db pods instead of role=frontend ones: the frontend set is stale. */
  const edited: ClusterSnapshot = {
    ...golden.snapshot,
    policies: golden.snapshot.policies.map((p) => ({
      ...p,
      ingress: (p.ingress ?? []).map((r) => ({ ...r, peers: [{ podSelector: { matchLabels: { role: 'db' }, matchExpressions: [] } }] })),
    })),
  };
  const v2 = desiredOf(edited);

  async function referenceSet(netns: string, backend: IptablesBackend): Promise<() => Promise<void>> {
    await iptables(netns, backend, ['-N', 'FOREIGN-SET']);
    await iptables(netns, backend, ['-A', 'FOREIGN-SET', '-m', 'set', '--match-set', frontendSet, 'src', '-j', 'RETURN']);
    return async () => void (await iptables(netns, backend, ['-F', 'FOREIGN-SET']));
  }

  /** Lets the loop's clock run in 100 ms steps until the set is gone (real tools: each step waits for them too). */
  async function untilDestroyed(harness: ReconcilerHarness, netns: string, set: string): Promise<number> {
    const from = harness.clock.now();
    for (let step = 0; step < 300 && (await savedSets(netns)).has(set); step++) {
      await harness.passTime(100);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return harness.clock.now() - from;
  }

  it.each(BACKENDS)(
    'the destroy fails without failing the sync; a retry destroys the set soon after the reference is gone, before any drift check (%s)',
    async (backend) => {
      expect(v2.v4.ipsets.map((s) => s.name)).not.toContain(frontendSet);
      await withNetns(async (ns) => {
        const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
        const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
        try {
          await harness.start();
          const release = await referenceSet(ns.name, backend);
          expect(await harness.change(edited)).toMatchObject({ kind: 'synced' });
          expect(harness.logger.lines).toContainEqual({ level: 'warn', msg: 'stale ipsets are still in use; retrying their destroy' });
          expect((await savedSets(ns.name)).has(frontendSet)).toBe(true); // still referenced: still there
          const filter = parseFilter(await iptablesSave(ns.name, backend, 'filter'));
          expect(Object.fromEntries(ourChains(filter))).toEqual(Object.fromEntries(expectedFromRestore(renderFullRestore(v2.v4)).chains));

          // Retries while it is referenced keep it and fail nothing.
          await harness.passTime(1_000);
          expect((await savedSets(ns.name)).has(frontendSet)).toBe(true);
          await release();
          const took = await untilDestroyed(harness, ns.name, frontendSet);
          await expectKernelHolds(ns.name, backend, v2, 'after the retry');
          // Well before the 30 s drift check (the fake clock also moves while the real tools run, so the bound
          // is loose; the unit test on the fake kernel pins the backoff itself).
          expect(took).toBeLessThan(10_000);
          expect(harness.events.map((e) => `${e.kind} ${e.reason}`)).toEqual(['synced change', 'synced change']);
        } finally {
          harness.stop();
        }
      });
    },
  );

  // Regression: a failed stale-set destroy used to be forgotten (inSync reset to true, the leftover set
  // later reported as someone else's drift); Syncer.sync now clears its programmed view instead.
  it.each(BACKENDS)('after a failed stale-set destroy the next sync re-reads the kernel and retries it (%s)', async (backend) => {
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const syncer = new Syncer(kernel, OWN, memoryLogger());
      await syncer.sync(v1, { readKernel: true });
      const release = await referenceSet(ns.name, backend);
      await syncer.sync(v2, { readKernel: false });
      await release();

      const next = await syncer.sync(v2, { readKernel: false });

      expect(next.readKernel).toBe(true);
      expect((await savedSets(ns.name)).has(frontendSet)).toBe(false);
    });
  });

  // Regression (same cause): our own leftover set must not be reported as drift by someone else.
  it.each(BACKENDS)('the periodic run that finally destroys our own leftover set reports no drift (%s)', async (backend) => {
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
      try {
        await harness.start();
        const release = await referenceSet(ns.name, backend);
        await harness.change(edited);
        await release();
        await untilDestroyed(harness, ns.name, frontendSet);
        expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
      } finally {
        harness.stop();
      }
    });
  });
});
