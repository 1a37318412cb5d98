// The node budget: what all NetworkPolicies together may make one node program. Past it, policies fail
// closed (their pods stay isolated, nothing they allow is allowed), each with a Problem; the rest is
// enforced. Oldest policies are admitted first, so a new policy cannot evict an older one.

import { Compiler, compile } from '../../../src/compile/index.js';
import type { NetworkPolicy, NodeBudget } from '../../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import { blockPeer, ingress, makePolicy, rule, sel, selectPods, settings, tcp } from '../../helpers/builders.js';
import { viewPod } from './compiled-view.js';
import { cluster } from './fixtures.js';

const created =
  (at: string) =>
  (p: { creationTimestamp?: string }): void =>
    void (p.creationTimestamp = at);

/** `n` /32 excepts in 10.200.0.0/16, from `start` (distinct per policy when the starts differ). */
const excepts = (n: number, start = 0): string[] =>
  Array.from({ length: n }, (_, i) => `10.200.${Math.floor((start + i) / 256) % 256}.${(start + i) % 256}/32`);

/** Ingress to app=<app> from 10.0.0.0/8 except `n` addresses. */
const blockPolicy = (name: string, app: string, at: string, n: number, start = 0): NetworkPolicy =>
  makePolicy('prod', name, selectPods(sel({ app })), created(at), ingress(rule([blockPeer('10.0.0.0/8', ...excepts(n, start))])));

const budget = (setMembers: number, rules = 1_000): NodeBudget => ({ setMembers, rules });
const overBudget = (name: string) =>
  expect.objectContaining({ object: `NetworkPolicy prod/${name}`, severity: 'error', message: expect.stringContaining("node's budget") });

describe('node budget', () => {
  it('admits the oldest policies; one that would cross the budget fails closed with a Problem, a newer one that fits is admitted', () => {
    const older = blockPolicy('older', 'db', '2026-01-01T00:00:00Z', 60);
    const big = blockPolicy('big', 'web', '2026-01-02T00:00:00Z', 60, 1000);
    const small = makePolicy(
      'prod',
      'small',
      selectPods(sel({ app: 'db' })),
      created('2026-01-03T00:00:00Z'),
      ingress(rule(undefined, [tcp(80)])),
    );
    // older: 1 cidr + 60 excepts = 61 members; big would make 122 > 100.
    const result = compile(cluster([big, older, small]), settings({ budget: budget(100) }));
    const { desired, problems } = result;
    expect(problems).toEqual([overBudget('big')]);
    expect(result.budget).toEqual({ setMembers: 61, rules: 2, refused: 1 });
    expect(viewPod(desired.v4, 'prod/db', 'ingress')).toEqual({
      policies: ['prod/older', 'prod/small'],
      allows: [
        { peer: ['10.0.0.0/8'], except: excepts(60).map((e) => e.replace('/32', '')) },
        { peer: 'any', proto: 'tcp', ports: '80' },
      ],
    });
    // Fails closed: web stays isolated by it and nothing it allows is allowed.
    expect(viewPod(desired.v4, 'prod/web', 'ingress')).toEqual({ policies: ['prod/big'], allows: [] });
  });

  it('a newer policy cannot evict an older one, whatever their names', () => {
    const old = blockPolicy('zzz-old', 'db', '2026-01-01T00:00:00Z', 60);
    const newer = blockPolicy('aaa-new', 'web', '2026-02-01T00:00:00Z', 60, 1000);
    const { desired, problems } = compile(cluster([old, newer]), settings({ budget: budget(100) }));
    expect(problems).toEqual([overBudget('aaa-new')]);
    expect(viewPod(desired.v4, 'prod/db', 'ingress')).toMatchObject({ policies: ['prod/zzz-old'], allows: [{ peer: ['10.0.0.0/8'] }] });
    expect(viewPod(desired.v4, 'prod/web', 'ingress')).toEqual({ policies: ['prod/aaa-new'], allows: [] });
  });

  it('a set several policies share is counted once', () => {
    const a = blockPolicy('a', 'db', '2026-01-01T00:00:00Z', 60);
    const b = blockPolicy('b', 'web', '2026-01-02T00:00:00Z', 60);
    const { problems } = compile(cluster([a, b]), settings({ budget: budget(100) }));
    expect(problems).toEqual([]);
  });

  it('the rule budget refuses a policy whose rules would cross it', () => {
    // 400 ports, none adjacent: 27 multiport rules per policy.
    const ports = Array.from({ length: 400 }, (_, i) => tcp(1000 + 2 * i));
    const a = makePolicy('prod', 'a', selectPods(sel({ app: 'db' })), created('2026-01-01T00:00:00Z'), ingress(rule(undefined, ports)));
    const b = makePolicy('prod', 'b', selectPods(sel({ app: 'web' })), created('2026-01-02T00:00:00Z'), ingress(rule(undefined, ports)));
    const { desired, problems } = compile(cluster([a, b]), settings({ budget: budget(100, 50) }));
    expect(problems).toEqual([overBudget('b')]);
    expect(viewPod(desired.v4, 'prod/web', 'ingress')).toEqual({ policies: ['prod/b'], allows: [] });
  });

  it('a delta compile decides as a fresh one: an older policy created later takes its place back', () => {
    const text = (c: ReturnType<typeof compile>) => [c.desired.v4].map((f) => renderIpsetRestore(f.ipsets) + renderFullRestore(f)).join('');
    const s = settings({ budget: budget(100) });
    const newer = blockPolicy('newer', 'web', '2026-02-01T00:00:00Z', 60, 1000);
    const older = blockPolicy('older', 'db', '2026-01-01T00:00:00Z', 60);
    const compiler = new Compiler();
    const first = compiler.compile(cluster([newer]), s);
    expect(first.problems).toEqual([]);
    // A policy that is older (its timestamp) but arrives second: the budget orders by age, not by arrival.
    const second = compiler.compile(cluster([newer, older]), s);
    const fresh = compile(cluster([newer, older]), s);
    expect(second.problems).toEqual([overBudget('newer')]);
    expect(second.problems).toEqual(fresh.problems);
    expect(text(second)).toBe(text(fresh));
  });

  it('without a budget (the compiler alone), nothing is refused for its size', () => {
    const a = blockPolicy('a', 'db', '2026-01-01T00:00:00Z', 5_000);
    const b = blockPolicy('b', 'web', '2026-01-02T00:00:00Z', 5_000, 5_000);
    expect(compile(cluster([a, b]), settings()).problems).toEqual([]);
  });
});
