// An operator's slip in the manifests never shrinks what the kernel enforces. Each case below is a
// source that cannot be read completely; loaded leniently it would lose the db pod or its policy, and
// applying that would remove their rules. `apply`, `diff` and `compile` must exit 2 naming the file/document/line,
// and the kernel (iptables-save of every table, ipset save) must be byte-identical before and after.

import { jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { RULES_DIR } from '../helpers/golden.js';
import { BACKENDS, ipset, iptablesSave, stable } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(60_000);

const GOOD = readFileSync(join(RULES_DIR, 'seed-db-policy', 'cluster.yaml'), 'utf8');
const cut = (text: string, marker: string): string => text.slice(0, text.indexOf(marker) + marker.length);

interface Case {
  readonly name: string;
  /** Lays out the bad source under `dir` and returns the --resources argument. */
  readonly make: (dir: string) => string;
  /** What stderr must say (with `<dir>` for the temp dir). */
  readonly says: RegExp;
}

const CASES: readonly Case[] = [
  {
    name: 'a misspelt path',
    make: (dir) => join(dir, 'seed-db-polcy', 'cluster.yaml'),
    says: /error: <dir>\/seed-db-polcy\/cluster\.yaml: \(file\): cannot read: ENOENT/,
  },
  {
    name: 'a document that does not parse',
    make: (dir) => write(dir, 'cluster.yaml', GOOD.replace('{role: db}}\n  policyTypes', '{role: db}\n  policyTypes')),
    says: /error: <dir>\/cluster\.yaml#7: \(document\): .*line \d+/,
  },
  {
    name: 'a document failing schema validation',
    make: (dir) => write(dir, 'cluster.yaml', GOOD.replace('containerPort: 6379', 'containerPort: "6379"')),
    says: /error: <dir>\/cluster\.yaml#2: spec\.containers\[0\]\.ports\[0\]\.containerPort: Pod default\/db: must be integer \(got "6379"\) \(line 19\)/,
  },
  {
    name: 'an empty directory',
    make: (dir) => {
      mkdirSync(join(dir, 'rules'));
      return join(dir, 'rules');
    },
    says: /error: <dir>\/rules: \(file\): holds no manifest file/,
  },
  {
    name: 'a file caught at 0 bytes',
    make: (dir) => write(dir, 'cluster.yaml', ''),
    says: /error: <dir>\/cluster\.yaml: \(file\): is empty/,
  },
  {
    name: 'a file cut short mid-write',
    make: (dir) => write(dir, 'cluster.yaml', cut(GOOD, 'ipBlock: {cidr: 172.17.0.0/16, exc')),
    says: /error: <dir>\/cluster\.yaml#7: \(document\): /,
  },
  {
    name: 'a manifest symlink left dangling (ConfigMap volume mid-swap)',
    make: (dir) => {
      mkdirSync(join(dir, 'cm'));
      symlinkSync(join(dir, 'cm', '..data', 'cluster.yaml'), join(dir, 'cm', 'cluster.yaml'));
      return join(dir, 'cm');
    },
    says: /error: <dir>\/cm\/cluster\.yaml: \(file\): cannot read: ENOENT/,
  },
];

function write(dir: string, name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}

async function kernelState(netns: string, backend: (typeof BACKENDS)[number]): Promise<string> {
  return `${stable(await iptablesSave(netns, backend))}\n${await ipset(netns, ['save'])}`;
}

async function run(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => void out.push(t), err: (t) => void err.push(t) });
  return { code, out: out.join(''), err: err.join('') };
}

describeKernel('a source that cannot be read completely changes nothing', () => {
  it.each(BACKENDS)('apply, diff and compile exit 2, name the problem, and the kernel is byte-identical (%s)', async (backend) => {
    await withNetns(async (ns) => {
      const base = mkdtempSync(join(tmpdir(), 'nft-badsrc-'));
      try {
        const node = ['--netns', ns.name, '--node-name', 'node-1', '--backend', backend];
        const good = write(base, 'good.yaml', GOOD);
        expect((await run(['apply', ...node, '--resources', good])).code).toBe(0);
        const before = await kernelState(ns.name, backend);
        expect(before).toContain(':nf-tw-'); // the db pod's chains are there to lose
        expect(before).toMatch(/create nf4b:\S+ hash:net/); // and the policy's ipBlock set

        for (const c of CASES) {
          const dir = mkdtempSync(join(base, 'case-'));
          const path = c.make(dir);
          for (const command of ['apply', 'diff', 'compile']) {
            const r = await run([command, ...node, '--resources', path]);
            const err = r.err.replaceAll(dir, '<dir>');
            expect({ case: c.name, command, code: r.code }).toEqual({ case: c.name, command, code: 2 });
            expect(err).toMatch(c.says);
            expect(err).toContain(`netfence ${command}: `);
            expect(err).toContain('not read completely; stopped before touching the kernel');
            expect(r.out).toBe('');
          }
          expect({ case: c.name, state: await kernelState(ns.name, backend) }).toEqual({ case: c.name, state: before });
        }

        // The same tree read completely applies again (the refusal was about the source, not the kernel).
        expect((await run(['diff', ...node, '--resources', good])).code).toBe(0);
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    });
  });
});
