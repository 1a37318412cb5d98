// Which local pods a plan re-judges (the daemon's opt-in conntrack flush deletes their entries): the pods
// whose own chain changed, or whose chain jumps to a changed chain or to one matching on a changed set.

import { compile } from '../../../src/compile/index.js';
import type { Chain, FamilyState } from '../../../src/model/index.js';
import { affectedWorkloads, type Change, type FamilyPlan } from '../../../src/plan/index.js';
import { ingress, makePolicy, podPeer, rule, sel, selectPods, settings, tcp } from '../../helpers/builders.js';
import { cluster, IP } from '../compile/fixtures.js';

// prod/db admits prod/web on 5432: db's ingress chain jumps to the policy chain, which matches on web's set.
const { desired } = compile(
  cluster([makePolicy('prod', 'db-from-web', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(5432)])))]),
  settings(),
);
const v4: FamilyState = desired.v4;
const policyChain = v4.chains.find((c) => c.role.kind === 'policy') as Chain;
const setOfPolicy = policyChain.rules.flatMap((r) => r.match.flatMap((m) => (m.kind === 'set' ? [m.set] : [])))[0]!;
const workload = (pod: string, direction: 'ingress' | 'egress'): Chain =>
  v4.chains.find((c) => c.role.kind === 'workload' && c.role.pod === pod && c.role.direction === direction) as Chain;
const planChanging = (...names: string[]): FamilyPlan =>
  ({
    family: 4,
    changes: names.map((name): Change => ({ object: 'chain', name, action: 'update', before: [], after: [], owner: '' })),
  }) as unknown as FamilyPlan;

describe('affectedWorkloads', () => {
  it.each<{ name: string; changed: () => string[]; expected: { pod: string; direction: string; ip: string }[] }>([
    { name: 'nothing changed', changed: () => [], expected: [] },
    {
      name: 'the policy chain: the pod it selects, ingress',
      changed: () => [policyChain.name],
      expected: [{ pod: 'prod/db', direction: 'ingress', ip: IP.db }],
    },
    { name: 'a set the policy matches on', changed: () => [setOfPolicy], expected: [{ pod: 'prod/db', direction: 'ingress', ip: IP.db }] },
    {
      name: "a pod's own chain",
      changed: () => [workload('prod/web', 'egress').name],
      expected: [{ pod: 'prod/web', direction: 'egress', ip: IP.web }],
    },
    { name: 'a chain nobody jumps to', changed: () => ['nf-unrelated'], expected: [] },
  ])('$name', ({ changed, expected }) => {
    expect(affectedWorkloads([planChanging(...changed())], desired).map(({ pod, direction, ip }) => ({ pod, direction, ip }))).toEqual(
      expected,
    );
  });
});
