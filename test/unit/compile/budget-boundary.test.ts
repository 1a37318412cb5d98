// The node budget is a maximum the node may reach: "a policy that would cross a limit is refused"
// (docs/hostile-input.md), so policies that bring the use exactly to the budget are all enforced, and only
// one more member or rule than the budget fails closed. Both limits, on the boundary and one past it; and
// the same for a policy past its namespace's fair share, admitted from what the shares left of the node's.

import { compile } from '../../../src/compile/index.js';
import type { NetworkPolicy, NodeBudget } from '../../../src/model/index.js';
import { blockPeer, ingress, makePolicy, rule, sel, selectPods, settings } from '../../helpers/builders.js';
import { viewPod, type DirectionView } from './compiled-view.js';
import { cluster } from './fixtures.js';

/** Ingress to app=<app> from 10.0.0.0/8 except `n` /32s from 10.200.<start>.0: one rule, 1 + n set members. */
const blockPolicy = (name: string, app: string, at: string, n: number, start: number): NetworkPolicy => {
  const excepts = Array.from({ length: n }, (_, i) => `10.200.${start}.${i}/32`);
  const policy = makePolicy('prod', name, selectPods(sel({ app })), ingress(rule([blockPeer('10.0.0.0/8', ...excepts)])));
  return { ...policy, creationTimestamp: at };
};

// 61 members and 1 rule each (the /8 cidr set is shared: counted once), so 1 + 60 + 60 = 121 members, 2 rules.
const older = blockPolicy('older', 'db', '2026-01-01T00:00:00Z', 60, 1);
const newer = blockPolicy('newer', 'web', '2026-01-02T00:00:00Z', 60, 2);

/** How many allow rules the pod's policies hold (web is isolated by `newer` either way). */
const allowsOf = (view: DirectionView | undefined): number | 'open' | undefined =>
  view === 'open' || view === undefined ? view : view.allows.length;

function decide(budget: NodeBudget) {
  const result = compile(cluster([older, newer]), settings({ budget }));
  return {
    problems: result.problems.map((p) => `${p.object}: ${p.message}`),
    budget: result.budget,
    webAllows: allowsOf(viewPod(result.desired.v4, 'prod/web', 'ingress')),
  };
}

/** Ingress to every pod of `ns` from 10.<k>.0.0/16 except `n` /32s in it: its own sets, 1 + n members, one rule. */
const ownBlock = (ns: string, name: string, at: string, k: number, n: number): NetworkPolicy => {
  const excepts = Array.from({ length: n }, (_, i) => `10.${k}.0.${i}/32`);
  return { ...makePolicy(ns, name, selectPods(sel()), ingress(rule([blockPeer(`10.${k}.0.0/16`, ...excepts)]))), creationTimestamp: at };
};

describe('node budget boundary', () => {
  it('set members: policies that fill the budget exactly are all enforced', () => {
    expect(decide({ setMembers: 121, rules: 100 })).toEqual({
      problems: [],
      budget: { setMembers: 121, rules: 2, refused: 0 },
      webAllows: 1,
    });
  });

  it('set members: one past the budget, the newer policy fails closed', () => {
    expect(decide({ setMembers: 120, rules: 100 })).toEqual({
      problems: [
        expect.stringContaining("NetworkPolicy prod/newer: 60 ipBlock set members on top of 61 would pass the node's budget of 120"),
      ],
      budget: { setMembers: 61, rules: 1, refused: 1 },
      webAllows: 0,
    });
  });

  it("past its namespace's share: a policy that fills what the shares left of the node budget exactly is enforced", () => {
    // dev asks 30 + 40 members, prod 61 + 61; oldest first: dev/d1, prod/p1, dev/d2, prod/p2. With 91 the
    // shares are dev 45, prod 46: d1 fits dev's, every other policy is past its namespace's share, and p1 then
    // takes what is left of the node's budget, to exactly 91.
    const policies = [
      ownBlock('dev', 'd1', '2026-01-01T00:00:00Z', 1, 29),
      ownBlock('prod', 'p1', '2026-01-02T00:00:00Z', 2, 60),
      ownBlock('dev', 'd2', '2026-01-03T00:00:00Z', 3, 39),
      ownBlock('prod', 'p2', '2026-01-04T00:00:00Z', 4, 60),
    ];
    const at = (setMembers: number) => {
      const result = compile(cluster(policies), settings({ budget: { setMembers, rules: 100 } }));
      return { refused: result.problems.map((p) => p.object), used: result.budget?.setMembers };
    };
    expect(at(91)).toEqual({ refused: ['NetworkPolicy dev/d2', 'NetworkPolicy prod/p2'], used: 91 });
    // One member less: p1 no longer fits, and d2 (30 + 40) takes what is left.
    expect(at(90)).toEqual({ refused: ['NetworkPolicy prod/p1', 'NetworkPolicy prod/p2'], used: 70 });
  });

  it('rules: policies that fill the budget exactly are all enforced', () => {
    expect(decide({ setMembers: 1_000, rules: 2 })).toEqual({
      problems: [],
      budget: { setMembers: 121, rules: 2, refused: 0 },
      webAllows: 1,
    });
  });

  it('rules: one past the budget, the newer policy fails closed', () => {
    expect(decide({ setMembers: 1_000, rules: 1 })).toEqual({
      problems: [expect.stringContaining("NetworkPolicy prod/newer: 1 rules on top of 1 would pass the node's budget of 1")],
      budget: { setMembers: 61, rules: 1, refused: 1 },
      webAllows: 0,
    });
  });
});
