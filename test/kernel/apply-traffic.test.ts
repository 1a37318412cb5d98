// Real packets through a flannel-like node: a policy lets x/a reach x/b on TCP 80 and not x/c; then
// relabelling c (and a) moves them in and out of the allowed set — which writes set members only, no
// iptables-restore — and the traffic follows.

import { jest } from '@jest/globals';
import { compile } from '../../src/compile/index.js';
import { openKernel } from '../../src/dataplane/kernel.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { settings } from '../helpers/builders.js';
import { CLIENT, OTHER, SERVER, createPolicyNode, type PodLabels, type PodName, type PolicyNode } from '../helpers/bridge-node.js';
import { BACKENDS, OWN, memberLines, memoryLogger, recordingKernel } from '../helpers/kernel-asserts.js';
import { describeKernel, isRoot } from '../helpers/netns.js';

jest.setTimeout(30_000);

interface Step {
  readonly name: string;
  /** Pod labels to program; undefined: netfence has not run yet. */
  readonly labels?: PodLabels;
  /** Whether a and c reach b:80 afterwards. */
  readonly reach: { readonly a: boolean; readonly c: boolean };
  /** A relabel: the one member line it must write to the allowed-clients set, and nothing else. */
  readonly member?: readonly ['add' | 'del', PodName];
}

const STEPS: readonly Step[] = [
  { name: 'before netfence: everything flows', reach: { a: true, c: true } },
  { name: 'policy applied: a allowed, c denied', labels: { a: CLIENT, b: SERVER, c: OTHER }, reach: { a: true, c: false } },
  {
    name: 'c relabelled client: c allowed too',
    labels: { a: CLIENT, b: SERVER, c: CLIENT },
    reach: { a: true, c: true },
    member: ['add', 'c'],
  },
  { name: 'a relabelled other: a denied', labels: { a: OTHER, b: SERVER, c: CLIENT }, reach: { a: false, c: true }, member: ['del', 'a'] },
];

describeKernel('apply: real traffic between pods on a flannel-like node', () => {
  describe.each(BACKENDS)('%s', (backend) => {
    let node: PolicyNode;
    beforeAll(async () => {
      if (isRoot()) node = await createPolicyNode();
    });
    afterAll(async () => {
      await node?.destroy();
    });

    it('traffic follows the policy and the labels; a relabel writes one set member only', async () => {
      const kernel = recordingKernel(await openKernel({ netns: node.netns, backend }));
      const syncer = new Syncer(kernel, OWN, memoryLogger());
      for (const step of STEPS) {
        kernel.clear();
        if (step.labels) {
          const { desired } = compile(node.cluster(step.labels), settings());
          await syncer.sync(desired, { readKernel: false });
          if (step.member) {
            // The policy's only pod-selector set: role=client pods of namespace x.
            const clients = desired.v4.ipsets.filter((s) => s.type === 'hash:ip').map((s) => s.name);
            expect(clients).toHaveLength(1);
            const [verb, pod] = step.member;
            const written = {
              step: step.name,
              iptablesRestores: kernel.writes.filter((w) => w.op === 'iptables-restore').length,
              members: kernel.writes.flatMap((w) => (w.op === 'ipset-restore' ? memberLines(w.text) : [])),
            };
            expect(written).toEqual({ step: step.name, iptablesRestores: 0, members: [`${verb} ${clients[0]} ${node.ip(pod)}`] });
          }
        }
        const reach = { a: await node.reachesServer('a'), c: await node.reachesServer('c') };
        expect({ step: step.name, reach }).toEqual({ step: step.name, reach: step.reach });
      }
    });
  });
});
