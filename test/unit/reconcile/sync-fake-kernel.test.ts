// The syncer and the reconciler loop on the validating fake kernel, without root: drift kinds, minimal
// writes, adoption after a restart, failures and retries, foreign state left alone. The kernel suites
// (test/kernel/drift-repair, apply-minimal, apply-failure) prove the same things on the real tools;
// these run in every `npm test`, root or not, and pin the syncer's own decisions.

import { compile } from '../../../src/compile/index.js';
import type { ClusterSnapshot, Pod } from '../../../src/model/index.js';
import { observeFamily } from '../../../src/plan/index.js';
import { Syncer } from '../../../src/reconcile/syncer.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { loadGoldenCase } from '../../helpers/golden.js';
import {
  FOREIGN_IPSETS,
  FOREIGN_V4,
  FOREIGN_V6,
  OWN,
  ReconcilerHarness,
  expectedFromRestore,
  memoryLogger,
  ourChains,
  parseFilter,
  parseSets,
} from '../../helpers/kernel-asserts.js';

const golden = loadGoldenCase('seed-db-policy');
const desired = golden.result.desired;
const expected = expectedFromRestore(golden.rules);
const expectedSets = parseSets(golden.ipsets);

/** What the fake holds of ours, in the shapes the kernel suites compare. */
function ours(kernel: FakeKernel): {
  chains: Record<string, readonly string[]>;
  sets: Record<string, unknown>;
  forward: readonly string[];
} {
  const filter = parseFilter(kernel.save(4));
  return {
    chains: Object.fromEntries(ourChains(filter)),
    sets: Object.fromEntries(parseSets(kernel.ipset.save())),
    forward: filter.rules.get('FORWARD') ?? [],
  };
}

const EXPECTED = { chains: Object.fromEntries(expected.chains), sets: Object.fromEntries(expectedSets) };
const HOOK = expected.hooks.get('FORWARD')![0]!;

function withForeignState(): FakeKernel {
  const kernel = new FakeKernel();
  kernel.foreignIpset(FOREIGN_IPSETS);
  kernel.foreignIptables(4, FOREIGN_V4);
  kernel.foreignIptables(6, FOREIGN_V6);
  return kernel;
}

const leftToDo = async (kernel: FakeKernel): Promise<number> =>
  (await new Syncer(kernel, OWN, memoryLogger()).planOnly(desired)).flatMap((p) => p.changes).length;

const chainOfRole = (kind: string, direction: string): string =>
  desired.v4.chains.find((c) => c.role.kind === kind && 'direction' in c.role && c.role.direction === direction)!.name;
const POLICY_IN = chainOfRole('policy', 'ingress');
const FRONTEND_SET = desired.v4.ipsets.find((s) => s.members.includes('10.244.1.11'))!.name;

interface DriftCase {
  readonly name: string;
  readonly mutate: (kernel: FakeKernel) => void;
  readonly drift: boolean;
  readonly forward?: readonly string[];
}

const DRIFTS: readonly DriftCase[] = [
  { name: 'nothing changed (control)', mutate: () => undefined, drift: false },
  { name: 'a flushed chain', mutate: (k) => k.foreignIptables(4, `*filter\n-F ${POLICY_IN}\nCOMMIT\n`), drift: true },
  {
    name: 'an edited rule',
    mutate: (k) => k.foreignIptables(4, `*filter\n-R ${POLICY_IN} 1 -p tcp -j MARK --set-xmark 0x10000/0x10000\nCOMMIT\n`),
    drift: true,
  },
  { name: 'a removed hook', mutate: (k) => k.foreignIptables(4, '*filter\n-D FORWARD 1\nCOMMIT\n'), drift: true },
  {
    name: 'a foreign ACCEPT inserted above our hook',
    mutate: (k) => k.foreignIptables(4, '*filter\n-I FORWARD 1 -j ACCEPT\nCOMMIT\n'),
    drift: true,
    forward: [HOOK, '-A FORWARD -j ACCEPT'],
  },
  { name: 'a removed set member', mutate: (k) => k.foreignIpset(`del ${FRONTEND_SET} 10.244.1.11\n`), drift: true },
  { name: 'an added set member', mutate: (k) => k.foreignIpset(`add ${FRONTEND_SET} 10.244.1.99\n`), drift: true },
  {
    name: 'a destroyed set (with the chain that used it flushed)',
    mutate: (k) => {
      k.foreignIptables(4, `*filter\n-F ${POLICY_IN}\nCOMMIT\n`);
      k.foreignIpset(`destroy ${FRONTEND_SET}\n`);
    },
    drift: true,
  },
];

describe('reconciler on the fake kernel: one periodic run repairs what someone else changed', () => {
  it.each(DRIFTS.map((d) => ({ ...d })))('$name', async (drift) => {
    const kernel = new FakeKernel();
    const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
    try {
      expect(await harness.start()).toMatchObject({ kind: 'synced', reason: 'change' });
      drift.mutate(kernel);
      expect((await leftToDo(kernel)) > 0).toBe(drift.drift);
      kernel.writes.length = 0;

      expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: drift.drift });

      if (!drift.drift) expect(kernel.writes).toEqual([]);
      const now = ours(kernel);
      expect(now.chains).toEqual(EXPECTED.chains);
      expect(now.sets).toEqual(EXPECTED.sets);
      expect(now.forward).toEqual(drift.forward ?? [HOOK]);
      expect(await leftToDo(kernel)).toBe(0);
    } finally {
      harness.stop();
    }
  });
});

// After a read that matched what was programmed, the syncer remembers that read with the tracker's own chains
// and set members (syncer.ts rememberAsProgrammed): unchanged reads stay in sync, and drift is still found.
describe('reconciler on the fake kernel: drift after reads that matched', () => {
  it.each(DRIFTS.map((d) => ({ ...d })))('$name', async (drift) => {
    const kernel = new FakeKernel();
    const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
    try {
      await harness.start();
      kernel.writes.length = 0;
      for (let i = 0; i < 2; i++) expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
      expect(kernel.writes).toEqual([]);
      drift.mutate(kernel);
      expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: drift.drift });
      expect(ours(kernel)).toMatchObject(EXPECTED);
      expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
      expect(await leftToDo(kernel)).toBe(0);
    } finally {
      harness.stop();
    }
  });
});

describe('syncer on the fake kernel', () => {
  it('programs the golden case, then a second sync writes nothing', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    expect(ours(kernel)).toMatchObject(EXPECTED);
    kernel.writes.length = 0;
    await syncer.sync(desired);
    await syncer.sync(desired, { readKernel: true });
    expect(kernel.writes).toEqual([]);
  });

  it('adopts what a previous process programmed: a new syncer reads the kernel and writes nothing', async () => {
    const kernel = new FakeKernel();
    await new Syncer(kernel, OWN, memoryLogger()).sync(desired);
    kernel.writes.length = 0;
    const restarted = new Syncer(kernel, OWN, memoryLogger());
    const result = await restarted.sync(desired);
    expect(result.readKernel).toBe(true);
    expect(result.drift).toBe(false);
    expect(kernel.writes).toEqual([]);
  });

  it('a one-pod relabel writes only the sets and chains that change', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    const relabeled: ClusterSnapshot = {
      ...golden.snapshot,
      pods: golden.snapshot.pods.map((p): Pod => (p.name === 'frontend' ? { ...p, labels: { ...p.labels, role: 'other' } } : p)),
    };
    const next = compile(relabeled, golden.settings).desired;
    kernel.writes.length = 0;
    await syncer.sync(next);
    // The frontend pod left the role=frontend selection: one set member goes, no chain is rewritten.
    const ipsetText = kernel.writes
      .filter((w) => w.op === 'ipsetRestore')
      .map((w) => w.text)
      .join('');
    expect(ipsetText.split('\n').filter((l) => /^(add|del) /.test(l))).toEqual([`del ${FRONTEND_SET} 10.244.1.11`]);
    expect(kernel.writes.filter((w) => w.op === 'restoreFilter')).toEqual([]);
    expect(await leftToDo(kernel)).toBeGreaterThan(0); // the fake holds the new state, not the golden one
    expect(await new Syncer(kernel, OWN, memoryLogger()).planOnly(next).then((ps) => ps.flatMap((p) => p.changes))).toEqual([]);
  });

  it('a failed iptables-restore leaves the kernel as it was; the retry re-reads and converges', async () => {
    const kernel = new FakeKernel();
    const harness = new ReconcilerHarness({ kernel, snapshot: golden.snapshot, settings: golden.settings });
    try {
      kernel.failNext('restoreFilter');
      const first = await harness.start();
      expect(first.kind).toBe('failed');
      // Sets went in first (step 1), but no chain and no hook: nothing references the new sets yet.
      expect(ours(kernel).chains).toEqual({});
      expect(ours(kernel).forward).toEqual([]);
      const retry = await harness.next();
      expect(retry).toMatchObject({ kind: 'synced' });
      expect(ours(kernel)).toMatchObject(EXPECTED);
    } finally {
      harness.stop();
    }
  });

  it('a restore the fake rejects (as the real tool would) surfaces the failing line and writes nothing', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    const before = kernel.save(4);
    await expect(kernel.restoreFilter(4, '*filter\n:nf-x - [0:0]\n-A nf-x -j nf-missing\nCOMMIT\n')).rejects.toMatchObject({ line: 3 });
    expect(kernel.save(4)).toBe(before);
  });

  it('leaves foreign rules and sets byte for byte, then removes only its own objects on an empty desired state', async () => {
    const kernel = withForeignState();
    const foreignBefore = { v4: kernel.save(4), v6: kernel.save(6), nat: kernel.save(4, 'nat'), sets: kernel.ipset.save() };
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    expect(ours(kernel)).toMatchObject(EXPECTED);
    expect(kernel.save(4, 'nat')).toBe(foreignBefore.nat);

    // What `netfence cleanup` asks for: nothing of ours at all.
    await syncer.sync({ v4: { family: 4, ipsets: [], chains: [], hooks: [] }, v6: { family: 6, ipsets: [], chains: [], hooks: [] } });
    expect(kernel.save(4)).toBe(foreignBefore.v4);
    expect(kernel.save(6)).toBe(foreignBefore.v6);
    expect(kernel.ipset.save()).toBe(foreignBefore.sets);
  });

  // `diff` and `apply` start reading the kernel before they compile (cli/kernel-read.ts): the plan must be
  // made from that read, used once, and a failed read must fail the command, not be swallowed.
  it('useRead: the next plan uses the read taken earlier (once), and its failure surfaces there', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    const families = [4, 6] as const;
    const empty = new Map(families.map((f) => [f, observeFamily(f, kernel.save(f), kernel.ipset.save(), OWN)]));
    syncer.useRead(Promise.resolve(empty));
    // Programmed after the read was taken: the plan still sees the empty kernel it read.
    await new Syncer(kernel, OWN, memoryLogger()).sync(desired);
    kernel.calls.length = 0;
    const plans = await syncer.planOnly(desired);
    expect(plans.flatMap((p) => p.changes).length).toBeGreaterThan(0);
    expect(kernel.calls).toEqual([]);
    // Used once: the next plan reads again and finds the kernel in sync.
    expect((await syncer.planOnly(desired)).flatMap((p) => p.changes)).toEqual([]);
    expect(kernel.calls.filter((c) => c === 'ipsetSave')).toHaveLength(1);

    // A write after the read-ahead began: the read may show part of it, so the next read is taken afresh.
    const racing = new Syncer(kernel, OWN, memoryLogger());
    await racing.sync(desired);
    const readAhead = racing.readAhead();
    await racing.sync({ v4: { family: 4, ipsets: [], chains: [], hooks: [] }, v6: { family: 6, ipsets: [], chains: [], hooks: [] } });
    await readAhead;
    kernel.calls.length = 0;
    expect((await racing.planOnly(desired)).flatMap((p) => p.changes).length).toBeGreaterThan(0);
    expect(kernel.calls.filter((c) => c === 'ipsetSave')).toHaveLength(1);

    // A sync that writes nothing keeps the read-ahead: the drift check after it does not read again.
    const quiet = new Syncer(kernel, OWN, memoryLogger());
    await quiet.sync(desired);
    kernel.calls.length = 0;
    await quiet.readAhead();
    await quiet.sync(desired);
    await quiet.sync(desired, { readKernel: true });
    expect(kernel.calls.filter((c) => c === 'ipsetSave')).toHaveLength(1);

    const broken = new Syncer(new FakeKernel(), OWN, memoryLogger());
    broken.useRead(Promise.reject(new Error('injected failure')));
    await expect(broken.sync(desired, { readKernel: true })).rejects.toThrow('injected failure');

    const failing = new FakeKernel();
    failing.failNext('ipsetSave');
    const brokenAhead = new Syncer(failing, OWN, memoryLogger());
    await brokenAhead.readAhead();
    await expect(brokenAhead.sync(desired, { readKernel: true })).rejects.toThrow('injected failure');
  });
});

// Under churn, changes are written between the drift check's read-ahead and its run. The read still shows
// whether the kernel held what we believed when it was taken; the check must not read again (a second read
// inside the run holds every change up), and must still find drift that was there before the read.
describe('drift check under churn: the read-ahead survives writes made after it', () => {
  const otherSet = desired.v4.ipsets.find((s) => s.name !== FRONTEND_SET && s.members.length > 0)!;
  // A change: one member leaves a set the drift cases below do not touch.
  const changed = {
    ...desired,
    v4: { ...desired.v4, ipsets: desired.v4.ipsets.map((s) => (s === otherSet ? { ...s, members: s.members.slice(1) } : s)) },
  };

  it('no drift: the check after a change is planned from the read-ahead, without reading again', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    await syncer.readAhead();
    await syncer.sync(changed); // a change, written after the read
    kernel.calls.length = 0;
    const check = await syncer.sync(changed, { readKernel: true });
    expect(check.drift).toBe(false);
    expect(kernel.calls.filter((c) => c === 'ipsetSave' || c.startsWith('saveFilter'))).toEqual([]);
    expect(await leftToDoFor(kernel, changed)).toBe(0);
  });

  it('drift before the read-ahead: found and repaired, though a change was written after the read', async () => {
    const kernel = new FakeKernel();
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    kernel.foreignIpset(`add ${FRONTEND_SET} 10.244.1.99\n`);
    await syncer.readAhead();
    await syncer.sync(changed);
    const check = await syncer.sync(changed, { readKernel: true });
    expect(check.drift).toBe(true);
    expect(parseSets(kernel.ipset.save()).get(FRONTEND_SET)).toEqual(expectedSets.get(FRONTEND_SET));
    expect(await leftToDoFor(kernel, changed)).toBe(0);
  });

  it('a write waits while the read-ahead reads, so the read never shows half of it', async () => {
    const inner = new FakeKernel();
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const kernel = {
      supports: (f: 4 | 6) => inner.supports(f),
      saveFilter: (f: 4 | 6) => inner.saveFilter(f),
      ipsetSave: async () => {
        await held;
        order.push('read');
        return inner.ipsetSave();
      },
      ipsetRestore: async (text: string) => {
        order.push('write');
        return inner.ipsetRestore(text);
      },
      restoreFilter: (f: 4 | 6, text: string) => inner.restoreFilter(f, text),
    };
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    release();
    await syncer.sync(desired, { readKernel: true });
    order.length = 0;
    let releaseAhead: () => void = () => undefined;
    const heldAhead = new Promise<void>((resolve) => (releaseAhead = resolve));
    kernel.ipsetSave = async () => {
      await heldAhead;
      order.push('read');
      return inner.ipsetSave();
    };
    const ahead = syncer.readAhead();
    const change = syncer.sync(changed);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]); // the change is planned, its write waits for the read
    releaseAhead();
    await Promise.all([ahead, change]);
    expect(order).toEqual(['read', 'write']);
  });
});

async function leftToDoFor(kernel: FakeKernel, state: typeof desired): Promise<number> {
  return (await new Syncer(kernel, OWN, memoryLogger()).planOnly(state)).flatMap((p) => p.changes).length;
}
