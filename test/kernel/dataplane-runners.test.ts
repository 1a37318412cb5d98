// The kernel-tool runners against the real tools, each case in its own scratch netns.

import { detectBackend } from '../../src/dataplane/backend.js';
import { flushFlows } from '../../src/dataplane/conntrack.js';
import { DataplaneCommandError } from '../../src/dataplane/errors.js';
import { createIpsetRunner } from '../../src/dataplane/ipset.js';
import { createIptablesRunner, type IptablesBackend } from '../../src/dataplane/iptables.js';
import type { IpFamily } from '../../src/model/cluster.js';
import { createNetns, describeKernel, withNetns, type Netns } from '../helpers/netns.js';

/** Save output without the "# Generated/Completed … on <date>" lines, which differ on every call. */
const stable = (save: string): string =>
  save
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');

const restoreText = (...lines: string[]): string => [...lines, ''].join('\n');

const GOOD = restoreText(
  '*filter',
  ':nf-test - [0:0]',
  '-A nf-test -p tcp --dport 80 -m comment --comment "nf:hello world" -j ACCEPT',
  '-A nf-test -j RETURN',
  'COMMIT',
);

interface BadCase {
  readonly name: string;
  readonly text: string;
  /** The line a human must fix. */
  readonly line: number;
}

const BAD: readonly BadCase[] = [
  {
    name: 'unknown option',
    text: restoreText('*filter', ':nf-bad - [0:0]', '-A nf-bad -j ACCEPT', '-A nf-bad --bogus 1 -j ACCEPT', 'COMMIT'),
    line: 4,
  },
  {
    name: 'append to a chain that does not exist',
    text: restoreText('*filter', ':nf-bad - [0:0]', '-A nf-bad -j ACCEPT', '-A nf-nope -j ACCEPT', 'COMMIT'),
    line: 4,
  },
  {
    // nft reports this on the COMMIT line; the runner moves it to the rule that jumps.
    name: 'jump to a chain that does not exist',
    text: restoreText(
      '*filter',
      ':nf-bad - [0:0]',
      '-A nf-bad -j ACCEPT',
      '-A nf-bad -m comment --comment x -j nf-missing',
      '-A nf-bad -j RETURN',
      'COMMIT',
    ),
    line: 4,
  },
  {
    name: 'input ends without COMMIT',
    text: restoreText('*filter', ':nf-bad - [0:0]', '-A nf-bad -j ACCEPT'),
    line: 4,
  },
];

const COMBOS: readonly { backend: IptablesBackend; family: IpFamily }[] = [
  { backend: 'nft', family: 4 },
  { backend: 'nft', family: 6 },
  { backend: 'legacy', family: 4 },
  { backend: 'legacy', family: 6 },
];

describeKernel('IptablesRunner', () => {
  describe.each(COMBOS)('$backend IPv$family', ({ backend, family }) => {
    let ns: Netns;
    beforeEach(async () => {
      ns = await createNetns();
    });
    afterEach(async () => {
      await ns.destroy();
    });
    const runner = () => createIptablesRunner({ backend, family, netns: ns.name });

    it('restores a new chain with a comment rule, and save shows it', async () => {
      await runner().restore(GOOD, { noflush: true });
      const saved = await runner().save('filter');
      expect(saved).toContain(':nf-test - [0:0]');
      expect(saved).toMatch(/^-A nf-test -p tcp -m tcp --dport 80 -m comment --comment "nf:hello world" -j ACCEPT$/m);
      expect(saved).toMatch(/^-A nf-test -j RETURN$/m);
    });

    it('--noflush keeps chains the input does not mention', async () => {
      await runner().restore(GOOD, { noflush: true });
      await runner().restore(restoreText('*filter', ':nf-other - [0:0]', '-A nf-other -j DROP', 'COMMIT'), { noflush: true });
      const saved = await runner().save('filter');
      expect(saved).toContain(':nf-test - [0:0]');
      expect(saved).toMatch(/^-A nf-other -j DROP$/m);
    });

    it('--test validates and writes nothing', async () => {
      const before = stable(await runner().save('filter'));
      await runner().restore(GOOD, { noflush: true, test: true });
      const after = stable(await runner().save('filter'));
      expect(after).toBe(before);
      expect(after).not.toContain('nf-test');
    });

    it.each(BAD)('a bad input ($name) names line $line and leaves the previous ruleset unchanged', async ({ text, line }) => {
      await runner().restore(GOOD, { noflush: true });
      const before = stable(await runner().save('filter'));

      const err = await runner()
        .restore(text, { noflush: true })
        .then(
          () => undefined,
          (e: unknown) => e,
        );

      expect(err).toBeInstanceOf(DataplaneCommandError);
      const failure = err as DataplaneCommandError;
      expect(failure.command).toContain(`${family === 6 ? 'ip6tables' : 'iptables'}-${backend}-restore --wait --noflush`);
      expect(failure.line).toBe(line);
      const badLine = text.split('\n')[line - 1] ?? '';
      expect(failure.context).toContain(`>${String(line).padStart(5)}: ${badLine}`);
      expect(stable(await runner().save('filter'))).toBe(before);
    });
  });
});

describeKernel('IpsetRunner', () => {
  const SETS = restoreText(
    'create nf4s-test hash:net family inet hashsize 1024 maxelem 65536',
    'add nf4s-test 10.0.0.0/24',
    'add nf4s-test 10.1.2.3',
    'create nf6s-test hash:net family inet6 hashsize 1024 maxelem 65536',
    'add nf6s-test fd00::/64',
  );

  it('restore, save and listNames round-trip', () =>
    withNetns(async (ns) => {
      const ipsets = createIpsetRunner({ netns: ns.name });
      await ipsets.restore(SETS);
      // -exist: replaying the same text is a no-op, not an error.
      await ipsets.restore(SETS);
      expect((await ipsets.listNames()).sort()).toEqual(['nf4s-test', 'nf6s-test']);
      const saved = await ipsets.save();
      expect(saved).toMatch(/^add nf4s-test 10\.0\.0\.0\/24$/m);
      expect(saved).toMatch(/^add nf4s-test 10\.1\.2\.3$/m);
      expect(saved).toMatch(/^add nf6s-test fd00::\/64$/m);

      // What `save` printed restores into an empty namespace unchanged.
      await withNetns(async (other) => {
        const copy = createIpsetRunner({ netns: other.name });
        await copy.restore(saved);
        expect(await copy.save()).toBe(saved);
      });
    }));

  it('sets are per network namespace', () =>
    withNetns(async (a) =>
      withNetns(async (b) => {
        await createIpsetRunner({ netns: a.name }).restore(SETS);
        expect(await createIpsetRunner({ netns: b.name }).listNames()).toEqual([]);
      }),
    ));

  it.each([
    {
      name: 'prefix out of range',
      text: restoreText('create nf4s-bad hash:net family inet', 'add nf4s-bad 10.0.0.0/24', 'add nf4s-bad 10.0.0.0/33'),
      line: 3,
    },
    { name: 'add to a missing set', text: restoreText('create nf4s-bad hash:net family inet', 'add nf4s-nope 10.0.0.1'), line: 2 },
    { name: 'unknown set type', text: restoreText('create nf4s-bad hash:nett'), line: 1 },
  ])('a bad input ($name) names line $line', ({ text, line }) =>
    withNetns(async (ns) => {
      const err = await createIpsetRunner({ netns: ns.name })
        .restore(text)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(DataplaneCommandError);
      expect((err as DataplaneCommandError).line).toBe(line);
      expect((err as DataplaneCommandError).context.join('\n')).toContain(text.split('\n')[line - 1]);
    }),
  );
});

describeKernel('flushFlows (conntrack)', () => {
  it.each<{ name: string; family: IpFamily }>([
    { name: 'IPv4', family: 4 },
    { name: 'IPv6', family: 6 },
  ])('an empty $name table is not an error', ({ family }) =>
    withNetns(async (ns) => {
      expect(await flushFlows({ family, netns: ns.name })).toBe(0);
      expect(await flushFlows({ family, protocol: 'TCP', dport: 80, netns: ns.name })).toBe(0);
    }),
  );

  it('deletes only the flows that match', () =>
    withNetns(async (ns) => {
      const insert = (src: string, dst: string, dport: number) =>
        ns.exec('conntrack', [
          '-I',
          '-s',
          src,
          '-d',
          dst,
          '-p',
          'tcp',
          '--sport',
          '40000',
          '--dport',
          String(dport),
          '--state',
          'ESTABLISHED',
          '-t',
          '120',
          '-u',
          'ASSURED',
        ]);
      await insert('10.0.0.1', '10.0.0.2', 80);
      await insert('10.0.0.1', '10.0.0.3', 80);
      await insert('10.0.0.1', '10.0.0.2', 443);

      expect(await flushFlows({ family: 4, dst: '10.0.0.2', protocol: 'TCP', dport: 80, netns: ns.name })).toBe(1);
      const { stdout } = await ns.exec('conntrack', ['-L', '-f', 'ipv4']);
      expect(stdout).toMatch(/dst=10\.0\.0\.3 sport=40000 dport=80 /);
      expect(stdout).toMatch(/dst=10\.0\.0\.2 sport=40000 dport=443 /);
      expect(stdout).not.toMatch(/dst=10\.0\.0\.2 sport=40000 dport=80 /);
    }));
});

describeKernel('detectBackend', () => {
  const seed = (backend: IptablesBackend, family: IpFamily, ns: Netns) =>
    createIptablesRunner({ backend, family, netns: ns.name }).restore(GOOD, { noflush: true });

  it.each<{ name: string; seed: readonly { backend: IptablesBackend; family: IpFamily }[]; expect: IptablesBackend }>([
    { name: 'empty namespace → nft', seed: [], expect: 'nft' },
    { name: 'legacy rules only → legacy', seed: [{ backend: 'legacy', family: 4 }], expect: 'legacy' },
    { name: 'legacy IPv6 rules only → legacy', seed: [{ backend: 'legacy', family: 6 }], expect: 'legacy' },
    { name: 'nft rules only → nft', seed: [{ backend: 'nft', family: 4 }], expect: 'nft' },
    {
      name: 'more legacy than nft → legacy',
      seed: [
        { backend: 'nft', family: 4 },
        { backend: 'legacy', family: 4 },
        { backend: 'legacy', family: 6 },
      ],
      expect: 'legacy',
    },
  ])('$name', ({ seed: seeds, expect: want }) =>
    withNetns(async (ns) => {
      for (const s of seeds) await seed(s.backend, s.family, ns);
      const decision = await detectBackend({ netns: ns.name });
      expect(decision.backend).toBe(want);
    }),
  );

  it('kubelet hint chain in nft wins over more legacy rules', () =>
    withNetns(async (ns) => {
      await seed('legacy', 4, ns);
      await seed('legacy', 6, ns);
      await createIptablesRunner({ backend: 'nft', family: 4, netns: ns.name }).restore(
        restoreText('*mangle', ':KUBE-IPTABLES-HINT - [0:0]', 'COMMIT'),
        {
          noflush: true,
        },
      );
      expect((await detectBackend({ netns: ns.name })).backend).toBe('nft');
    }));

  it('override skips detection', async () => {
    expect(await detectBackend({ override: 'legacy' })).toEqual({ backend: 'legacy', reason: 'configured: legacy' });
  });
});
