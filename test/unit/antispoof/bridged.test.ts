// Bridged pod-to-pod frames no pod address explains, as values: which ports the bridge table judges (from
// what the compiler programmed), which of their addresses are left to iptables, and the chains it writes.
// test/kernel/bridged-pod-traffic.test.ts proves the table with real frames.

import { portJudgements, UNKNOWN_POLICING } from '../../../src/antispoof/bridged.js';
import { antiSpoofState } from '../../../src/antispoof/model.js';
import { renderAntiSpoof } from '../../../src/antispoof/render.js';
import { compile } from '../../../src/compile/index.js';
import { BridgedPolicingSource } from '../../../src/daemon/anti-spoofing.js';
import { LINK_ICMPV6 } from '../../../src/model/link-icmpv6.js';
import {
  ingress,
  ips,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  types,
} from '../../helpers/builders.js';

const links = [
  { name: 'veth0b', master: 'cni0' },
  { name: 'veth0c', master: 'cni0' },
  { name: 'veth0a', master: 'cni0' },
  { name: 'vethdock', master: 'docker0' },
];
const cache = [
  { key: 'cbr0-b-eth0', containerId: 'b', hostVeth: 'veth0b', ips: ['10.244.1.3', 'fd00::3'] },
  { key: 'cbr0-c-eth0', containerId: 'c', hostVeth: 'veth0c', ips: ['10.244.1.4'] },
  { key: 'cbr0-a-eth0', containerId: 'a', hostVeth: 'veth0a', ips: ['10.244.1.2'] },
];
const state = antiSpoofState('cni0', links, cache);

/** What the daemon learns from a sync: b isolated for ingress (and dual-stack), c open; `extra`: one more policy's tweaks. */
function policingOf(extra: Parameters<typeof makePolicy>[2][] = [], programs: (f: 4 | 6) => boolean = () => true) {
  const pods = [
    makePod('x', 'b', '10.244.1.3', labels({ app: 'b' }), ips('10.244.1.3', 'fd00:0::3')),
    makePod('x', 'c', '10.244.1.4', labels({ app: 'c' })),
  ];
  const policies = [
    makePolicy('x', 'deny-b', selectPods(sel({ app: 'b' })), types('Ingress')),
    ...(extra.length > 0 ? [makePolicy('x', 'extra', ...extra)] : []),
  ];
  const { desired } = compile(
    snapshot({ namespaces: [makeNamespace('x')], pods, policies }),
    settings({ podCidrs: ['10.244.1.0/24', 'fd00::/64'] }),
  );
  const source = new BridgedPolicingSource(programs);
  source.synced({ desired });
  return source;
}

describe('portJudgements', () => {
  it('judges the isolated direction of a pod, not the open one, and leaves its own addresses to iptables', () => {
    const byPort = new Map(portJudgements(state, policingOf().get()).map((j) => [j.port, j]));
    expect(byPort.get('veth0b')).toEqual({ port: 'veth0b', judgeTo: true, judgeFrom: false, ipv4: ['10.244.1.3'], ipv6: ['fd00::3'] });
    expect(byPort.get('veth0c')).toMatchObject({ judgeTo: false, judgeFrom: false });
  });
  it('judges a port whose addresses name no programmed pod (fail closed)', () => {
    // a is in the CNI cache but not in the cluster the compiler saw.
    expect(portJudgements(state, policingOf().get()).find((j) => j.port === 'veth0a')).toMatchObject({ judgeTo: true, judgeFrom: true });
  });
  it('judges every port before the first sync, keeping both families of addresses', () => {
    expect(portJudgements(state, UNKNOWN_POLICING).every((j) => j.judgeTo && j.judgeFrom)).toBe(true);
    expect(portJudgements(state, UNKNOWN_POLICING).find((j) => j.port === 'veth0b')?.ipv6).toEqual(['fd00::3']);
  });
  it('lets no address of a family netfence does not program explain a frame (IPv6 disabled, bridge carrying it)', () => {
    const b = portJudgements(state, policingOf([], (f) => f === 4).get()).find((j) => j.port === 'veth0b');
    expect(b).toMatchObject({ judgeTo: true, ipv4: ['10.244.1.3'], ipv6: [] });
  });
  it('counts an audited policy as not isolating (audit never enforces)', () => {
    const audited = policingOf([
      selectPods(sel({ app: 'c' })),
      types('Ingress'),
      ingress(rule()),
      (p) => void ((p as { audit?: boolean }).audit = true),
    ]).get();
    expect(portJudgements(state, audited).find((j) => j.port === 'veth0c')).toMatchObject({ judgeTo: false });
  });
  it('counts a policy that allows everything as isolating: its pod hears only what is addressed to it', () => {
    const allowAll = policingOf([selectPods(sel({ app: 'c' })), types('Ingress'), ingress(rule())]).get();
    expect(portJudgements(state, allowAll).find((j) => j.port === 'veth0c')).toMatchObject({ judgeTo: true, judgeFrom: false });
  });
});

describe('the bridge table with bridged judging', () => {
  const script = renderAntiSpoof(state, new Map(), { antiSpoofing: false, policing: policingOf().get() });
  const chain = (name: string) => script.slice(script.indexOf(`chain ${name} {`), script.indexOf('  }', script.indexOf(`chain ${name} {`)));
  it('hooks forward only, without the prerouting chain when anti-spoofing is off', () => {
    expect(script).not.toContain('chain prerouting');
    expect(chain('forward')).toContain('type filter hook forward priority filter; policy accept;');
    expect(chain('forward')).toContain('iifname { "vethdock" } accept');
  });
  it('accepts exactly the ND/MLD the IPv6 nf-FORWARD accepts, before judging', () => {
    const accepts = chain('forward')
      .split('\n')
      .filter((l) => l.includes('icmpv6'));
    expect(accepts).toHaveLength(LINK_ICMPV6.length);
    for (const m of LINK_ICMPV6)
      expect(accepts.some((l) => l.includes(`icmpv6 type ${m.type} ip6 hoplimit ${m.hopLimit} accept`))).toBe(true);
    expect(chain('forward').indexOf('icmpv6')).toBeLessThan(chain('forward').indexOf('jump to-pods'));
  });
  it("drops what reaches an isolated pod's port addressed to none of its addresses; open ports and unknown veths apart", () => {
    expect(chain('to-pods').split('\n').slice(1, -1)).toEqual([
      '    oifname { "veth0c" } return',
      '    oifname "veth0a" ether type ip ip daddr { 10.244.1.2 } return',
      '    oifname "veth0a" counter drop comment "nf:bridged to veth0a"',
      '    oifname "veth0b" ether type ip ip daddr { 10.244.1.3 } return',
      '    oifname "veth0b" ether type ip6 ip6 daddr { fd00::3 } return',
      '    oifname "veth0b" counter drop comment "nf:bridged to veth0b"',
      '    meta oifkind "veth" counter drop comment "nf:bridged to unknown-port"',
    ]);
  });
});

describe('BridgedPolicingSource: the bridge table is rewritten only when isolation moved', () => {
  const desiredOf = (extra: Parameters<typeof makePolicy>[2][] = []) =>
    compile(
      snapshot({
        namespaces: [makeNamespace('x')],
        pods: [makePod('x', 'b', '10.244.1.3', labels({ app: 'b' })), makePod('x', 'c', '10.244.1.4', labels({ app: 'c' }))],
        policies: [
          makePolicy('x', 'deny-b', selectPods(sel({ app: 'b' })), types('Ingress')),
          ...(extra.length > 0 ? [makePolicy('x', 'extra', ...extra)] : []),
        ],
      }),
      settings({ podCidrs: ['10.244.1.0/24'] }),
    ).desired;

  it('tells its listener after the first sync, not after one that isolates the same pods, and again when isolation changes', () => {
    const source = new BridgedPolicingSource(() => true);
    let told = 0;
    source.onChange(() => told++);
    source.synced({ desired: desiredOf() });
    expect(told).toBe(1);
    // Another compile of the same cluster: new objects, the same isolation.
    source.synced({ desired: desiredOf() });
    expect(told).toBe(1);
    source.synced({ desired: desiredOf([selectPods(sel({ app: 'c' })), types('Egress')]) });
    expect(told).toBe(2);
    expect(source.get().pods.get('10.244.1.4')).toEqual({ ingress: true, egress: false });
  });

  it('tells its listener after a first sync that programs nothing (the table stops judging every port)', () => {
    const source = new BridgedPolicingSource(() => true);
    let told = 0;
    source.onChange(() => told++);
    source.synced({
      desired: { v4: { family: 4, chains: [], ipsets: [], hooks: [] }, v6: { family: 6, chains: [], ipsets: [], hooks: [] } },
    });
    expect(told).toBe(1);
  });
});
