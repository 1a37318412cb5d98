// The fake kernel refuses what the real tools refuse (the same table is run against the real tools in
// test/kernel/fake-kernel-parity.test.ts), and a refused iptables transaction leaves nothing behind.

import { FakeKernel } from '../../fakes/fake-kernel.js';
import { BASE_IPSET, BASE_IPTABLES, TOOL_CASES } from '../../fakes/fake-kernel-cases.js';

function base(): FakeKernel {
  const kernel = new FakeKernel();
  kernel.foreignIpset(BASE_IPSET);
  kernel.foreignIptables(4, BASE_IPTABLES);
  return kernel;
}

describe('fake kernel: accepts and refuses like iptables-restore and ipset restore', () => {
  it.each(TOOL_CASES.map((c) => ({ ...c })))('$name', async (kase) => {
    const kernel = base();
    const family = kase.family ?? 4;
    const before = { v4: kernel.save(4), v6: kernel.save(6) };
    const ipset = kase.ipset ? kernel.ipsetRestore(kase.ipset) : Promise.resolve();
    if (kase.refused === 'ipset') await expect(ipset).rejects.toMatchObject({ name: 'DataplaneCommandError' });
    else await ipset;
    const iptables = kase.iptables ? kernel.restoreFilter(family, kase.iptables) : Promise.resolve();
    if (kase.refused === 'iptables') {
      await expect(iptables).rejects.toMatchObject({ name: 'DataplaneCommandError', line: expect.any(Number) });
      expect({ v4: kernel.save(4), v6: kernel.save(6) }).toEqual(before);
    } else await iptables;
  });

  it('saves a member given nomatch with it, and adding it again plain replaces it, as the kernel does', () => {
    const kernel = base();
    const members = () =>
      kernel.ipset
        .save()
        .split('\n')
        .filter((l) => l.startsWith('add nfk4b'));
    kernel.foreignIpset('create nfk4b:net hash:net family inet hashsize 1024 maxelem 1048576\nadd nfk4b:net 10.1.0.0/16\n');
    kernel.foreignIpset('add nfk4b:net 10.1.0.0/16 nomatch\n');
    expect(members()).toEqual(['add nfk4b:net 10.1.0.0/16 nomatch']);
    kernel.foreignIpset('add nfk4b:net 10.1.0.0/16\n');
    expect(members()).toEqual(['add nfk4b:net 10.1.0.0/16']);
  });

  it('saves hash:net members as ipset does: host bits masked, full-length prefixes bare', () => {
    const kernel = base();
    kernel.foreignIpset(
      'create nfk6b:v6 hash:net family inet6 hashsize 1024 maxelem 1048576\nadd nfk6b:v6 2001:DB8:0:0::5/64\nadd nfk6b:v6 2001:db8::1/128\n',
    );
    expect(
      kernel.ipset
        .save()
        .split('\n')
        .filter((l) => l.startsWith('add nfk6b')),
    ).toEqual(['add nfk6b:v6 2001:db8::/64', 'add nfk6b:v6 2001:db8::1']);
  });

  it('an injected failure throws once and changes nothing', async () => {
    const kernel = base();
    const before = kernel.save(4);
    kernel.failNext('restoreFilter');
    await expect(kernel.restoreFilter(4, '*filter\n-A FORWARD -j DROP\nCOMMIT\n')).rejects.toThrow('injected failure');
    expect(kernel.save(4)).toBe(before);
    await kernel.restoreFilter(4, '*filter\n-A FORWARD -j DROP\nCOMMIT\n');
    expect(kernel.save(4)).toContain('-A FORWARD -j DROP');
  });
});
