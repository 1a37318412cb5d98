// The syncer and learned sets (ClusterNetworkPolicy domainNames): members the DNS agent adds, with their
// counting-down timeouts and comments, are not drift — a drift check finds the kernel as programmed, writes
// nothing and keeps them — while the set recreated with other options is drift and is rebuilt. On the
// validating fake kernel; test/kernel/dns-learned-sets.test.ts proves the same on the real tools with packets.

import { Syncer } from '../../../src/reconcile/syncer.js';
import { FakeKernel } from '../../fakes/fake-kernel.js';
import { loadGoldenCase } from '../../helpers/golden.js';
import { OWN, memoryLogger } from '../../helpers/kernel-asserts.js';

const golden = loadGoldenCase('domain-names-egress');
const desired = golden.result.desired;
const learned = desired.v4.ipsets.find((s) => s.learned)!;

describe('the syncer and learned sets', () => {
  it('a learned member is no drift: the drift check writes nothing and the member stays', async () => {
    const kernel = new FakeKernel([4]);
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    kernel.foreignIpset(`add ${learned.name} 198.51.100.10 timeout 30 comment "1700000000 good.example"\n`);
    const writes = kernel.writes.length;
    const check = await syncer.sync(desired, { readKernel: true });
    expect(check.drift).toBe(false);
    expect(check.plans.flatMap((p) => p.changes)).toEqual([]);
    expect(kernel.writes.slice(writes)).toEqual([]);
    expect(kernel.ipset.save()).toContain(`add ${learned.name} 198.51.100.10 timeout 30 comment "1700000000 good.example"`);
  });

  it('the learned set recreated with another maxelem is drift and is rebuilt with the options the rule needs', async () => {
    const kernel = new FakeKernel([4]);
    const syncer = new Syncer(kernel, OWN, memoryLogger());
    await syncer.sync(desired);
    // Someone swaps in a same-named set with other options (ipset refuses to recreate one that rules use).
    kernel.foreignIpset(
      `create nf4t:other hash:ip family inet hashsize 1024 maxelem 10 timeout 30 comment\nswap nf4t:other ${learned.name}\n`,
    );
    expect(kernel.ipset.save()).toMatch(new RegExp(`create ${learned.name} .*maxelem 10 timeout 30 comment`));
    const check = await syncer.sync(desired, { readKernel: true });
    expect(check.drift).toBe(true);
    expect(kernel.ipset.save()).toMatch(
      new RegExp(`create ${learned.name} hash:ip family inet hashsize 1024 maxelem 4096 timeout 30 comment`),
    );
  });
});
