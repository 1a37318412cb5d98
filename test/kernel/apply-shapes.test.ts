// Shapes the golden corpus does not reach, on a real kernel (nft and legacy): a dual-stack node (the
// IPv6 side through ip6tables), a node with enough pods for a dispatch tree, and a set rebuilt by
// temp-set swap. Each must read back exactly as compiled, re-apply as a no-op, and change minimally.

import { jest } from '@jest/globals';
import { compile } from '../../src/compile/index.js';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { ClusterSnapshot, DesiredState, FamilyState, IpFamily } from '../../src/model/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { appendLines, renderChain, renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';
import {
  blockPeer,
  egress,
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPeer,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
} from '../helpers/builders.js';
import {
  BACKENDS,
  OWN,
  declaredChains,
  expectedFromRestore,
  iptablesSave,
  memberLines,
  memoryLogger,
  ourChains,
  parseFilter,
  parseSets,
  recordingKernel,
  savedSets,
} from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(20_000);

const V6_CIDR = 'fd00:10:244:1::/64';
const dualStack = settings({ podCidrs: ['10.244.1.0/24', V6_CIDR] });
const v4only = settings();

const policies = [
  makePolicy(
    'web',
    'db-ingress',
    selectPods(sel({ role: 'db' })),
    ingress(rule([podPeer(sel({ role: 'api' })), nsPeer(sel({ team: 'ops' }))], [tcp(5432)])),
  ),
  makePolicy(
    'web',
    'api-egress',
    selectPods(sel({ role: 'api' })),
    egress(rule([blockPeer('10.0.0.0/8', '10.1.0.0/16'), blockPeer('fd00::/8', 'fd00:99::/32')], [tcp(443)])),
  ),
];
const namespaces = [makeNamespace('web'), makeNamespace('ops', { team: 'ops' })];

function dualStackCluster(): ClusterSnapshot {
  return snapshot({
    namespaces,
    policies,
    pods: [
      makePod('web', 'db', '10.244.1.10', ips('10.244.1.10', 'fd00:10:244:1::a'), labels({ role: 'db' })),
      makePod('web', 'api', '10.244.1.11', ips('10.244.1.11', 'fd00:10:244:1::b'), labels({ role: 'api' })),
      makePod('ops', 'tool', '10.244.2.5', ips('10.244.2.5', 'fd00:10:244:2::5'), labels({ app: 'tool' }), onNode('node-2')),
    ],
  });
}

/** `n` local api pods: more than a flat dispatch chain holds, so the dispatch becomes a tree. */
function manyPodsCluster(n: number): ClusterSnapshot {
  const pods = Array.from({ length: n }, (_, i) =>
    makePod('web', `api-${i}`, `10.244.1.${10 + i}`, labels({ role: i === 0 ? 'db' : 'api' })),
  );
  return snapshot({ namespaces, policies, pods });
}

/** `n` remote api pods: many members of one set at once. */
function manyRemoteApis(n: number): ClusterSnapshot {
  const remote = Array.from({ length: n }, (_, i) =>
    makePod('web', `r-${i}`, `10.244.${2 + Math.floor(i / 200)}.${10 + (i % 200)}`, labels({ role: 'api' }), onNode('node-2')),
  );
  return snapshot({ namespaces, policies, pods: [makePod('web', 'db', '10.244.1.10', labels({ role: 'db' })), ...remote] });
}

async function expectKernelHolds(
  netns: string,
  backend: (typeof BACKENDS)[number],
  desired: DesiredState,
  families: readonly IpFamily[],
): Promise<void> {
  const allSets = await savedSets(netns);
  for (const family of families) {
    const state: FamilyState = family === 4 ? desired.v4 : desired.v6;
    expect(state.chains.length).toBeGreaterThan(0);
    const filter = parseFilter(await iptablesSave(netns, backend, 'filter', family));
    const want = expectedFromRestore(renderFullRestore(state));
    expect({ family, chains: Object.fromEntries(ourChains(filter)) }).toEqual({ family, chains: Object.fromEntries(want.chains) });
    expect({ family, forward: filter.rules.get('FORWARD') }).toEqual({ family, forward: want.hooks.get('FORWARD') });
    const sets = new Map([...allSets].filter(([name]) => name.startsWith(`${OWN.ipsetPrefix}${family}`)));
    expect({ family, sets: Object.fromEntries(sets) }).toEqual({
      family,
      sets: Object.fromEntries(parseSets(renderIpsetRestore(state.ipsets))),
    });
  }
}

describeKernel('apply: shapes beyond the golden corpus', () => {
  it.each(BACKENDS)('dual stack: both families read back as compiled; a second apply writes nothing (%s)', async (backend) => {
    const { desired, problems } = compile(dualStackCluster(), dualStack);
    expect(problems).toEqual([]);
    expect(desired.v6.ipsets.length).toBeGreaterThan(0);
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      await new Syncer(kernel, OWN, memoryLogger()).sync(desired, { readKernel: true });
      await expectKernelHolds(ns.name, backend, desired, [4, 6]);
      kernel.clear();
      const again = await new Syncer(kernel, OWN, memoryLogger()).sync(desired, { readKernel: true });
      expect(again.plans.flatMap((p) => p.changes)).toEqual([]);
      expect(kernel.writes).toEqual([]);
    });
  });

  it.each(BACKENDS)(
    'a dispatch tree (60 local pods): reads back as compiled; one more pod rewrites only its branch (%s)',
    async (backend) => {
      const before = compile(manyPodsCluster(60), v4only).desired;
      const after = compile(manyPodsCluster(61), v4only).desired;
      expect(before.v4.chains.filter((c) => c.role.kind === 'dispatch').length).toBeGreaterThan(2);
      await withNetns(async (ns) => {
        const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
        const syncer = new Syncer(kernel, OWN, memoryLogger());
        await syncer.sync(before, { readKernel: true });
        await expectKernelHolds(ns.name, backend, before, [4]);
        kernel.clear();
        expect((await new Syncer(kernel, OWN, memoryLogger()).sync(before, { readKernel: true })).plans.flatMap((p) => p.changes)).toEqual(
          [],
        );
        expect(kernel.writes).toEqual([]);

        await syncer.sync(after, { readKernel: false });

        const lines = (s: FamilyState) => new Map(s.chains.map((c) => [c.name as string, appendLines(renderChain(c)).join('\n')]));
        const old = lines(before.v4);
        const changed = [...lines(after.v4)].filter(([name, text]) => old.get(name) !== text).map(([name]) => name);
        const newPod = after.v4.chains
          .filter((c) => c.role.kind === 'workload' && c.role.pod === 'web/api-60')
          .map((c) => c.name as string);
        expect(newPod).toHaveLength(2);
        // Only the new pod's chains and the dispatch chains on its path, not the whole tree.
        const dispatch = changed.filter((n) => !newPod.includes(n));
        expect(dispatch.every((n) => after.v4.chains.find((c) => c.name === n)?.role.kind === 'dispatch')).toBe(true);
        expect(dispatch.length).toBeLessThan(after.v4.chains.filter((c) => c.role.kind === 'dispatch').length);
        const restores = kernel.writes.flatMap((w) => (w.op === 'iptables-restore' ? [w.text] : []));
        expect(restores).toHaveLength(1);
        expect(declaredChains(restores[0] ?? '')).toEqual([...changed].sort());
        await expectKernelHolds(ns.name, backend, after, [4]);
      });
    },
  );

  it.each(BACKENDS)('300 pods entering one set at once: rebuilt by temp set + swap, no temp set left (%s)', async (backend) => {
    const before = compile(manyRemoteApis(0), v4only).desired;
    const after = compile(manyRemoteApis(300), v4only).desired;
    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const syncer = new Syncer(kernel, OWN, memoryLogger());
      await syncer.sync(before, { readKernel: true });
      kernel.clear();

      await syncer.sync(after, { readKernel: false });

      const ipsetText = kernel.writes.flatMap((w) => (w.op === 'ipset-restore' ? [w.text] : [])).join('');
      expect(ipsetText).toMatch(/^swap \S+ \S+$/m);
      expect(memberLines(ipsetText)).toHaveLength(300);
      expect(kernel.writes.filter((w) => w.op === 'iptables-restore')).toEqual([]);
      await expectKernelHolds(ns.name, backend, after, [4]);
      expect([...(await savedSets(ns.name)).keys()].filter((n) => !after.v4.ipsets.some((s) => s.name === n))).toEqual([]);
      kernel.clear();
      expect((await new Syncer(kernel, OWN, memoryLogger()).sync(after, { readKernel: true })).plans.flatMap((p) => p.changes)).toEqual([]);
    });
  });
});
