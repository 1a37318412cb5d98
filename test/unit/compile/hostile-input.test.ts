// Hostile and broken inputs, root-free: the compiler refuses what the API server would reject,
// one object at a time, and stays near-linear whatever the size of a policy. Expectations come from the
// API (validation rules, the spec's ipBlock meaning), never from what the compiler happens to print.

import ipaddr from 'ipaddr.js';
import { parseCidr } from '../../../src/model/address.js';
import { compile, Compiler } from '../../../src/compile/index.js';
import type { FamilyState } from '../../../src/model/index.js';
import {
  blockPeer,
  containerPorts,
  expr,
  ingress,
  labels,
  makePod,
  makePolicy,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  tcp,
} from '../../helpers/builders.js';
import { evaluate } from '../../helpers/eval-desired.js';
import { Oracle } from '../../helpers/oracle.js';
import { viewPod } from './compiled-view.js';
import { cluster } from './fixtures.js';

const db = selectPods(sel({ app: 'db' }));
const DB_IP = '10.244.1.10';

/** Verdict of a new TCP packet from `src` to the local pod `dst` (arriving over flannel, leaving to cni0). */
const ingressVerdict = (state: FamilyState, src: string, dst: string, port = 5432) =>
  evaluate(state, { src, dst, proto: 'tcp', dport: port, inIface: 'flannel.1', outIface: 'cni0' }).verdict;

describe('addresses are parsed exactly as the API server parses them', () => {
  it('an ipBlock cidr with leading zeros (010.10.0.0/16) is refused, not read as octal 8.10.0.0/16', () => {
    // KEP-4858: "The updated validation will reject IPv4 IPs with leading "0"s, and CIDR values that contain such IPs."
    const policy = makePolicy('prod', 'octal', db, ingress(rule([blockPeer('010.10.0.0/16')])));
    const { desired, problems } = compile(cluster([policy]), settings());
    expect(problems).toContainEqual(
      expect.objectContaining({ object: 'NetworkPolicy prod/octal', field: 'spec.ingress[0].from[0].ipBlock.cidr', severity: 'error' }),
    );
    // Fails closed: db isolated, nothing allowed; in particular neither 8.10.x nor 10.10.x is let in.
    expect(viewPod(desired.v4, 'prod/db', 'ingress')).toEqual({ policies: ['prod/octal'], allows: [] });
    expect(ingressVerdict(desired.v4, '8.10.0.1', DB_IP)).toBe('DROP');
  });

  it.each(['010.10.0.1', '10.10.0.01', '1.2.3', '0x0a.0.0.1', 'fe80::1%eth0', '10.0.0.256'])('%p is not an address', (text) => {
    expect(parseCidr(`${text}/32`).ok).toBe(false);
  });

  it('a pod whose IP is 0.0.0.0 is left out of every set with a problem; other pods keep theirs', () => {
    const zero = makePod('prod', 'zero', '0.0.0.0', labels({ app: 'web' }));
    const policy = makePolicy('prod', 'from-web', db, ingress(rule([podPeer(sel({ app: 'web' }))])));
    const { desired, problems } = compile(cluster([policy], [zero]), settings());
    expect(desired.v4.ipsets.flatMap((s) => s.members)).not.toContain('0.0.0.0');
    expect(problems).toContainEqual(expect.objectContaining({ object: 'Pod prod/zero', field: 'status.podIPs', severity: 'warning' }));
    // prod/web (10.244.1.11) still reaches db; the set was not poisoned.
    expect(ingressVerdict(desired.v4, '10.244.1.11', DB_IP)).toBe('ACCEPT');
  });
});

describe('selectors: one set per meaning', () => {
  it('values "a,c" and [a, c] get separate sets', () => {
    const joined = makePolicy('prod', 'joined', db, ingress(rule([podPeer(sel({}, [expr('tier', 'In', 'a,c')]))])));
    const split = makePolicy('prod', 'split', db, ingress(rule([podPeer(sel({}, [expr('tier', 'In', 'a', 'c')]))])));
    const { desired } = compile(cluster([joined, split]), settings());
    const view = viewPod(desired.v4, 'prod/db', 'ingress');
    if (view === 'open') throw new Error('db should be isolated');
    // "a,c" is not a valid label value, so `joined` is refused (fails closed); what matters here is that
    // `split`'s peers are its own: a pod labelled tier=a is allowed by `split` alone.
    expect(ingressVerdict(desired.v4, '10.244.1.11', DB_IP)).toBe('DROP');
    const withTierA = makePod('prod', 'tier-a', '10.244.2.99', labels({ tier: 'a' }));
    const again = compile(cluster([joined, split], [withTierA]), settings());
    expect(ingressVerdict(again.desired.v4, '10.244.2.99', DB_IP)).toBe('ACCEPT');
    const setsOf = (policy: string) =>
      again.desired.v4.chains
        .filter((c) => c.role.kind === 'policy' && c.role.policy === policy)
        .flatMap((c) => c.rules.flatMap((r) => r.match.flatMap((m) => (m.kind === 'set' ? [m.set] : []))));
    expect(setsOf('prod/joined')).toEqual([]);
    expect(setsOf('prod/split')).toHaveLength(1);
  });

  it('a label value the API server would reject fails the policy closed', () => {
    const policy = makePolicy('prod', 'comma', db, ingress(rule([podPeer(sel({ tier: 'a,c' }))])));
    const { problems } = compile(cluster([policy]), settings());
    expect(problems).toContainEqual(expect.objectContaining({ object: 'NetworkPolicy prod/comma', severity: 'error' }));
  });
});

/** Every 2nd address from 10.200.0.0: `n` /32 excepts that cannot merge into bigger blocks. */
const strideExcepts = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `10.200.${Math.floor((2 * i) / 256)}.${(2 * i) % 256}/32`);

/** `n` /32 excepts spread over the whole address space (deterministic). */
function spreadExcepts(n: number): string[] {
  let x = 12345;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return `${ipaddr.fromByteArray([(x >>> 24) & 255, (x >>> 16) & 255, (x >>> 8) & 255, x & 255]).toString()}/32`;
  });
}

describe('ipBlock except: sets grow with what the policy writes', () => {
  it('several ipBlocks of one rule, with and without excepts, allow exactly what the oracle allows (random small cases)', () => {
    let seed = 7;
    const rnd = (n: number) => (seed = (Math.imul(seed, 48271) + 1) >>> 0) % n;
    const block = (): string => {
      const prefix = 24 + rnd(5);
      const offset = rnd(1024) & ~((1 << (32 - prefix)) - 1);
      return `10.1.${offset >> 8}.${offset & 255}/${prefix}`;
    };
    const inside = (cidr: string): string => {
      const [net = '', len = '32'] = cidr.split('/');
      const [a, b, c, d] = net.split('.').map(Number) as [number, number, number, number];
      const base = ((c << 8) | d) & 0xffff;
      const prefix = Number(len) + rnd(33 - Number(len));
      const offset = (base + rnd(1 << (32 - Number(len)))) & ~((1 << (32 - prefix)) - 1) & 0xffff;
      return `${a}.${b}.${offset >> 8}.${offset & 255}/${prefix}`;
    };
    for (let round = 0; round < 60; round++) {
      const peers = Array.from({ length: 1 + rnd(4) }, () => {
        const cidr = block();
        return blockPeer(cidr, ...Array.from({ length: rnd(4) }, () => inside(cidr)));
      });
      // Two blocks with the same excepts share an alternative: make that happen now and then.
      if (peers.length > 1 && rnd(2) === 0) peers.push(blockPeer('10.1.0.0/22', ...peers[0]!.ipBlock!.except));
      const policy = makePolicy('prod', 'blocks', db, ingress(rule(peers)));
      const snap = cluster([policy]);
      const { desired, problems } = compile(snap, settings());
      expect(problems).toEqual([]);
      const oracle = new Oracle(snap);
      for (let i = 0; i < 1024; i++) {
        const src = `10.1.${i >> 8}.${i & 255}`;
        // "IPBlock describes a particular CIDR ... with the except entries excluded." Peers are OR-ed.
        const want = oracle.allows({ src, dst: DB_IP, proto: 'tcp', port: 5432 }) ? 'ACCEPT' : 'DROP';
        const got = ingressVerdict(desired.v4, src, DB_IP);
        if (got !== want) throw new Error(`round ${round}: ${src} expected ${want}, got ${got} for ${JSON.stringify(peers)}`);
      }
    }
  });

  it('10,000 /32 excepts in 0.0.0.0/0: the excepts are the set, not the complement', () => {
    const excepts = strideExcepts(10_000);
    const policy = makePolicy('prod', 'big', db, ingress(rule([blockPeer('0.0.0.0/0', ...excepts)])));
    const { desired, problems } = compile(cluster([policy]), settings());
    expect(problems).toEqual([]);
    const blockSets = desired.v4.ipsets.filter((s) => s.description.startsWith('ipBlock'));
    // What the policy wrote: 10,000 excepts, and no set for 0.0.0.0/0 (hash:net cannot hold it).
    expect(blockSets.map((s) => s.members.length)).toEqual([10_000]);
    expect(ingressVerdict(desired.v4, '10.200.0.2', DB_IP)).toBe('DROP');
    expect(ingressVerdict(desired.v4, '10.200.0.3', DB_IP)).toBe('ACCEPT');
    expect(ingressVerdict(desired.v4, '10.200.78.30', DB_IP)).toBe('DROP');
    expect(ingressVerdict(desired.v4, '10.200.78.32', DB_IP)).toBe('ACCEPT'); // past the 10,000th except
    expect(ingressVerdict(desired.v4, '192.0.2.1', DB_IP)).toBe('ACCEPT');
  });

  it('10,000 random /32 excepts spread over 0.0.0.0/0 compile (they used to leave ~320,000 CIDRs and fail closed)', () => {
    const excepts = spreadExcepts(10_000);
    const policy = makePolicy('prod', 'huge', db, ingress(rule([blockPeer('0.0.0.0/0', ...excepts)])));
    const { desired, problems } = compile(cluster([policy]), settings());
    expect(problems).toEqual([]);
    const members = desired.v4.ipsets.filter((s) => s.description.startsWith('ipBlock')).reduce((n, s) => n + s.members.length, 0);
    expect(members).toBe(new Set(excepts).size);
    const excepted = excepts[1234]!.split('/')[0]!;
    const neighbour = excepted.replace(/\d+$/, (d) => String(Number(d) ^ 1));
    expect(ingressVerdict(desired.v4, excepted, DB_IP)).toBe('DROP');
    if (!excepts.includes(`${neighbour}/32`)) expect(ingressVerdict(desired.v4, neighbour, DB_IP)).toBe('ACCEPT');
  });

  it('a policy whose ipBlocks write more than 65,536 CIDRs and excepts fails closed with a problem', () => {
    const policy = makePolicy('prod', 'huge', db, ingress(rule([blockPeer('0.0.0.0/0', ...spreadExcepts(70_000))])));
    const other = makePolicy('prod', 'web-80', selectPods(sel({ app: 'web' })), ingress(rule(undefined, [tcp(80)])));
    const { desired, problems } = compile(cluster([policy, other]), settings());
    expect(problems).toContainEqual(
      expect.objectContaining({ object: 'NetworkPolicy prod/huge', field: 'spec.ingress', severity: 'error' }),
    );
    expect(viewPod(desired.v4, 'prod/db', 'ingress')).toEqual({ policies: ['prod/huge'], allows: [] });
    expect(viewPod(desired.v4, 'prod/web', 'ingress')).toEqual({
      policies: ['prod/web-80'],
      allows: [{ peer: 'any', proto: 'tcp', ports: '80' }],
    });
  });

  it('a policy needing more than 10,000 iptables rules fails closed with a problem', () => {
    const peers = Array.from({ length: 200 }, (_, i) => podPeer(sel({ n: String(i) })));
    const ports = Array.from({ length: 60 }, (_, i) => tcp(1000 + i));
    const policy = makePolicy('prod', 'wide', db, ingress(rule(peers, ports)));
    const { desired, problems } = compile(cluster([policy]), settings());
    expect(problems).toContainEqual(expect.objectContaining({ object: 'NetworkPolicy prod/wide', field: 'spec', severity: 'error' }));
    expect(viewPod(desired.v4, 'prod/db', 'ingress')).toEqual({ policies: ['prod/wide'], allows: [] });
  });
});

describe('two local pods claiming one address', () => {
  // prod/db is isolated (nothing allowed); prod/aaa claims db's address and no policy selects it.
  const imposter = makePod('prod', 'aaa', DB_IP, labels({ app: 'imposter' }), containerPorts());
  const isolateDb = makePolicy('prod', 'isolate-db', db, ingress());

  it('drops new traffic to and from the address instead of letting the first pod by name decide', () => {
    const { desired, problems } = compile(cluster([isolateDb], [imposter]), settings());
    expect(ingressVerdict(desired.v4, '10.244.2.10', DB_IP)).toBe('DROP');
    const egress = evaluate(desired.v4, {
      src: DB_IP,
      dst: '10.244.2.10',
      proto: 'tcp',
      dport: 80,
      inIface: 'cni0',
      outIface: 'flannel.1',
    });
    expect(egress.verdict).toBe('DROP');
    for (const pod of ['prod/aaa', 'prod/db']) {
      expect(problems).toContainEqual(expect.objectContaining({ object: `Pod ${pod}`, field: 'status.podIPs', severity: 'error' }));
    }
  });

  it('as a peer, a shared address matches no selector: a remote imposter of an allowed pod is not let in', () => {
    // prod/web (10.244.1.11) may reach db on 5432; dev/ghost on node-2 claims web's address and is not allowed.
    const fromWeb = makePolicy('prod', 'from-web', db, ingress(rule([podPeer(sel({ app: 'web' }))])));
    const ghost = makePod('dev', 'ghost', '10.244.1.11', labels({ app: 'ghost' }), (p) => void (p.nodeName = 'node-2'));
    const before = compile(cluster([fromWeb]), settings());
    expect(ingressVerdict(before.desired.v4, '10.244.1.11', DB_IP)).toBe('ACCEPT');
    const { desired, problems } = compile(cluster([fromWeb], [ghost]), settings());
    expect(ingressVerdict(desired.v4, '10.244.1.11', DB_IP)).toBe('DROP');
    expect(problems).toContainEqual(expect.objectContaining({ object: 'Pod dev/ghost', severity: 'error' }));
  });

  it('an incremental compile follows the conflict as it comes and goes', () => {
    const fromWeb = makePolicy('prod', 'from-web', db, ingress(rule([podPeer(sel({ app: 'web' }))])));
    const ghost = makePod('dev', 'ghost', '10.244.1.11', labels({ app: 'ghost' }), (p) => void (p.nodeName = 'node-2'));
    const compiler = new Compiler();
    const steps = [cluster([fromWeb]), cluster([fromWeb], [ghost]), cluster([fromWeb])];
    expect(steps.map((snap) => ingressVerdict(compiler.compile(snap, settings()).desired.v4, '10.244.1.11', DB_IP))).toEqual([
      'ACCEPT',
      'DROP',
      'ACCEPT',
    ]);
  });

  it('once one pod gives the address up, the other is judged by its own policies again', () => {
    const { desired, problems } = compile(cluster([isolateDb]), settings());
    expect(problems).toEqual([]);
    expect(ingressVerdict(desired.v4, '10.244.2.10', DB_IP)).toBe('DROP');
    const egress = evaluate(desired.v4, {
      src: DB_IP,
      dst: '10.244.2.10',
      proto: 'tcp',
      dport: 80,
      inIface: 'cni0',
      outIface: 'flannel.1',
    });
    expect(egress.verdict).toBe('ACCEPT');
  });
});
