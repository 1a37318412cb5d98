// The planner's interface promises more than today's callers ask of it, pinned here so that a future
// caller cannot break it silently:
// - `previous` is a hint (the state `observed` was derived from). Where a set's observed members cannot be
//   that state's (another number of them: the kernel was edited, or the caller read the kernel), the set
//   is patched from what is observed, so the kernel ends up holding exactly the desired members;
// - a set of ours found with the right type but the other address family is rebuilt (a retype): patching
//   it would put IPv4 members into an inet6 set, which ipset refuses, failing the whole restore.

import { observeFamily, planFamily } from '../../../src/plan/index.js';
import { recordMemberDelta, type FamilyState, type IpSet } from '../../../src/model/index.js';
import { renderFullRestore } from '../../../src/render/index.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { loadGoldenCase } from '../../helpers/golden.js';

const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' };
const desired = loadGoldenCase('cluster-network-policy-tiers').result.desired.v4;
const set = desired.ipsets.find((s) => s.type === 'hash:ip' && s.members.length >= 3)!;

/** iptables-save of `state` (the restore payload inserts hooks; a save prints them appended). */
const saveOf = (state: FamilyState): string =>
  renderFullRestore(state)
    .replace(/^-I (\S+) 1 /gm, '-A $1 ')
    .replace('*filter\n', '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n');

/** A kernel holding every desired set, except `set` as `create` and `members` say. */
function kernelWith(create: string, members: readonly string[]): FakeKernel {
  const kernel = new FakeKernel([4]);
  kernel.foreignIpset(
    desired.ipsets
      .flatMap((s) =>
        s.name === set.name
          ? [`create ${s.name} ${create} hashsize 1024 maxelem 65536`, ...members.map((m) => `add ${s.name} ${m}`)]
          : [`create ${s.name} ${s.type} family inet hashsize 1024 maxelem 65536`, ...s.members.map((m) => `add ${s.name} ${m}`)],
      )
      .join('\n') + '\n',
  );
  return kernel;
}

const membersOf = (kernel: FakeKernel, name: string): string[] =>
  kernel.ipset
    .save()
    .split('\n')
    .flatMap((l) => (l.startsWith(`add ${name} `) ? [l.split(' ')[2]!] : []))
    .sort();

describe('planFamily with a `previous` its observed sets do not match', () => {
  // The last apply programmed `set` without its first member; the desired state adds it back.
  const before: IpSet = { ...set, members: set.members.slice(1) };
  const previous: FamilyState = { ...desired, ipsets: desired.ipsets.map((s) => (s === set ? before : s)) };

  it.each([
    { name: 'no recorded change', recorded: false },
    { name: "the compiler's recorded change from `previous`", recorded: true },
  ])('someone added members to the kernel since: the plan removes them and adds the missing one ($name)', async ({ recorded }) => {
    const next: IpSet = { ...set, members: [...set.members] };
    if (recorded) recordMemberDelta(next, before, { added: [set.members[0]!], removed: [] });
    const state: FamilyState = { ...desired, ipsets: desired.ipsets.map((s) => (s === set ? next : s)) };
    const foreign = ['10.244.1.250', '10.244.1.251'];
    const kernel = kernelWith('hash:ip family inet', [...before.members, ...foreign]);
    const plan = planFamily(state, observeFamily(4, saveOf(previous), await kernel.ipsetSave(), OWN), OWN, previous);
    await kernel.ipsetRestore(plan.ipsetRestore);
    expect(membersOf(kernel, set.name)).toEqual([...set.members].sort());
  });
});

describe('planFamily with a set of ours in the other address family', () => {
  it('is planned as a retype, as a set of another type is, and nothing is added to it in place', async () => {
    const kernel = kernelWith(`${set.type} family inet6`, []);
    // observeFamily keeps only the family's own sets, so no caller hands this in today: built by hand.
    const observed = observeFamily(4, saveOf(desired), await kernel.ipsetSave(), OWN);
    const seen = observeFamily(6, '', await kernel.ipsetSave(), OWN).ipsets.get(set.name)!;
    expect(seen.family).toBe(6);
    const plan = planFamily(desired, { ...observed, ipsets: new Map([...observed.ipsets, [set.name, seen]]) }, OWN);
    expect(plan.retype.map((s) => s.name)).toEqual([set.name]);
    // The patch step leaves it to the retype: ipset refuses an IPv4 member in an inet6 set, failing the whole restore.
    await kernel.ipsetRestore(plan.ipsetRestore);
  });
});
