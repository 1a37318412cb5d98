// The ipset netlink writer against the real ip_set module, in a scratch namespace: every set type netfence
// creates (hash:ip, hash:net, hash:ip,port; src/compile/ipsets.ts TYPE_OF) in both families, large batches, and
// what the kernel does with a batch it refuses in the middle. What the kernel holds is read back with the
// `ipset` tool, so the writer is judged by the kernel's own account.

import { fileURLToPath } from 'node:url';
import { openIpsetNetlink, IpsetMemberSyntaxError, IpsetNetlinkError, type IpsetNetlink } from '../../src/dataplane/ipset-netlink.js';
import { parseIpsetSave } from '../../src/render/index.js';
import { createNetns, describeKernel, type Netns } from '../helpers/netns.js';

const SETS = [
  ['s4', 'hash:ip', 'inet'],
  ['s6', 'hash:ip', 'inet6'],
  ['n4', 'hash:net', 'inet'],
  ['n6', 'hash:net', 'inet6'],
  ['p4', 'hash:ip,port', 'inet'],
  ['p6', 'hash:ip,port', 'inet6'],
] as const;

describeKernel('ipset over netlink, real kernel', () => {
  let ns: Netns;
  let writer: IpsetNetlink;

  beforeAll(async () => {
    ns = await createNetns('nft-ipnl');
    for (const [name, type, family] of SETS) await ns.exec('ipset', ['create', name, type, 'family', family]);
    writer = await openIpsetNetlink({ netns: ns.name });
  });
  afterAll(async () => {
    await writer?.close();
    await ns?.destroy();
  });

  const members = async (set: string): Promise<string[]> => {
    const saved = parseIpsetSave((await ns.exec('ipset', ['save', set])).stdout);
    return [...(saved.get(set)?.members ?? [])].sort();
  };
  const count = async (set: string): Promise<number> =>
    Number(/^Number of entries: (\d+)$/m.exec((await ns.exec('ipset', ['list', '-t', set])).stdout)?.[1]);

  it('speaks the protocol the kernel offers', () => {
    expect(writer.protocol).toBe(7);
  });

  it.each([
    ['s4', ['10.1.0.1', '10.1.0.2', '10.1.0.3']],
    ['s6', ['fd00::1', 'fd00::a:2']],
    ['n4', ['10.9.0.0/16', '10.10.0.1', '192.168.0.0/24']],
    ['n6', ['fd00:1::/64', 'fd00:2::5']],
    ['p4', ['10.1.2.3,tcp:80', '10.1.2.4,udp:53', '10.1.2.5,sctp:9000']],
    ['p6', ['fd00::1,tcp:8080', 'fd00::2,udp:53', 'fd00::3,sctp:1']],
  ])('%s: adds and deletes exactly the members asked for, as ipset save prints them', async (set, want) => {
    await writer.apply([{ set, op: 'add', members: want }]);
    // ipset prints a hash:net host without /32 (/128) and ip,port members as given.
    expect(await members(set)).toEqual([...want].sort());
    await writer.apply([{ set, op: 'del', members: [want[0]!] }]);
    expect(await members(set)).toEqual(want.slice(1).sort());
    // A present member re-added and an absent one deleted are no errors (no NLM_F_EXCL, as `ipset -exist`).
    await writer.apply([
      { set, op: 'add', members: want.slice(1) },
      { set, op: 'del', members: [want[0]!] },
    ]);
    expect(await members(set)).toEqual(want.slice(1).sort());
  });

  it('applies one call of many sets in order: a delete and re-add of the same member leaves it present', async () => {
    await writer.apply([
      { set: 's4', op: 'add', members: ['10.2.0.1'] },
      { set: 's4', op: 'del', members: ['10.2.0.1'] },
      { set: 's4', op: 'add', members: ['10.2.0.1'] },
      { set: 'p6', op: 'add', members: ['fd00::9,tcp:9'] },
    ]);
    expect(await members('s4')).toContain('10.2.0.1');
    expect(await members('p6')).toContain('fd00::9,tcp:9');
  });

  it('large batches: 20,000 IPv4 and 5,000 IPv6 ip,port members in one call, then all removed', async () => {
    await ns.exec('ipset', ['create', 'big4', 'hash:ip', 'family', 'inet', 'maxelem', '1048576']);
    await ns.exec('ipset', ['create', 'big6', 'hash:ip,port', 'family', 'inet6', 'maxelem', '1048576']);
    const v4 = Array.from({ length: 20_000 }, (_, i) => `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`);
    const v6 = Array.from({ length: 5_000 }, (_, i) => `fd00:b::${i.toString(16)},tcp:${1 + (i % 65535)}`);
    await writer.apply([
      { set: 'big4', op: 'add', members: v4 },
      { set: 'big6', op: 'add', members: v6 },
    ]);
    expect(await count('big4')).toBe(20_000);
    expect(await count('big6')).toBe(5_000);
    const saved = await members('big6');
    expect(saved).toContain('fd00:b::1387,tcp:5000');
    await writer.apply([
      { set: 'big4', op: 'del', members: v4 },
      { set: 'big6', op: 'del', members: v6 },
    ]);
    expect(await count('big4')).toBe(0);
    expect(await count('big6')).toBe(0);
  });

  it('an error in the middle of a batch: the kernel kept the members before it, dropped those after it in that request, and still ran the next request', async () => {
    await ns.exec('ipset', ['create', 'mid', 'hash:net', 'family', 'inet']);
    await ns.exec('ipset', ['create', 'after', 'hash:ip', 'family', 'inet']);
    const err = await writer
      .apply([
        { set: 'mid', op: 'add', members: ['10.20.0.0/16', '10.0.0.0/0', '10.21.0.0/16'] },
        { set: 'after', op: 'add', members: ['10.22.0.1'] },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetNetlinkError);
    expect(err).toMatchObject({ set: 'mid', op: 'add', member: '10.0.0.0/0', errno: 4104 });
    expect((err as Error).message).toMatch(/invalid CIDR/);
    expect(await members('mid')).toEqual(['10.20.0.0/16']);
    // Requests are independent in the kernel: the one after the refused one was applied. The caller is told of
    // the failure and re-reads the kernel (the syncer's markOutOfSync), so nothing relies on the rest.
    expect(await members('after')).toEqual(['10.22.0.1']);
  });

  it('names what the kernel refuses: a missing set, an address of the other family', async () => {
    await expect(writer.apply([{ set: 'nosuchset', op: 'add', members: ['10.1.2.3'] }])).rejects.toMatchObject({
      name: 'IpsetNetlinkError',
      set: 'nosuchset',
      errno: 2,
    });
    const wrongFamily = await writer.apply([{ set: 's6', op: 'add', members: ['10.1.2.3'] }]).catch((e: unknown) => e);
    expect(wrongFamily).toBeInstanceOf(IpsetNetlinkError);
    expect(wrongFamily).toMatchObject({ set: 's6', member: '10.1.2.3', errno: 4097 });
    expect(await members('s6')).not.toContain('10.1.2.3');
  });

  it('learned sets: each member with its own timeout and comment, as ipset save prints them; re-adding refreshes; full is named', async () => {
    await ns.exec('ipset', ['create', 'l4', 'hash:ip', 'family', 'inet', 'timeout', '30', 'maxelem', '2', 'comment']);
    await ns.exec('ipset', ['create', 'l6', 'hash:ip', 'family', 'inet6', 'timeout', '30', 'comment']);
    await writer.apply([
      { set: 'l4', op: 'add', members: [{ member: '198.51.100.10', timeout: 600, comment: '1764000000 good.example' }] },
      { set: 'l6', op: 'add', members: [{ member: '2001:db8::10', timeout: 86400, comment: '1764000001 a.good.example' }] },
    ]);
    const saved = (await ns.exec('ipset', ['save'])).stdout;
    // The kernel counts down from the timeout given: at most one second gone by the time it is read.
    expect(saved).toMatch(/^add l4 198\.51\.100\.10 timeout (600|599) comment "1764000000 good\.example"$/m);
    expect(saved).toMatch(/^add l6 2001:db8::10 timeout (86400|86399) comment "1764000001 a\.good\.example"$/m);
    // Added again (`-exist`): the new timeout and comment replace the old.
    await writer.apply([
      { set: 'l4', op: 'add', members: [{ member: '198.51.100.10', timeout: 5000, comment: '1764000002 good.example' }] },
    ]);
    expect((await ns.exec('ipset', ['save', 'l4'])).stdout).toMatch(
      /^add l4 198\.51\.100\.10 timeout (5000|4999) comment "1764000002 good\.example"$/m,
    );
    await writer.apply([{ set: 'l4', op: 'add', members: [{ member: '198.51.100.11', timeout: 60, comment: 'x' }] }]);
    await expect(
      writer.apply([{ set: 'l4', op: 'add', members: [{ member: '198.51.100.12', timeout: 60, comment: 'y' }] }]),
    ).rejects.toMatchObject({ name: 'IpsetNetlinkError', set: 'l4', member: '198.51.100.12', errno: 4352 });
  });

  it('a malformed member fails the whole call before anything is sent', async () => {
    await expect(writer.apply([{ set: 's4', op: 'add', members: ['10.3.0.1', '10.3.0.300'] }])).rejects.toBeInstanceOf(
      IpsetMemberSyntaxError,
    );
    expect(await members('s4')).not.toContain('10.3.0.1');
  });
});

describeKernel('ipset over netlink, refused by the environment', () => {
  it('without CAP_NET_ADMIN the kernel answers EPERM to the protocol query, which is a refusal (fall back), not a failed write', async () => {
    const ns = await createNetns('nft-ipnl');
    try {
      // This process runs the writer in-process inside the namespace, with CAP_NET_ADMIN dropped from its bounding
      // set, as a daemon started without that capability would.
      const loader = fileURLToPath(new URL('../../scripts/register-ts.mjs', import.meta.url));
      const module = fileURLToPath(new URL('../../src/dataplane/ipset-netlink.ts', import.meta.url));
      const script = `const m = await import(${JSON.stringify(module)}); try { await m.openIpsetNetlink(); console.log('opened'); } catch (e) { console.log(JSON.stringify({ name: e.name, reason: e.reason })); }`;
      const { stdout } = await ns.exec('setpriv', [
        '--bounding-set=-net_admin',
        '--inh-caps=-net_admin',
        process.execPath,
        '--import',
        loader,
        '--input-type=module',
        '-e',
        script,
      ]);
      expect(JSON.parse(stdout.trim())).toEqual({ name: 'IpsetNetlinkRefused', reason: expect.stringMatching(/protocol query: EPERM/) });
    } finally {
      await ns.destroy();
    }
  });
});
