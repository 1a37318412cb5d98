// Members someone changed in a set of ours are repaired, whatever options they were given, and one set
// whose repair the tools refuse does not hold back the rest of the sync. On the validating fake kernel
// (which refuses `del` with member options, as ipset does); test/kernel/ipset-member-repair proves the
// same with the real tools and packets.

import { compile } from '../../../src/compile/index.js';
import { DataplaneCommandError } from '../../../src/dataplane/errors.js';
import { renderFullRestore } from '../../../src/render/index.js';
import { SetsNotProgrammedError } from '../../../src/reconcile/set-writes.js';
import { Syncer, type KernelPort } from '../../../src/reconcile/syncer.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { makePolicy, sel, selectPods, types } from '../../helpers/builders.js';
import { loadGoldenCase } from '../../helpers/golden.js';
import { OWN, expectedFromRestore, memoryLogger, ourChains, parseFilter, parseSets } from '../../helpers/kernel-asserts.js';

const golden = loadGoldenCase('ipblock-excepts-or');
const desired = golden.result.desired;
const except = desired.v4.ipsets.find((s) => s.name.startsWith('nf4x:') && s.members.length > 0)!;
const EXCEPT = except.name as string;
const MEMBER = except.members[0]!;

/** A new deny: every pod of the namespace isolated for ingress, nothing allowed by it. */
const withDeny = compile(
  { ...golden.snapshot, policies: [...golden.snapshot.policies, makePolicy('default', 'deny-all', selectPods(sel()), types('Ingress'))] },
  golden.settings,
).desired;

const sets = (kernel: FakeKernel) => Object.fromEntries(parseSets(kernel.ipset.save()));
const chains = (kernel: FakeKernel) => Object.fromEntries(ourChains(parseFilter(kernel.save(4))));
const expectedSets = (state: typeof desired) =>
  Object.fromEntries(
    parseSets(
      state.v4.ipsets
        .map((s) => [`create ${s.name} ${s.type} family inet`, ...s.members.map((m) => `add ${s.name} ${m}`)].join('\n'))
        .join('\n'),
    ),
  );

/** The fake kernel, with `ipset restore` refusing (on a line, as the tool does) any input that names `refused`. */
function refusing(kernel: FakeKernel, refused: { name: string | undefined }): KernelPort {
  return {
    supports: (f) => kernel.supports(f),
    saveFilter: (f) => kernel.saveFilter(f),
    restoreFilter: (f, t) => kernel.restoreFilter(f, t),
    ipsetSave: () => kernel.ipsetSave(),
    ipsetRestore: async (text) => {
      if (refused.name !== undefined && text.split('\n').some((line) => line.split(' ').includes(refused.name!))) {
        throw new DataplaneCommandError('ipset -exist restore', 1, 'Error in line 1: refused', 1, []);
      }
      return kernel.ipsetRestore(text);
    },
  };
}

describe('ipset members repaired whatever their options', () => {
  it('an except member re-added with nomatch (which lets the address in) is repaired by the next read', async () => {
    const kernel = new FakeKernel([4]);
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    kernel.foreignIpset(`add ${EXCEPT} ${MEMBER} nomatch\n`);
    expect(sets(kernel)[EXCEPT]).not.toEqual(expectedSets(desired)[EXCEPT]);

    const repaired = await syncer.sync(desired, { readKernel: true });
    expect(repaired.drift).toBe(true);
    expect(sets(kernel)).toEqual(expectedSets(desired));
    // In place, in the one batch: the member deleted by its element alone (ipset refuses `del … nomatch`).
    const written = kernel.writes
      .filter((w) => w.op === 'ipsetRestore')
      .at(-1)!
      .text.split('\n');
    expect(written).toEqual(expect.arrayContaining([`del ${EXCEPT} ${MEMBER}`, `add ${EXCEPT} ${MEMBER}`]));
    expect(written.filter((l) => /nomatch|^swap /.test(l))).toEqual([]);
    expect((await syncer.sync(desired, { readKernel: true })).drift).toBe(false);
  });

  it('a set recreated with a small maxelem, which refuses the members it lacks, is rebuilt', async () => {
    const kernel = new FakeKernel([4]);
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    const big = desired.v4.ipsets.find((s) => s.members.length > 1)!;
    kernel.foreignIpset(`flush ${big.name}\n`);
    // Referenced by our rules, so it cannot be destroyed: swapped with a set of the same type but maxelem 1.
    kernel.foreignIpset(
      `create other ${big.type} family inet maxelem 1\nadd other ${big.members[0]!}\nswap other ${big.name}\ndestroy other\n`,
    );
    await syncer.sync(desired, { readKernel: true });
    expect(sets(kernel)).toEqual(expectedSets(desired));
  });
});

describe('one set whose repair fails does not hold back the rest', () => {
  it('a new deny is programmed in the same sync while the except set keeps failing, which is named; it converges once the fault is gone', async () => {
    const kernel = new FakeKernel([4]);
    const refused = { name: undefined as string | undefined };
    const syncer = new Syncer(refusing(kernel, refused), OWN, memoryLogger());
    await syncer.sync(desired);
    kernel.foreignIpset(`del ${EXCEPT} ${MEMBER}\n`);
    refused.name = EXCEPT;

    const failed = syncer.sync(withDeny, { readKernel: true });
    await expect(failed).rejects.toThrow(SetsNotProgrammedError);
    await expect(failed).rejects.toThrow(EXCEPT);
    // Everything but the refused set: the deny's chains and every other set.
    expect(chains(kernel)).toEqual(Object.fromEntries(expectedFromRestore(renderFullRestore(withDeny.v4)).chains));
    const { [EXCEPT]: refusedSet, ...others } = expectedSets(withDeny);
    const { [EXCEPT]: held, ...programmed } = sets(kernel);
    expect(programmed).toEqual(others);
    expect(held).not.toEqual(refusedSet);

    refused.name = undefined;
    await syncer.sync(withDeny, { readKernel: true });
    expect(sets(kernel)).toEqual(expectedSets(withDeny));
  });

  it('a failure that names no line (a tool that hung) fails the sync as before, nothing retried set by set', async () => {
    const kernel = new FakeKernel([4]);
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    kernel.failNext('ipsetRestore');
    await expect(syncer.sync(desired)).rejects.toThrow('injected failure');
    expect(kernel.writes).toEqual([]);
  });
});
