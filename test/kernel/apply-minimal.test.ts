// Minimal rewrites on a real kernel: after the seed-db-policy case is programmed, one small cluster
// change writes only what it must. Every write the Syncer makes is recorded at the KernelPort, so the
// assertions are about what reached iptables-restore and ipset restore, not about what a plan claims.

import { jest } from '@jest/globals';
import { openKernel } from '../../src/dataplane/kernel.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import { compile } from '../../src/compile/index.js';
import type { ClusterSnapshot, FamilyState, NetworkPolicy, Pod } from '../../src/model/index.js';
import { Syncer } from '../../src/reconcile/syncer.js';
import { renderFullRestore, renderIpsetRestore } from '../../src/render/index.js';
import { labels, makePod } from '../helpers/builders.js';
import { loadGoldenCase } from '../helpers/golden.js';
import {
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

const golden = loadGoldenCase('seed-db-policy');
const POLICY = 'default/test-network-policy';

const editPod = (s: ClusterSnapshot, key: string, f: (p: Pod) => Pod): ClusterSnapshot => ({
  ...s,
  pods: s.pods.map((p) => (`${p.namespace}/${p.name}` === key ? f(p) : p)),
});
const editPolicy = (s: ClusterSnapshot, f: (p: NetworkPolicy) => NetworkPolicy): ClusterSnapshot => ({
  ...s,
  policies: s.policies.map((p) => (`${p.namespace}/${p.name}` === POLICY ? f(p) : p)),
});
/** Replaces the third peer of the ingress rule (podSelector role=frontend) and/or its port. */
const editIngress = (p: NetworkPolicy, peer?: Record<string, string>, port?: number): NetworkPolicy => {
  const rule = p.ingress?.[0];
  if (!rule?.peers || !rule.ports) throw new Error('seed-db-policy changed shape');
  return {
    ...p,
    ingress: [
      {
        peers: peer ? [...rule.peers.slice(0, 2), { podSelector: { matchLabels: peer, matchExpressions: [] } }] : rule.peers,
        ports: port ? [{ protocol: 'TCP', port }] : rule.ports,
      },
    ],
  };
};

const setHolding = (state: FamilyState, ip: string): string => {
  const set = state.ipsets.find((s) => s.members.includes(ip));
  if (!set) throw new Error(`no set holds ${ip}`);
  return set.name;
};
const chainsOf = (state: FamilyState, pick: (role: FamilyState['chains'][number]['role']) => boolean): string[] =>
  state.chains.filter((c) => pick(c.role)).map((c) => c.name);
const setNames = (state: FamilyState): Set<string> => new Set(state.ipsets.map((s) => s.name));

interface Expected {
  /** Chains the one iptables-restore declares (rewrites); empty: no iptables-restore at all. */
  readonly chains: readonly string[];
  /** `add`/`del` lines across all ipset writes. */
  readonly members: readonly string[];
  readonly destroyed: readonly string[];
}

interface EditCase {
  readonly name: string;
  readonly edit: (s: ClusterSnapshot) => ClusterSnapshot;
  readonly expect: (before: FamilyState, after: FamilyState) => Expected;
}

const EDITS: readonly EditCase[] = [
  {
    name: 'a local pod leaves a selector set (default/frontend relabelled)',
    edit: (s) => editPod(s, 'default/frontend', (p) => ({ ...p, labels: { role: 'web' } })),
    expect: (before) => ({ chains: [], members: [`del ${setHolding(before, '10.244.1.11')} 10.244.1.11`], destroyed: [] }),
  },
  {
    name: 'a remote pod enters a selector set (default/backend relabelled frontend)',
    edit: (s) => editPod(s, 'default/backend', (p) => ({ ...p, labels: { role: 'frontend' } })),
    expect: (_, after) => ({ chains: [], members: [`add ${setHolding(after, '10.244.2.12')} 10.244.2.12`], destroyed: [] }),
  },
  {
    name: "a policy's port changes: only its ingress chain",
    edit: (s) => editPolicy(s, (p) => editIngress(p, undefined, 6380)),
    expect: (_, after) => ({
      chains: chainsOf(after, (r) => r.kind === 'policy' && r.policy === POLICY && r.direction === 'ingress'),
      members: [],
      destroyed: [],
    }),
  },
  {
    name: "a policy's peer selector changes: its ingress chain, the new set, the old set destroyed",
    edit: (s) => editPolicy(s, (p) => editIngress(p, { role: 'db' })),
    expect: (before, after) => {
      const created = after.ipsets.filter((x) => !setNames(before).has(x.name));
      return {
        chains: chainsOf(after, (r) => r.kind === 'policy' && r.policy === POLICY && r.direction === 'ingress'),
        members: created.flatMap((x) => x.members.map((m) => `add ${x.name} ${m}`)),
        destroyed: before.ipsets.filter((x) => !setNames(after).has(x.name)).map((x) => x.name),
      };
    },
  },
  {
    name: 'a local pod is added: its two workload chains, the dispatch chains, one set member',
    edit: (s) => ({ ...s, pods: [...s.pods, makePod('default', 'frontend2', '10.244.1.12', labels({ role: 'frontend' }))] }),
    expect: (_, after) => ({
      chains: [
        ...chainsOf(after, (r) => r.kind === 'dispatch'),
        ...chainsOf(after, (r) => r.kind === 'workload' && r.pod === 'default/frontend2'),
      ],
      members: [`add ${setHolding(after, '10.244.1.12')} 10.244.1.12`],
      destroyed: [],
    }),
  },
];

const MODES: readonly { backend: IptablesBackend; readKernel: boolean }[] = [
  { backend: 'nft', readKernel: false },
  { backend: 'legacy', readKernel: false },
  { backend: 'nft', readKernel: true },
];
const CASES = MODES.flatMap((mode) => EDITS.map((edit) => ({ ...mode, edit, name: edit.name })));

describeKernel('apply: one change writes only its delta', () => {
  it.each(CASES)('$name ($backend, readKernel=$readKernel)', async ({ backend, readKernel, edit }) => {
    const before = golden.result.desired;
    const snapshot = edit.edit(golden.snapshot);
    const result = compile(snapshot, golden.settings);
    expect(result.problems).toEqual([]);
    const want = edit.expect(before.v4, result.desired.v4);
    // The case must describe a real change, or it proves nothing.
    expect(want.chains.length + want.members.length).toBeGreaterThan(0);

    await withNetns(async (ns) => {
      const kernel = recordingKernel(await openKernel({ netns: ns.name, backend }));
      const syncer = new Syncer(kernel, OWN, memoryLogger());
      await syncer.sync(before, { readKernel: true });
      kernel.clear();

      await syncer.sync(result.desired, { readKernel });

      const iptablesWrites = kernel.writes.flatMap((w) => (w.op === 'iptables-restore' ? [w] : []));
      const ipsetTexts = kernel.writes.flatMap((w) => (w.op === 'ipset-restore' ? [w.text] : []));
      if (want.chains.length === 0) expect(iptablesWrites).toEqual([]);
      else {
        expect(iptablesWrites.map((w) => w.family)).toEqual([4]);
        expect(declaredChains(iptablesWrites[0]?.text ?? '')).toEqual([...want.chains].sort());
        // No hook churn, no chain deleted.
        expect((iptablesWrites[0]?.text ?? '').split('\n').filter((l) => /^-[IDX] /.test(l))).toEqual([]);
      }
      expect(ipsetTexts.flatMap(memberLines).sort()).toEqual([...want.members].sort());
      const destroyed = ipsetTexts.flatMap((t) => t.split('\n').flatMap((l) => /^destroy (\S+)$/.exec(l)?.[1] ?? []));
      expect(destroyed.sort()).toEqual([...want.destroyed].sort());
      // Order (DESIGN §5, docs/dataplane.md "Order of a change"): members leaving (narrowing) before the rules,
      // members joining (widening) after them when the rules change too (before them when they do not), then
      // destroying what no rule uses any more.
      // A write that creates a set the old state did not have: new sets go before the rules, with their members.
      const existed = setNames(before.v4);
      const createsNew = (text: string): boolean =>
        text.split('\n').some((l) => /^create (\S+) /.test(l) && !existed.has(l.split(' ')[1]!));
      const kind = (text: string): string =>
        /^destroy /m.test(text)
          ? 'destroy'
          : createsNew(text)
            ? 'new sets'
            : [/^del /m.test(text) ? 'dels' : '', /^add /m.test(text) ? 'adds' : ''].filter(Boolean).join('+');
      const order = kernel.writes.map((w) => (w.op === 'iptables-restore' ? 'rules' : kind(w.text)));
      const after = result.desired.v4.ipsets.filter((set) => existed.has(set.name)).map((set): string => set.name);
      const inOld = (m: string): boolean => after.includes(m.split(' ')[1]!);
      const dels = want.members.some((m) => m.startsWith('del ') && inOld(m));
      const adds = want.members.some((m) => m.startsWith('add ') && inOld(m));
      const fresh = want.members.some((m) => !inOld(m)) ? ['new sets'] : [];
      const rules = want.chains.length > 0;
      const destroy = want.destroyed.length ? ['destroy'] : [];
      expect(order).toEqual(
        rules
          ? [...(dels || fresh.length ? [fresh.length ? 'new sets' : 'dels'] : []), 'rules', ...(adds ? ['adds'] : []), ...destroy]
          : [...(dels || adds ? [[dels ? 'dels' : '', adds ? 'adds' : ''].filter(Boolean).join('+')] : []), ...destroy],
      );

      // And the kernel now holds exactly the new desired state.
      const filter = parseFilter(await iptablesSave(ns.name, backend, 'filter'));
      expect(Object.fromEntries(ourChains(filter))).toEqual(
        Object.fromEntries(expectedFromRestore(renderFullRestore(result.desired.v4)).chains),
      );
      expect(Object.fromEntries(await savedSets(ns.name))).toEqual(
        Object.fromEntries(parseSets(renderIpsetRestore(result.desired.v4.ipsets))),
      );
    });
  });
});
