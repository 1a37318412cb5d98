// `netfence diff` shows exactly what `apply` then writes: nothing (exit 0, summary only) on a kernel in sync,
// and after a policy change the very chains and sets the next apply rewrites.

import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../src/cli/main.js';
import { compile } from '../../src/compile/index.js';
import { loadManifests } from '../../src/cluster/manifests.js';
import { openKernel } from '../../src/dataplane/kernel.js';
import { defaultNodeSettings } from '../../src/model/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { nullLogger } from '../../src/log.js';
import { RULES_DIR } from '../helpers/golden.js';
import { createNetns, describeKernel, destroyAll } from '../helpers/netns.js';

afterAll(destroyAll);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

/** The chain and set names a restore input touches. */
function writtenNames(iptables: string[], ipsets: string[]): string[] {
  const names = new Set<string>();
  for (const text of iptables) for (const m of text.matchAll(/^(?::(\S+) |-X (\S+))/gm)) names.add(`chain ${m[1] ?? m[2]}`);
  for (const text of ipsets)
    for (const m of text.matchAll(/^(?:create|add|del|destroy) (\S+)/gm)) if (!/^nf\dt:/.test(m[1]!)) names.add(`set ${m[1]}`);
  return [...names].sort();
}

describeKernel('diff shows what apply writes', () => {
  it('in sync: exit 0 and only the summary; after a policy edit: exactly the written chains and sets', async () => {
    const ns = await createNetns();
    const dir = mkdtempSync(join(tmpdir(), 'nft-diff-'));
    try {
      const original = readFileSync(join(RULES_DIR, 'seed-db-policy', 'cluster.yaml'), 'utf8');
      writeFileSync(join(dir, 'cluster.yaml'), original);
      const args = ['--netns', ns.name, '--node-name', 'node-1', '--resources', dir];
      expect(await main(['apply', ...args], capture().io)).toBe(0);

      const inSync = capture();
      expect(await main(['diff', ...args], inSync.io)).toBe(0);
      expect(inSync.out.join('')).toBe('in sync: the kernel holds exactly the desired chains, sets and hooks\n');

      // Edit the policy: another port, and the frontend peer becomes a backend peer.
      writeFileSync(
        join(dir, 'cluster.yaml'),
        original.replace('port: 6379', 'port: 6380').replace('{role: frontend}}\n    ports', '{role: backend}}\n    ports'),
      );
      const differs = capture();
      expect(await main(['diff', ...args, '--json'], differs.io)).toBe(1);
      const json = JSON.parse(differs.out.join('')) as { families: { changes: { object: string; name: string }[] }[] };
      const shown = json.families.flatMap((f) => f.changes.filter((c) => c.object !== 'hook').map((c) => `${c.object} ${c.name}`)).sort();
      expect(shown.length).toBeGreaterThan(0);

      // Apply the same change through a kernel that records what it is given.
      const kernel = await openKernel({ netns: ns.name });
      const iptables: string[] = [];
      const ipsets: string[] = [];
      const recording = {
        ...kernel,
        restoreFilter: (family: 4 | 6, text: string) => (iptables.push(text), kernel.restoreFilter(family, text)),
        ipsetRestore: (text: string) => (ipsets.push(text), kernel.ipsetRestore(text)),
      };
      const loaded = loadManifests([dir]);
      const desired = compile(loaded.snapshot, defaultNodeSettings('node-1', ['10.244.1.0/24'])).desired;
      await new Syncer(recording, { chainPrefix: 'nf-', ipsetPrefix: 'nf' }, nullLogger).sync(desired, { readKernel: true });
      expect(writtenNames(iptables, ipsets)).toEqual(shown);

      const after = capture();
      expect(await main(['diff', ...args], after.io)).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await ns.destroy();
    }
  }, 30_000);

  // diff starts reading the kernel before it compiles (cli/kernel-read.ts): a tool that failed meanwhile must
  // still fail the command, worded with its remedy, with exit 2 (not "in sync", not "differs").
  it('a kernel that cannot be read: exit 2 with the tool error and its remedy', async () => {
    const missing = `nft-gone-${process.pid}-${Date.now()}`;
    const args = ['--netns', missing, '--node-name', 'node-1', '--resources', join(RULES_DIR, 'seed-db-policy', 'cluster.yaml')];
    const failed = capture();
    expect(await main(['diff', ...args], failed.io)).toBe(2);
    expect(failed.err.join('')).toMatch(new RegExp(`network namespace ${missing} does not exist[^]*Cannot open network namespace`));
    expect(failed.out).toEqual([]);
  });
});
