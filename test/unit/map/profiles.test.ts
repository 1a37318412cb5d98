// A profile's key is what the map groups pods by ("two pods are drawn as one only when every rule treats them
// the same"), so it must be exact both ways: two workload chains that say the same, their own chain name, pod
// and address aside, get one key; any other difference, however small, gets two. The chains are built here
// as structs, one difference at a time, so that each part of a rule is shown to count.

import { describe, expect, it } from '@jest/globals';
import { NodeProfiles, SubtreeCache } from '../../../src/map/profiles.js';
import { chainName, ipSetName, type Chain, type Match, type Rule } from '../../../src/model/index.js';
import type { IpSets } from '../../../src/trace/index.js';

const NO_SETS: IpSets = new Map();

interface Pod {
  readonly chain: string;
  readonly key: string;
  readonly ip: string;
}
const A: Pod = { chain: 'nf-tw-aaaa', key: 'shop/web-0', ip: '10.244.1.10' };
const B: Pod = { chain: 'nf-tw-bbbb', key: 'shop/web-1', ip: '10.244.1.11' };

/** A workload chain shaped as the compiler writes one (compile/workload-chains.ts), its rules tweakable. */
function workload(pod: Pod, tweak: (rules: Rule[], pod: Pod) => Rule[] = (r) => r): Chain {
  const rules: Rule[] = [
    { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
    { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
    { match: [{ kind: 'src-net', cidr: `${pod.ip}/32` }], action: { kind: 'accept' }, comment: 'pod to itself' },
    { match: [], action: { kind: 'jump', target: chainName('nf-pi-policy') } },
    { match: [{ kind: 'mark', value: 0x10000, mask: 0x10000 }], action: { kind: 'return' } },
    {
      match: [{ kind: 'limit', perSecond: 10, burst: 5 }],
      action: { kind: 'nflog', group: 9476, prefix: `nf:iso:${pod.chain}` },
      comment: 'flow log of the drop below',
    },
    { match: [], action: { kind: 'drop' }, comment: `${pod.key} isolated for ingress: no policy allowed` },
  ];
  return {
    name: chainName(pod.chain),
    rules: tweak(rules, pod),
    role: { kind: 'workload', direction: 'ingress', pod: pod.key, ip: pod.ip },
  };
}

const POLICY: Chain = {
  name: chainName('nf-pi-policy'),
  rules: [
    {
      match: [
        { kind: 'protocol', protocol: 'tcp' },
        { kind: 'dports', ports: [{ from: 80, to: 80 }] },
      ],
      action: { kind: 'set-mark', value: 0x10000, mask: 0x10000 },
      comment: 'shop/web ingress:0',
    },
  ],
  role: { kind: 'policy', direction: 'ingress', policy: 'shop/web' },
};

/** The keys of the two chains, read on one node beside the chains they jump to. */
function keys(a: Chain, b: Chain, others: readonly Chain[] = [POLICY]): [string, string] {
  const profiles = new NodeProfiles([a, b, ...others], NO_SETS);
  return [profiles.profileOf(a).key, profiles.profileOf(b).key];
}

/** Rule `i`'s first match replaced. */
const withMatch =
  (i: number, m: Match) =>
  (rules: Rule[]): Rule[] =>
    rules.map((r, j) => (j === i ? { ...r, match: [m, ...r.match.slice(1)] } : r));

describe('profile keys', () => {
  it('are equal for two pods whose chains say the same, their own chain, pod and address aside', () => {
    const [a, b] = keys(workload(A), workload(B));
    expect(a).toBe(b);
  });

  it('are equal on two nodes and in two clusters read with one cache (a diff compares keys across them)', () => {
    const cache = new SubtreeCache();
    const one = new NodeProfiles([workload(A), POLICY], NO_SETS, cache).profileOf(workload(A));
    // Another node: other objects, the same content.
    const policy = { ...POLICY, rules: POLICY.rules.map((r) => ({ ...r })) };
    const two = new NodeProfiles([workload(B), policy], NO_SETS, cache).profileOf(workload(B));
    expect(two.key).toBe(one.key);
  });

  it('read a chain shared by two nodes again where a chain it jumps to differs between them', () => {
    // One object for the policy chain on both nodes (the compiler shares it), jumping to a per-node chain.
    const via: Chain = {
      ...POLICY,
      name: chainName('nf-pi-via'),
      rules: [{ match: [], action: { kind: 'jump', target: chainName('nf-pi-policy') } }],
    };
    const to = (r: Rule[]) => r.map((x, j) => (j === 3 ? { ...x, action: { kind: 'jump' as const, target: chainName('nf-pi-via') } } : x));
    const other: Chain = { ...POLICY, rules: [{ ...POLICY.rules[0]!, action: { kind: 'accept' } }] };
    const cache = new SubtreeCache();
    const one = new NodeProfiles([workload(A, to), via, POLICY], NO_SETS, cache).profileOf(workload(A, to));
    const two = new NodeProfiles([workload(B, to), via, other], NO_SETS, cache).profileOf(workload(B, to));
    const three = new NodeProfiles([workload(B, to), via, { ...POLICY }], NO_SETS, cache).profileOf(workload(B, to));
    expect(two.key).not.toBe(one.key);
    expect(three.key).toBe(one.key);
  });

  it('read again a pod’s chain met again unchanged where a chain below the one it jumps to differs', () => {
    // A diff's new cluster hands back the same objects for what did not change: the pod's chain and the chain
    // it jumps to are those read in the old cluster, the chain that one jumps to is not.
    const via: Chain = {
      ...POLICY,
      name: chainName('nf-pi-via'),
      rules: [{ match: [], action: { kind: 'jump', target: chainName('nf-pi-policy') } }],
    };
    const pod = workload(A, (r) =>
      r.map((x, j) => (j === 3 ? { ...x, action: { kind: 'jump' as const, target: chainName('nf-pi-via') } } : x)),
    );
    const other: Chain = { ...POLICY, rules: [{ ...POLICY.rules[0]!, action: { kind: 'accept' } }] };
    const cache = new SubtreeCache();
    const before = new NodeProfiles([pod, via, POLICY], NO_SETS, cache).profileOf(pod);
    const after = new NodeProfiles([pod, via, other], NO_SETS, cache).profileOf(pod);
    expect(after.key).not.toBe(before.key);
    // What the same content reads as, from another object (not read before) on that node.
    expect(after.key).toBe(new NodeProfiles([pod, via, other], NO_SETS, cache).profileOf({ ...pod }).key);
  });

  it('cut a pod’s ports by the named-port set of this node when its chain and the policy chain are met again unchanged', () => {
    // A named port moved (80 to 81) on a pod of the node: the set's members differ, the chains do not.
    const named: Chain = {
      ...POLICY,
      rules: [
        {
          match: [
            { kind: 'protocol', protocol: 'tcp' },
            { kind: 'set', set: ipSetName('nf4n:web-http'), direction: 'dst,dst' },
          ],
          action: { kind: 'set-mark', value: 0x10000, mask: 0x10000 },
        },
      ],
    };
    const sets = (port: number): IpSets =>
      new Map([['nf4n:web-http', { name: ipSetName('nf4n:web-http'), type: 'hash:ip,port', family: 4, members: [`${A.ip},tcp:${port}`] }]]);
    const pod = workload(A);
    const cache = new SubtreeCache();
    expect(new NodeProfiles([pod, named], sets(80), cache).profileOf(pod).cuts.get('tcp')).toEqual([1, 80, 81]);
    expect(new NodeProfiles([pod, named], sets(81), cache).profileOf(pod).cuts.get('tcp')).toEqual([1, 81, 82]);
  });

  it('treat what iptables is given alike: an absent negate and a false one', () => {
    const [a, b] = keys(workload(A), workload(B, withMatch(4, { kind: 'mark', value: 0x10000, mask: 0x10000, negate: false })));
    expect(a).toBe(b);
  });

  it('differ for a bridge port absent (any) and an empty one (written, matching none)', () => {
    const [a, b] = keys(workload(A, withMatch(4, { kind: 'physdev' })), workload(B, withMatch(4, { kind: 'physdev', in: '' })));
    expect(a).not.toBe(b);
    const [c, d] = keys(workload(A, withMatch(4, { kind: 'physdev' })), workload(B, withMatch(4, { kind: 'physdev', out: '' })));
    expect(c).not.toBe(d);
  });

  type Case = [string, (rules: Rule[], pod: Pod) => Rule[]];
  it.each<Case>([
    ['a mark value', withMatch(4, { kind: 'mark', value: 0x20000, mask: 0x10000 })],
    ['a mark mask', withMatch(4, { kind: 'mark', value: 0x10000, mask: 0x30000 })],
    ['a negated match', withMatch(4, { kind: 'mark', value: 0x10000, mask: 0x10000, negate: true })],
    ['a conntrack state', withMatch(1, { kind: 'ctstate', states: ['NEW'] })],
    ['its own address with another prefix', (r, pod) => withMatch(2, { kind: 'src-net', cidr: `${pod.ip}/31` })(r)],
    ['another pod’s address for its own', withMatch(2, { kind: 'src-net', cidr: `${A.ip}/32` })],
    ['source for destination', (r, pod) => withMatch(2, { kind: 'dst-net', cidr: `${pod.ip}/32` })(r)],
    ['a limit', withMatch(5, { kind: 'limit', perSecond: 10, burst: 6 })],
    ['an action', (r) => r.map((x, j) => (j === 1 ? { ...x, action: { kind: 'reject' } } : x))],
    ['a comment', (r) => r.map((x, j) => (j === 2 ? { ...x, comment: 'pod to self' } : x))],
    ['a comment dropped', (r) => r.map((x, j) => (j === 2 ? { match: x.match, action: x.action } : x))],
    [
      'an NFLOG group',
      (r, pod) => r.map((x, j) => (j === 5 ? { ...x, action: { kind: 'nflog', group: 9477, prefix: `nf:iso:${pod.chain}` } } : x)),
    ],
    [
      'an NFLOG prefix',
      (r, pod) => r.map((x, j) => (j === 5 ? { ...x, action: { kind: 'nflog', group: 9476, prefix: `nf:aud:d:${pod.chain}` } } : x)),
    ],
    [
      'a match moved to the next rule',
      (r) => r.map((x, j) => (j === 4 ? { ...x, match: [] } : j === 5 ? { ...x, match: [...r[4]!.match, ...x.match] } : x)),
    ],
    ['a rule more', (r) => [...r.slice(0, 5), r[4]!, ...r.slice(5)]],
    ['a rule fewer', (r) => [...r.slice(0, 4), ...r.slice(5)]],
    ['two rules swapped (the return before the jump)', (r) => [...r.slice(0, 3), r[4]!, r[3]!, ...r.slice(5)]],
    [
      'a jump to a missing chain',
      (r) => r.map((x, j) => (j === 3 ? { ...x, action: { kind: 'jump', target: chainName('nf-pi-gone') } } : x)),
    ],
    [
      'a jump turned into a goto',
      (r) => r.map((x, j) => (j === 3 ? { ...x, action: { kind: 'goto', target: chainName('nf-pi-policy') } } : x)),
    ],
  ])('differ for %s', (_what, tweak) => {
    const [a, b] = keys(workload(A), workload(B, tweak));
    expect(a).not.toBe(b);
  });

  it('differ when a chain jumped to says something else, and follow content, not names', () => {
    const other: Chain = {
      ...POLICY,
      name: chainName('nf-pi-other'),
      rules: [{ ...POLICY.rules[0]!, match: [POLICY.rules[0]!.match[0]!, { kind: 'dports', ports: [{ from: 81, to: 81 }] }] }],
    };
    const renamed: Chain = { ...POLICY, name: chainName('nf-pi-renamed') };
    const to = (target: string) => (r: Rule[]) =>
      r.map((x, j) => (j === 3 ? { ...x, action: { kind: 'jump' as const, target: chainName(target) } } : x));
    const [a, b] = keys(workload(A), workload(B, to('nf-pi-other')), [POLICY, other]);
    expect(a).not.toBe(b);
    const [c, d] = keys(workload(A), workload(B, to('nf-pi-renamed')), [POLICY, renamed]);
    expect(c).toBe(d);
  });

  it('do not take a text that reads like a placeholder for the pod’s own name', () => {
    // B's comment says, literally, what A's says once A's own pod is written as a placeholder.
    const comment = (text: string) => (r: Rule[]) => r.map((x, j) => (j === 6 ? { ...x, comment: text } : x));
    const [a, b] = keys(workload(A, comment(`${A.key} isolated`)), workload(B, comment('<pod> isolated')));
    expect(a).not.toBe(b);
  });

  it('do not take another pod’s name in a pod’s chain for its own', () => {
    const comment = (text: string) => (r: Rule[]) => r.map((x, j) => (j === 6 ? { ...x, comment: text } : x));
    const [a, b] = keys(workload(A, comment(`${A.key} isolated`)), workload(B, comment(`${A.key} isolated`)));
    expect(a).not.toBe(b);
  });
});
