// The node budget: what all NetworkPolicies together may make one node program. Past it, policies fail
// closed (their pods stay isolated, nothing they allow is allowed), each with a Problem; the rest is
// enforced. Oldest policies are admitted first, so a new policy cannot evict an older one.

import { Compiler, compile } from '../../../src/compile/index.js';
import type { NetworkPolicy, NodeBudget } from '../../../src/model/index.js';
import { renderFullRestore, renderIpsetRestore } from '../../../src/render/index.js';
import type { FamilyState } from '../../../src/model/index.js';
import { blockPeer, ingress, labels, makePod, makePolicy, rule, sel, selectPods, settings, tcp } from '../../helpers/builders.js';
import { evaluate } from '../../helpers/eval-desired.js';
import { Oracle } from '../../helpers/oracle.js';
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

/** Verdict of a new TCP packet from `src` to the local pod `dst` (arriving over flannel, leaving to cni0). */
const ingressVerdict = (state: FamilyState, src: string, dst: string, port: number) =>
  evaluate(state, { src, dst, proto: 'tcp', dport: port, inIface: 'flannel.1', outIface: 'cni0' }).verdict;

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

  it('far within the budget, every policy is admitted and a shared set is still counted once', () => {
    // 61 members each (the 10.0.0.0/8 set and the same 60 excepts), 122 counted per policy, 61 once.
    const a = blockPolicy('a', 'db', '2026-01-01T00:00:00Z', 60);
    const b = blockPolicy('b', 'web', '2026-01-02T00:00:00Z', 60);
    const result = compile(cluster([a, b]), settings({ budget: budget(1_000) }));
    expect(result.problems).toEqual([]);
    expect(result.budget).toEqual({ setMembers: 61, rules: 2, refused: 0 });
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

// Fair shares: the budget is split between the namespaces whose policies the node programs by max-min
// fairness (docs/hostile-input.md, "The node budget"): each namespace gets what it asks for up to an equal
// share of what is left, smallest first, and what the shares leave goes to the policies past theirs, oldest
// first. A namespace asking for no more than budget/N is never refused because of another namespace's size.
describe('node budget: fair shares between namespaces', () => {
  /** Ingress to `app` in `namespace` from 10.0.0.0/8 except `n` addresses: 1 + n set members. */
  const nsBlock = (namespace: string, name: string, app: string, at: string, n: number, start: number): NetworkPolicy =>
    makePolicy(namespace, name, selectPods(sel({ app })), created(at), ingress(rule([blockPeer('10.0.0.0/8', ...excepts(n, start))])));
  const refusedNames = (problems: readonly { object: string }[]) => problems.map((p) => p.object.replace('NetworkPolicy ', '')).sort();
  const ALLOWED_SOURCE = '10.244.2.30'; // ops/prom, on node-2

  it("an older namespace's long lists no longer fail a newer namespace's tiny policy; its own newest policy fails instead (oracle)", () => {
    // prod, older, asks for 90 + 10 members (the 10.0.0.0/8 set is shared); dev, newer, for 1. Budget 100:
    // equal split 50 each; dev takes 1,
    // prod the other 99. Oldest first across the node (the old rule), prod's two fill it and dev's fails closed.
    const prodOld = nsBlock('prod', 'old', 'db', '2026-01-01T00:00:00Z', 89, 0);
    const prodNew = nsBlock('prod', 'new', 'web', '2026-01-02T00:00:00Z', 10, 1000);
    const devTiny = makePolicy(
      'dev',
      'tiny',
      selectPods(sel({ app: 'web' })),
      created('2026-03-01T00:00:00Z'),
      ingress(rule([blockPeer(`${ALLOWED_SOURCE}/32`)])),
    );
    const c = cluster([prodOld, prodNew, devTiny]);
    const result = compile(c, settings({ budget: budget(100) }));
    // prod's share is 99: old (90) fits, new would make 100; what the shares leave (9) is not enough either.
    expect(refusedNames(result.problems)).toEqual(['prod/new']);
    expect(result.problems[0]?.message).toContain("namespace prod's fair share is 99 set members");
    expect(result.budget).toEqual({ setMembers: 91, rules: 2, refused: 1 });
    // The oracle, with the refused policy failing closed as the spec's invalid policy does: every verdict agrees.
    const failed = new Set(['prod/new']);
    const oracle = new Oracle({
      ...c,
      policies: c.policies.map((p) =>
        failed.has(`${p.namespace}/${p.name}`)
          ? {
              ...p,
              problems: [
                { object: `NetworkPolicy ${p.namespace}/${p.name}`, field: 'spec', message: 'over budget', severity: 'error' as const },
              ],
            }
          : p,
      ),
    });
    const sources = [ALLOWED_SOURCE, '10.1.2.3', '10.200.0.5', '10.200.3.240', '10.244.2.10', '192.168.9.9'];
    const targets = [
      { dst: '10.244.1.10', port: 5432 },
      { dst: '10.244.1.11', port: 8080 },
      { dst: '10.244.1.20', port: 9090 },
    ];
    for (const src of sources)
      for (const { dst, port } of targets) {
        const want = oracle.allows({ src, dst, proto: 'tcp', port });
        expect(`${src} → ${dst}: ${ingressVerdict(result.desired.v4, src, dst, port) === 'ACCEPT' ? 'ALLOW' : 'DENY'}`).toBe(
          `${src} → ${dst}: ${want ? 'ALLOW' : 'DENY'}`,
        );
      }
    // In particular: dev's tiny policy is enforced, prod's old one is, prod's new one fails closed.
    expect(ingressVerdict(result.desired.v4, ALLOWED_SOURCE, '10.244.1.20', 9090)).toBe('ACCEPT');
    expect(ingressVerdict(result.desired.v4, '10.1.2.3', '10.244.1.20', 9090)).toBe('DROP');
    expect(ingressVerdict(result.desired.v4, '10.1.2.3', '10.244.1.10', 5432)).toBe('ACCEPT');
    expect(ingressVerdict(result.desired.v4, '10.1.2.3', '10.244.1.11', 8080)).toBe('DROP');
  });

  it('max-min: the small namespace gets what it asks, the large ones split the rest, and what is left goes to the oldest past its share', () => {
    const ops = makePod('ops', 'local', '10.244.1.40', labels({ app: 'x' }));
    // Every policy allows from 10.0.0.0/8 (one set, counted once on the node, once per namespace in its share).
    // dev, newest, asks 50; prod and ops 160 each (100 + 60). Budget 320: dev 50, prod and ops 135 each.
    const policies = [
      nsBlock('prod', 'p1', 'db', '2026-01-01T00:00:00Z', 99, 1000),
      nsBlock('prod', 'p2', 'web', '2026-01-02T00:00:00Z', 60, 2000),
      nsBlock('ops', 'o1', 'x', '2026-01-03T00:00:00Z', 99, 3000),
      nsBlock('ops', 'o2', 'x', '2026-01-04T00:00:00Z', 60, 4000),
      nsBlock('dev', 'd', 'web', '2026-01-05T00:00:00Z', 49, 0),
    ];
    const result = compile(cluster(policies, [ops]), settings({ budget: budget(320) }));
    // Within shares: d, p1, o1 (248 on the node). Left: 72, enough for the older of p2 and o2 (60 each).
    // (Oldest first across the node, the old rule, admitted all of prod's and ops's, 319, and refused dev's.)
    expect(refusedNames(result.problems)).toEqual(['ops/o2']);
    expect(result.budget).toEqual({ setMembers: 308, rules: 4, refused: 1 });
  });

  it('the rule budget is shared the same way', () => {
    // 400 ports, none adjacent: 27 multiport rules per policy.
    const ports = Array.from({ length: 400 }, (_, i) => tcp(1000 + 2 * i));
    const big = (ns: string, name: string, app: string, at: string) =>
      makePolicy(ns, name, selectPods(sel({ app })), created(at), ingress(rule(undefined, ports)));
    const policies = [big('prod', 'a', 'db', '2026-01-01T00:00:00Z'), big('prod', 'b', 'web', '2026-01-02T00:00:00Z')];
    const devSmall = makePolicy(
      'dev',
      'small',
      selectPods(sel({ app: 'web' })),
      created('2026-03-01T00:00:00Z'),
      ingress(rule(undefined, [tcp(9090)])),
    );
    // 54 rules asked by prod, 1 by dev; budget 54.
    const result = compile(cluster([...policies, devSmall]), settings({ budget: budget(100, 54) }));
    expect(refusedNames(result.problems)).toEqual(['prod/b']);
    expect(ingressVerdict(result.desired.v4, ALLOWED_SOURCE, '10.244.1.20', 9090)).toBe('ACCEPT');
  });

  it('one namespace alone has the whole budget: nothing changes for it', () => {
    const a = blockPolicy('a', 'db', '2026-01-01T00:00:00Z', 60);
    const b = blockPolicy('b', 'web', '2026-01-02T00:00:00Z', 40, 1000);
    // 61 + 40 (the cidr's set is shared) = 101 > 100: b refused, as oldest first always did.
    expect(refusedNames(compile(cluster([a, b]), settings({ budget: budget(100) })).problems)).toEqual(['prod/b']);
  });
});
