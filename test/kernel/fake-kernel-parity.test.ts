// The fake kernel (test/fakes/fake-kernel.ts) against the real tools, so root-free tests built on it
// prove something: (1) every golden payload, loaded beside foreign state, reads back from the fake
// exactly as iptables-save and ipset save print it from the kernel; (2) every case of the shared table
// is accepted or refused by the real iptables-restore/ipset exactly as the fake's unit test expects.

import { jest } from '@jest/globals';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { FakeKernel } from '../fakes/fake-kernel.js';
import { BASE_IPSET, BASE_IPTABLES, TOOL_CASES } from '../fakes/fake-kernel-cases.js';
import { goldenCaseNames, loadGoldenCase } from '../helpers/golden.js';
import { parseIpsetSave } from '../../src/render/index.js';
import { BACKENDS, FOREIGN_IPSETS, FOREIGN_V4, iptablesRestore, iptablesSave, parseFilter } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns, type Netns } from '../helpers/netns.js';

jest.setTimeout(30_000);

const ipsetRestore = (ns: Netns, text: string) => ns.exec('ipset', ['-exist', 'restore'], text);
const allSets = (save: string) =>
  Object.fromEntries(
    [...parseIpsetSave(save)].map(([name, s]) => [name, { type: s.type, family: s.family, members: [...s.members].sort() }]),
  );
const filterView = (save: string) => {
  const f = parseFilter(save);
  return { rules: Object.fromEntries(f.rules), policies: Object.fromEntries(f.policies) };
};

describeKernel('fake kernel parity: golden payloads read back as the real tools print them', () => {
  const cases = BACKENDS.flatMap((backend) => goldenCaseNames().map((name) => ({ backend, name })));
  it.each(cases)('$name ($backend)', async ({ backend, name }) => {
    const golden = loadGoldenCase(name);
    const fake = new FakeKernel();
    fake.foreignIpset(FOREIGN_IPSETS);
    fake.foreignIptables(4, FOREIGN_V4.slice(FOREIGN_V4.indexOf('*filter')));
    fake.foreignIpset(golden.ipsets);
    fake.foreignIptables(4, golden.rules);
    await withNetns(async (ns) => {
      await ipsetRestore(ns, FOREIGN_IPSETS);
      await iptablesRestore(ns.name, backend, FOREIGN_V4);
      await ipsetRestore(ns, golden.ipsets);
      await iptablesRestore(ns.name, backend, golden.rules);
      expect(filterView(fake.save(4))).toEqual(filterView(await iptablesSave(ns.name, backend, 'filter')));
      expect(allSets(fake.ipset.save())).toEqual(allSets((await ns.exec('ipset', ['save'])).stdout));
    });
  });
});

describeKernel('fake kernel parity: the real tools accept and refuse as the fake does', () => {
  const cases = BACKENDS.flatMap((backend) => TOOL_CASES.map((c) => ({ ...c, backend, title: c.name })));
  it.each(cases)('$title ($backend)', async (kase) => {
    const backend: IptablesBackend = kase.backend;
    await withNetns(async (ns) => {
      await ipsetRestore(ns, BASE_IPSET);
      await iptablesRestore(ns.name, backend, BASE_IPTABLES);
      const family = kase.family ?? 4;
      const before = await iptablesSave(ns.name, backend, 'filter', family);
      const ipset = kase.ipset ? ipsetRestore(ns, kase.ipset) : Promise.resolve();
      if (kase.refused === 'ipset') await expect(ipset).rejects.toMatchObject({ name: 'DataplaneCommandError' });
      else await ipset;
      const iptables = kase.iptables ? iptablesRestore(ns.name, backend, kase.iptables, family) : Promise.resolve();
      if (kase.refused === 'iptables') {
        await expect(iptables).rejects.toMatchObject({ name: 'DataplaneCommandError' });
        expect(filterView(await iptablesSave(ns.name, backend, 'filter', family))).toEqual(filterView(before));
      } else await iptables;
    });
  });
});
