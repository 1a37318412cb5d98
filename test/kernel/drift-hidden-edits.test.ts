// A rule of ours switched off in place, comment kept, is repaired by one drift check on both backends, and
// the packet it let through is refused again. The edits add the negation of something that matches every
// packet, so the rule matches none: `! -s 0.0.0.0/0` (compared equal before the canonical rule form kept
// negations; iptables-nft refuses it) and `! -i +`, which iptables-legacy-save prints byte for byte as the
// rule we wrote (the legacy listing shows it, render/legacy-listing.ts). Edited: the isolating DROP of the
// server's ingress chain, and the FORWARD hook every policy hangs from.

import { jest } from '@jest/globals';
import { openKernel, openKernelAndRead } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { settings } from '../helpers/builders.js';
import { CLIENT, OTHER, SERVER, createPolicyNode, type PolicyNode } from '../helpers/bridge-node.js';
import { BACKENDS, ReconcilerHarness, iptablesRestore, iptablesSave, recordingKernel } from '../helpers/kernel-asserts.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(90_000);

interface Located {
  readonly chain: string;
  /** 1-based position in the chain. */
  readonly position: number;
  /** The rule as saved, after `-A <chain> `. */
  readonly rule: string;
}

/** The first saved rule of a chain that `pick` accepts, with its position. */
async function locate(netns: string, backend: IptablesBackend, pick: (chain: string, rule: string) => boolean): Promise<Located> {
  const positions = new Map<string, number>();
  for (const line of (await iptablesSave(netns, backend, 'filter')).split('\n')) {
    const m = /^-A (\S+) (.*)$/.exec(line);
    if (!m) continue;
    const position = (positions.get(m[1]!) ?? 0) + 1;
    positions.set(m[1]!, position);
    if (pick(m[1]!, m[2]!)) return { chain: m[1]!, position, rule: m[2]! };
  }
  throw new Error('rule not found');
}

/** The isolating DROP at the end of the server's ingress chain, and the FORWARD hook into nf-FORWARD. */
const TARGETS = {
  'isolating DROP': (chain: string, rule: string) =>
    chain.startsWith('nf-tw-') && rule.includes('isolated for ingress') && rule.endsWith('-j DROP'),
  'FORWARD hook': (chain: string, rule: string) => chain === 'FORWARD' && rule.includes('"nf:') && rule.endsWith('-j nf-FORWARD'),
} as const;

/** Which negations each backend's tools accept: iptables-nft refuses `! -s 0.0.0.0/0` ("Invalid argument"). */
const EDITS: Readonly<Record<IptablesBackend, readonly string[]>> = {
  legacy: ['! -s 0.0.0.0/0', '! -i +', '! -o +'],
  nft: ['! -i +', '! -o +'],
};

describeKernel('drift: a rule of ours switched off in place, comment kept', () => {
  describe.each(BACKENDS)('%s', (backend) => {
    let node: PolicyNode;
    let harness: ReconcilerHarness | undefined;
    beforeAll(async () => {
      if (!isRoot()) return;
      node = await createPolicyNode();
      const kernel = recordingKernel(await openKernel({ netns: node.netns, backend }));
      harness = new ReconcilerHarness({ kernel, snapshot: node.cluster({ a: CLIENT, b: SERVER, c: OTHER }), settings: settings() });
      expect(await harness.start()).toMatchObject({ kind: 'synced' });
    });
    afterAll(async () => {
      harness?.stop();
      await node?.destroy();
    });

    const cases = Object.keys(TARGETS).flatMap((target) => EDITS[backend].map((edit) => [target, edit] as const));
    it.each(cases)('%s edited with %s: repaired by one drift check, c refused again', async (target, edit) => {
      expect(await node.reachesServer('c')).toBe(false);
      const at = await locate(node.netns, backend, TARGETS[target as keyof typeof TARGETS]);
      await iptablesRestore(node.netns, backend, `*filter\n-R ${at.chain} ${at.position} ${edit} ${at.rule}\nCOMMIT\n`);
      // The edit switched the rule off: c gets through.
      expect(await node.reachesServer('c', 1000)).toBe(true);
      // The one-shot commands' read (diff, inspect, trace) shows it too.
      const { read } = await openKernelAndRead({ netns: node.netns, backend });
      const lines = read.filters.get(4)!.split('\n');
      expect(lines).not.toContain(`-A ${at.chain} ${at.rule}`);
      expect(
        lines.filter(
          (l) => l.startsWith(`-A ${at.chain} `) && l.includes(edit) && l.includes(at.rule.slice(at.rule.indexOf('-m comment'))),
        ),
      ).toHaveLength(1);

      expect(await harness!.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: true });
      expect(await locate(node.netns, backend, TARGETS[target as keyof typeof TARGETS])).toEqual(at);
      expect({ a: await node.reachesServer('a', 1000), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
      // And the repair holds: the next check finds nothing to do.
      expect(await harness!.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
    });
  });
});
