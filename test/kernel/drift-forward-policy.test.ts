// Someone flips the FORWARD policy to DROP on a flannel-like node. netfence does not own kernel chain
// policies: the periodic run leaves it as the user set it, reports no drift and writes nothing — and
// allowed pod traffic still flows, because our chains ACCEPT it explicitly. With netfence gone, the same
// traffic dies on the policy: proof that it was our ACCEPT that carried it.

import { jest } from '@jest/globals';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { emptyFamilyState } from '../../src/model/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { settings } from '../helpers/builders.js';
import { CLIENT, OTHER, SERVER, createPolicyNode, type PolicyNode } from '../helpers/bridge-node.js';
import {
  BACKENDS,
  OWN,
  ReconcilerHarness,
  iptables,
  iptablesSave,
  memoryLogger,
  parseFilter,
  recordingKernel,
} from '../helpers/kernel-asserts.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(30_000);

const FLANNEL_JUMP = ['FORWARD', '-m', 'comment', '--comment', 'flanneld forward', '-j', 'FLANNEL-FWD'];

/** FLANNEL-FWD accepts all cluster traffic; take its jump out, wherever the sandbox put it, so only our rules can ACCEPT. */
async function removeFlannelJump(netns: string): Promise<void> {
  for (const backend of BACKENDS) {
    if ((await iptablesSave(netns, backend, 'filter')).includes('-j FLANNEL-FWD')) await iptables(netns, backend, ['-D', ...FLANNEL_JUMP]);
  }
}

const forwardPolicy = async (netns: string, backend: IptablesBackend) =>
  parseFilter(await iptablesSave(netns, backend, 'filter')).policies.get('FORWARD');

describeKernel('drift: a FORWARD policy flipped by someone else', () => {
  describe.each(BACKENDS)('%s', (backend) => {
    let node: PolicyNode;
    beforeAll(async () => {
      if (isRoot()) node = await createPolicyNode();
    });
    afterAll(async () => {
      await node?.destroy();
    });

    it('is left as set, is no drift, and allowed traffic still flows through our explicit ACCEPT', async () => {
      const kernel = recordingKernel(await openKernel({ netns: node.netns, backend }));
      const harness = new ReconcilerHarness({ kernel, snapshot: node.cluster({ a: CLIENT, b: SERVER, c: OTHER }), settings: settings() });
      try {
        expect(await harness.start()).toMatchObject({ kind: 'synced', reason: 'change' });
        await removeFlannelJump(node.netns);
        await iptables(node.netns, backend, ['-P', 'FORWARD', 'DROP']);
        kernel.clear();

        const run = await harness.periodic();

        expect(run).toMatchObject({ kind: 'synced', reason: 'periodic', drift: false });
        expect(kernel.writes).toEqual([]);
        expect(await forwardPolicy(node.netns, backend)).toBe('DROP');
        expect({ a: await node.reachesServer('a'), c: await node.reachesServer('c') }).toEqual({ a: true, c: false });
      } finally {
        harness.stop();
      }

      // Without netfence's rules nothing accepts the flow any more: the policy drops it.
      await new Syncer(kernel, OWN, memoryLogger()).sync({ v4: emptyFamilyState(4), v6: emptyFamilyState(6) }, { readKernel: true });
      expect(await forwardPolicy(node.netns, backend)).toBe('DROP');
      expect(await node.reachesServer('a')).toBe(false);
    });
  });
});
