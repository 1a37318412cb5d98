// sysctl, link listing and the netns fixture itself, in scratch namespaces. The root namespace is
// only ever read.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DataplaneCommandError } from '../../src/dataplane/errors.js';
import { run } from '../../src/dataplane/exec.js';
import { linksFromIpJson, listLinks } from '../../src/dataplane/links.js';
import { readSysctl, writeSysctl } from '../../src/dataplane/sysctl.js';
import { createNetns, describeKernel, withNetns, type Netns } from '../helpers/netns.js';

const netnsNames = async (): Promise<string[]> =>
  (await run('ip', ['netns', 'list'])).stdout
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n !== '');

describeKernel('sysctl', () => {
  it.each([
    { key: 'net.ipv4.ip_forward', value: '1' },
    { key: 'net.ipv6.conf.all.forwarding', value: '1' },
    { key: 'net.bridge.bridge-nf-call-iptables', value: '0' },
  ])('$key is written in the netns only', ({ key, value }) =>
    withNetns(async (ns) => {
      const rootBefore = await readSysctl(key);
      const initial = await readSysctl(key, { netns: ns.name });
      expect(initial).toMatch(/^[01]$/);
      await writeSysctl(key, value, { netns: ns.name });
      expect(await readSysctl(key, { netns: ns.name })).toBe(value);
      expect(await readSysctl(key)).toBe(rootBefore);
    }),
  );

  it.each([{ netns: true }, { netns: false }])('an unknown key is a DataplaneCommandError (netns: $netns)', ({ netns }) =>
    withNetns(async (ns) => {
      const err = await readSysctl('net.ipv4.nf_no_such_key', netns ? { netns: ns.name } : {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(DataplaneCommandError);
    }),
  );
});

describeKernel('listLinks', () => {
  it('finds a bridge, its enslaved veth and the addresses in a netns (ip -j path)', () =>
    withNetns(async (ns) => {
      const ip = (...args: string[]) => ns.exec('ip', args);
      await ip('link', 'add', 'nft-br0', 'type', 'bridge');
      await ip('link', 'add', 'nft-v0', 'type', 'veth', 'peer', 'name', 'nft-v1');
      await ip('link', 'set', 'nft-v0', 'master', 'nft-br0');
      await ip('addr', 'add', '10.244.1.1/24', 'dev', 'nft-br0');
      await ip('addr', 'add', 'fd00:1::1/64', 'dev', 'nft-br0', 'nodad');

      const links = await listLinks({ netns: ns.name });
      const byName = (name: string) => links.find((l) => l.name === name);
      expect(byName('lo')).toMatchObject({ addresses: ['127.0.0.1', '::1'] });
      expect(byName('nft-br0')).toMatchObject({ kind: 'bridge', addresses: ['10.244.1.1', 'fd00:1::1'] });
      expect(byName('nft-v0')).toMatchObject({ kind: 'veth', master: 'nft-br0' });
      expect(byName('nft-v1')?.master).toBeUndefined();
    }));

  it('netlink answers the same as ip -j for the current namespace (read only)', async () => {
    const [viaNetlink, links, addrs] = await Promise.all([
      listLinks(),
      run('ip', ['-j', '-d', 'link', 'show']),
      run('ip', ['-j', 'addr', 'show']),
    ]);
    expect(viaNetlink.length).toBeGreaterThan(0);
    expect(viaNetlink).toEqual(linksFromIpJson(links.stdout, addrs.stdout));
  });
});

describeKernel('netns fixture', () => {
  it('creates <prefix>-<6 hex> with loopback up, and destroy removes it', async () => {
    const ns = await createNetns('nft');
    expect(ns.name).toMatch(/^nft-[0-9a-f]{6}$/);
    expect(await netnsNames()).toContain(ns.name);
    const { stdout } = await ns.exec('ip', ['-j', 'link', 'show', 'lo']);
    expect(JSON.parse(stdout)[0].flags).toContain('UP');
    await ns.destroy();
    await ns.destroy(); // twice is fine
    expect(await netnsNames()).not.toContain(ns.name);
  });

  it('exec passes stdin', () =>
    withNetns(async (ns) => {
      expect((await ns.exec('cat', [], 'hello\n')).stdout).toBe('hello\n');
    }));

  it('withNetns destroys the namespace when fn throws', async () => {
    let seen: Netns | undefined;
    await expect(
      withNetns(async (ns) => {
        seen = ns;
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(seen).toBeDefined();
    expect(await netnsNames()).not.toContain(seen?.name);
  });

  // A process that forgets to destroy (or is killed) must still not leak: the exit and signal hooks.
  describe('a forgetful process', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'nft-fixture-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it.each([
      { name: 'exits normally', ending: 'process.exit(0);', signal: false },
      {
        name: 'gets SIGTERM',
        ending: "process.kill(process.pid, 'SIGTERM'); await new Promise((r) => setTimeout(r, 5000));",
        signal: true,
      },
      { name: 'gets SIGINT', ending: "process.kill(process.pid, 'SIGINT'); await new Promise((r) => setTimeout(r, 5000));", signal: true },
    ])(
      '$name',
      async ({ ending, signal }) => {
        const helper = resolve('test/helpers/netns.ts');
        const script = join(dir, `forget-${Math.random().toString(16).slice(2)}.mjs`);
        const nameFile = `${script}.name`;
        await writeFile(
          script,
          `import { writeFileSync } from 'node:fs';\n` +
            `import { createNetns } from ${JSON.stringify(`file://${helper}`)};\n` +
            `const ns = await createNetns('nft');\nwriteFileSync(${JSON.stringify(nameFile)}, ns.name);\n${ending}\n`,
        );
        const result = await run('node', ['--import', resolve('scripts/register-ts.mjs'), script]).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (signal) {
          // The hook re-raises the signal, so the child still dies of it (no exit code).
          expect(result).toBeInstanceOf(DataplaneCommandError);
          expect((result as DataplaneCommandError).exitCode).toBeUndefined();
        } else {
          expect(result).toBeUndefined();
        }
        const name = await readFile(nameFile, 'utf8');
        expect(name).toMatch(/^nft-[0-9a-f]{6}$/);
        expect(await netnsNames()).not.toContain(name);
      },
      20_000,
    );
  });
});
