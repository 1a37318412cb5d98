// The drift check judges our rules by identity (the nf:<hash> comment) and meaning, not by printed text,
// on the real tools and with real packets. A rule of ours rewritten with its matches in another order
// (another iptables could print it so) is left alone: no drift, no restore. The same rule edited to let
// every pod in, its comment kept, is repaired by the next periodic run, and the pod it let in is out again.

import { jest } from '@jest/globals';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { compile } from '../../src/compile/index.js';
import { renderFullRestore } from '../../src/render/index.js';
import { settings } from '../helpers/builders.js';
import { CLIENT, OTHER, SERVER, createPolicyNode, type PolicyNode } from '../helpers/bridge-node.js';
import {
  BACKENDS,
  ReconcilerHarness,
  expectedFromRestore,
  iptablesRestore,
  iptablesSave,
  ourChains,
  parseFilter,
  recordingKernel,
} from '../helpers/kernel-asserts.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(60_000);

/** The policy chain's rule that allows role=client to b:80, as saved: `-A <chain> <rule>`. */
async function allowRule(netns: string, backend: IptablesBackend): Promise<{ chain: string; rule: string }> {
  const line = (await iptablesSave(netns, backend, 'filter')).split('\n').find((l) => /^-A nf-pi-\S+ .*--match-set /.test(l));
  if (!line) throw new Error('no policy rule with a set match');
  const [, chain, rule] = /^-A (\S+) (.*)$/.exec(line)!;
  return { chain: chain!, rule: rule! };
}

/** Someone replaces rule 1 of `chain` through iptables-restore, as an operator or another tool would. */
const replaceRule = (netns: string, backend: IptablesBackend, chain: string, rule: string): Promise<void> =>
  iptablesRestore(netns, backend, `*filter\n-R ${chain} 1 ${rule}\nCOMMIT\n`);

describeKernel('drift: rules judged by identity and meaning, not by print', () => {
  describe.each(BACKENDS)('%s', (backend) => {
    let node: PolicyNode;
    beforeAll(async () => {
      if (isRoot()) node = await createPolicyNode();
    });
    afterAll(async () => {
      await node?.destroy();
    });

    it('leaves a reordered print of our rule alone, and repairs an edit that kept its comment', async () => {
      const kernel = recordingKernel(await openKernel({ netns: node.netns, backend }));
      const cluster = node.cluster({ a: CLIENT, b: SERVER, c: OTHER });
      const harness = new ReconcilerHarness({ kernel, snapshot: cluster, settings: settings() });
      const rendered = expectedFromRestore(renderFullRestore(compile(cluster, settings()).desired.v4)).chains;
      const ours = async () => Object.fromEntries(ourChains(parseFilter(await iptablesSave(node.netns, backend, 'filter'))));
      try {
        expect(await harness.start()).toMatchObject({ kind: 'synced', reason: 'change' });
        expect({ a: await node.reachesServer('a'), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
        const { chain, rule } = await allowRule(node.netns, backend);

        // The same rule with its matches in another order and the tcp module named: the kernel prints it so.
        const comment = /-m comment --comment "[^"]*"/.exec(rule)![0];
        const set = /-m set --match-set \S+ src/.exec(rule)![0];
        const ports = /-m multiport --dports \S+/.exec(rule)![0];
        const target = /-j MARK .*$/.exec(rule)![0];
        await replaceRule(node.netns, backend, chain, `-p tcp -m tcp ${ports} ${set} ${comment} ${target}`);
        const reprinted = await allowRule(node.netns, backend);
        expect(reprinted.rule).not.toBe(rule);
        expect(reprinted.rule.indexOf('--dports')).toBeLessThan(reprinted.rule.indexOf('--match-set'));
        kernel.clear();

        expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
        expect(kernel.writes).toEqual([]);
        expect((await allowRule(node.netns, backend)).rule).toBe(reprinted.rule);
        expect({ a: await node.reachesServer('a'), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });

        // The rule widened to every source, comment (and so its hash) kept: c now gets through.
        await replaceRule(node.netns, backend, chain, rule.replace(` ${set}`, ''));
        expect((await allowRule(node.netns, backend).catch(() => undefined))?.rule).toBeUndefined();
        expect(await node.reachesServer('c')).toBe(true);
        kernel.clear();

        expect(await harness.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: true });
        expect(kernel.writes.filter((w) => w.op === 'iptables-restore')).toHaveLength(1);
        expect(await ours()).toEqual(Object.fromEntries(rendered));
        expect({ a: await node.reachesServer('a'), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
        expect(harness.logger.lines.map((l) => l.msg)).toContain(
          'repaired drift: netfence-owned kernel state had been changed by someone else',
        );
      } finally {
        harness.stop();
      }
    });
  });
});
