// An except set member re-added with `nomatch` lets its address in (hash:net treats it as not in the set).
// The drift check repairs it with the real tools: c, the excepted pod, is refused again. And when one set's
// repair keeps failing, a new deny still goes in with the very next change: every other set and the chains
// are programmed, the failing set is named, and the node converges once the fault is gone.
//
// The lasting failure is a PATH shim in front of `ipset` that refuses any `ipset -exist restore` naming the
// except set while a marker file exists (`ip netns exec` finds tools through PATH, so only this test's
// commands see it), as the tools refuse a set they cannot program.

import { jest } from '@jest/globals';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { ClusterSnapshot } from '../../src/model/index.js';
import { blockPeer, ingress, makePolicy, rule, sel, selectPods, settings, tcp, types } from '../helpers/builders.js';
import { CLIENT, OTHER, POD_CIDR, SERVER, createPolicyNode, type PolicyNode } from '../helpers/bridge-node.js';
import { BACKENDS, ReconcilerHarness, ipset } from '../helpers/kernel-asserts.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(90_000);

/** b accepts TCP 80 from the pod CIDR except c; a is isolated for ingress when `denyA`. */
function cluster(node: PolicyNode, denyA: boolean): ClusterSnapshot {
  const base = node.cluster({ a: CLIENT, b: SERVER, c: OTHER });
  const except = makePolicy(
    'x',
    'all-but-c',
    selectPods(sel({ ...SERVER })),
    ingress(rule([blockPeer(POD_CIDR, `${node.ip('c')}/32`)], [tcp(80)])),
  );
  const deny = makePolicy('x', 'deny-a', selectPods(sel({ ...CLIENT })), types('Ingress'));
  return { ...base, policies: denyA ? [except, deny] : [except] };
}

/** The except set and its one member, as `ipset save` prints them. */
async function exceptSet(netns: string): Promise<{ name: string; member: string }> {
  const line = (await ipset(netns, ['save'])).split('\n').find((l) => /^add nf4x:\S+ /.test(l));
  if (!line) throw new Error('no except set member');
  const [, name, member] = line.split(' ');
  return { name: name!, member: member! };
}

/** A PATH shim refusing `ipset -exist restore` input that names `set` while the returned marker file exists. */
function refusingIpset(set: string): { dir: string; marker: string; restore: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'nf-ipset-shim-'));
  const real = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'].map((d) => join(d, 'ipset')).find((p) => existsSync(p));
  if (!real) throw new Error('ipset not found');
  const marker = join(dir, 'refuse');
  writeFileSync(
    join(dir, 'ipset'),
    [
      '#!/bin/sh',
      `if [ "$1" = "-exist" ] && [ "$2" = "restore" ] && [ -e '${marker}' ]; then`,
      '  input=$(cat)',
      `  if printf '%s\\n' "$input" | grep -q -e ' ${set}$' -e ' ${set} '; then`,
      `    echo "ipset v7.17: Error in line 1: refused by the test" >&2; exit 1`,
      '  fi',
      `  printf '%s\\n' "$input" | exec '${real}' "$@"`,
      'fi',
      `exec '${real}' "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(join(dir, 'ipset'), 0o755);
  const path = process.env['PATH'];
  process.env['PATH'] = `${dir}:${path ?? ''}`;
  return {
    dir,
    marker,
    restore: () => {
      process.env['PATH'] = path;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describeKernel('ipset members changed by someone else', () => {
  describe.each(BACKENDS)('%s', (backend) => {
    let node: PolicyNode;
    let harness: ReconcilerHarness | undefined;
    beforeAll(async () => {
      if (!isRoot()) return;
      node = await createPolicyNode();
      harness = new ReconcilerHarness({
        kernel: await openKernel({ netns: node.netns, backend }),
        snapshot: cluster(node, false),
        settings: settings(),
      });
      expect(await harness.start()).toMatchObject({ kind: 'synced' });
    });
    afterAll(async () => {
      harness?.stop();
      await node?.destroy();
    });

    const reachesA = async (from: 'c'): Promise<boolean> =>
      (await node.sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: node.ip('a'), port: 80, timeoutMs: 300 })).ok;

    it('an except member re-added with nomatch is repaired by one drift check: c is refused again', async () => {
      expect({ a: await node.reachesServer('a', 1000), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
      const { name, member } = await exceptSet(node.netns);
      await ipset(node.netns, ['add', '-exist', name, member, 'nomatch']);
      expect(await node.reachesServer('c', 1000)).toBe(true);

      expect(await harness!.periodic()).toMatchObject({ kind: 'synced', reason: 'periodic', drift: true });
      expect(await exceptSet(node.netns)).toEqual({ name, member });
      expect({ a: await node.reachesServer('a', 1000), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
    });

    it('while the except set cannot be repaired, a new deny is programmed by the next change; all converges after', async () => {
      const { name, member } = await exceptSet(node.netns);
      const shim = refusingIpset(name);
      try {
        writeFileSync(shim.marker, '');
        await ipset(node.netns, ['add', '-exist', name, member, 'nomatch']);
        // The drift check finds the member and cannot repair it: the sync fails, naming the set.
        const check = await harness!.periodic();
        expect(check).toMatchObject({ kind: 'failed' });
        expect(String((check as { error?: unknown }).error)).toContain(name);
        expect(await reachesA('c')).toBe(true);

        // A new deny (a isolated for ingress) in the next change run, which reads the kernel again.
        const change = await harness!.change(cluster(node, true));
        expect(change).toMatchObject({ kind: 'failed' });
        expect(String((change as { error?: unknown }).error)).toContain(name);
        expect(await reachesA('c')).toBe(false);
        expect(harness!.logger.lines.map((l) => l.msg)).toContain(
          'ipsets could not be programmed; everything else was, and the sync will be retried',
        );

        rmSync(shim.marker);
        const run = await harness!.next();
        expect(run).toMatchObject({ kind: 'synced' });
        expect(await exceptSet(node.netns)).toEqual({ name, member });
        expect({ a: await node.reachesServer('a', 1000), c: await node.reachesServer('c'), ca: await reachesA('c') }).toEqual({
          a: true,
          c: false,
          ca: false,
        });
      } finally {
        shim.restore();
      }
    });
  });
});
