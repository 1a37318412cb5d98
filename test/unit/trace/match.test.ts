import type { Match } from '../../../src/model/index.js';
import type { SavedIpSet } from '../../../src/render/index.js';
import { evaluateMatch, ifaceMatches, setMatches, type Packet } from '../../../src/trace/index.js';

const packet = (over: Partial<Packet> = {}): Packet => ({
  src: '10.244.1.5',
  dst: '10.244.2.9',
  proto: 'tcp',
  dport: 8080,
  inIface: 'cni0',
  outIface: 'eth0',
  ctstate: 'NEW',
  ...over,
});

const set = (name: string, type: string, members: string[], family: 4 | 6 = 4): SavedIpSet => ({
  name: name as SavedIpSet['name'],
  type,
  family,
  members,
});
const ipsets = new Map<string, SavedIpSet>([
  ['ips', set('ips', 'hash:ip', ['10.244.1.5', '10.244.1.6'])],
  ['nets', set('nets', 'hash:net', ['172.17.0.0/16', '172.17.1.0/24 nomatch', '172.17.1.128/25', '10.1.1.1'])],
  ['named', set('named', 'hash:ip,port', ['10.244.2.9,tcp:8080', '10.244.2.10,udp:53'])],
  ['v6', set('v6', 'hash:net', ['fd00:10:244::/48'], 6)],
]);

interface Case {
  readonly name: string;
  readonly match: Match;
  readonly packet?: Partial<Packet>;
  readonly mark?: number;
  readonly expect: boolean | 'unknown';
}

const cases: Case[] = [
  { name: 'src in v4 cidr', match: { kind: 'src-net', cidr: '10.244.1.0/24' }, expect: true },
  { name: 'src outside v4 cidr', match: { kind: 'src-net', cidr: '10.244.2.0/24' }, expect: false },
  { name: 'negated src', match: { kind: 'src-net', cidr: '10.244.2.0/24', negate: true }, expect: true },
  { name: 'dst host /32', match: { kind: 'dst-net', cidr: '10.244.2.9/32' }, expect: true },
  {
    name: 'v6 dst in v6 cidr',
    match: { kind: 'dst-net', cidr: 'fd00:10:244:2::/64' },
    packet: { src: 'fd00:10:244:1::5', dst: 'fd00:10:244:2::9' },
    expect: true,
  },
  { name: 'v4 packet never in a v6 cidr', match: { kind: 'dst-net', cidr: '::/0' }, expect: false },
  { name: 'in iface exact', match: { kind: 'in-iface', name: 'cni0' }, expect: true },
  { name: 'out iface wildcard', match: { kind: 'out-iface', name: 'eth+' }, expect: true },
  { name: 'negated in iface', match: { kind: 'in-iface', name: 'cni0', negate: true }, expect: false },
  { name: 'protocol', match: { kind: 'protocol', protocol: 'udp' }, expect: false },
  {
    name: 'dport in range',
    match: {
      kind: 'dports',
      ports: [
        { from: 443, to: 443 },
        { from: 8000, to: 8100 },
      ],
    },
    expect: true,
  },
  { name: 'dport range end inclusive', match: { kind: 'dports', ports: [{ from: 8000, to: 8080 }] }, expect: true },
  { name: 'dport outside', match: { kind: 'dports', ports: [{ from: 80, to: 80 }] }, expect: false },
  { name: 'hash:ip src member', match: { kind: 'set', set: 'ips' as never, direction: 'src' }, expect: true },
  { name: 'hash:ip dst not member', match: { kind: 'set', set: 'ips' as never, direction: 'dst' }, expect: false },
  { name: 'negated set', match: { kind: 'set', set: 'ips' as never, direction: 'dst', negate: true }, expect: true },
  {
    name: 'hash:net covering entry',
    match: { kind: 'set', set: 'nets' as never, direction: 'src' },
    packet: { src: '172.17.9.9' },
    expect: true,
  },
  {
    name: 'hash:net nomatch exception',
    match: { kind: 'set', set: 'nets' as never, direction: 'src' },
    packet: { src: '172.17.1.5' },
    expect: false,
  },
  {
    name: 'hash:net longer prefix inside nomatch',
    match: { kind: 'set', set: 'nets' as never, direction: 'src' },
    packet: { src: '172.17.1.200' },
    expect: true,
  },
  {
    name: 'hash:net bare host entry',
    match: { kind: 'set', set: 'nets' as never, direction: 'src' },
    packet: { src: '10.1.1.1' },
    expect: true,
  },
  { name: 'hash:net v6 set, v4 packet', match: { kind: 'set', set: 'v6' as never, direction: 'dst' }, expect: false },
  { name: 'hash:ip,port dst,dst member', match: { kind: 'set', set: 'named' as never, direction: 'dst,dst' }, expect: true },
  {
    name: 'hash:ip,port wrong port',
    match: { kind: 'set', set: 'named' as never, direction: 'dst,dst' },
    packet: { dport: 8081 },
    expect: false,
  },
  {
    name: 'hash:ip,port wrong protocol',
    match: { kind: 'set', set: 'named' as never, direction: 'dst,dst' },
    packet: { proto: 'udp' },
    expect: false,
  },
  {
    name: 'hash:ip,port src port unknown',
    match: { kind: 'set', set: 'named' as never, direction: 'dst,src' as never },
    expect: 'unknown',
  },
  { name: 'missing set', match: { kind: 'set', set: 'nope' as never, direction: 'src' }, expect: 'unknown' },
  { name: 'mark value/mask', match: { kind: 'mark', value: 0x10000, mask: 0x10000 }, mark: 0x10004, expect: true },
  { name: 'mark not set', match: { kind: 'mark', value: 0x10000, mask: 0x10000 }, mark: 0x4000, expect: false },
  { name: 'negated mark', match: { kind: 'mark', value: 0x10000, mask: 0x10000, negate: true }, mark: 0, expect: true },
  { name: 'ctstate NEW', match: { kind: 'ctstate', states: ['NEW'] }, expect: true },
  { name: 'ctstate ESTABLISHED never for a new packet', match: { kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }, expect: false },
  { name: 'physdev in wildcard', match: { kind: 'physdev', in: 'veth+' }, packet: { physIn: 'veth1234' }, expect: true },
  { name: 'physdev is-bridged without bridge ports', match: { kind: 'physdev', isBridged: true }, expect: false },
  { name: 'physdev is-bridged', match: { kind: 'physdev', isBridged: true }, packet: { physIn: 'veth1', physOut: 'veth2' }, expect: true },
  {
    name: 'icmpv6 type on an NS',
    match: { kind: 'icmpv6-type', type: 135 },
    packet: { proto: 'ipv6-icmp', dport: 0, icmp: { type: 135, hopLimit: 255 } },
    expect: true,
  },
  {
    name: 'icmpv6 type: another type',
    match: { kind: 'icmpv6-type', type: 135 },
    packet: { proto: 'ipv6-icmp', dport: 0, icmp: { type: 128, hopLimit: 64 } },
    expect: false,
  },
  { name: 'icmpv6 type never matches TCP', match: { kind: 'icmpv6-type', type: 135 }, expect: false },
  {
    name: 'hop limit 255',
    match: { kind: 'hop-limit', value: 255 },
    packet: { proto: 'ipv6-icmp', dport: 0, icmp: { type: 135, hopLimit: 255 } },
    expect: true,
  },
  {
    name: 'hop limit 254 (routed) is not 255',
    match: { kind: 'hop-limit', value: 255 },
    packet: { proto: 'ipv6-icmp', dport: 0, icmp: { type: 135, hopLimit: 254 } },
    expect: false,
  },
  {
    name: 'dports never match ICMPv6',
    match: { kind: 'dports', ports: [{ from: 0, to: 65535 }] },
    packet: { proto: 'ipv6-icmp', dport: 0, icmp: { type: 135, hopLimit: 255 } },
    expect: false,
  },
  { name: 'connmark: a new flow carries none', match: { kind: 'connmark', value: 0x100000, mask: 0x100000 }, expect: false },
  {
    name: 'connmark: a revoked flow',
    match: { kind: 'connmark', value: 0x100000, mask: 0x100000 },
    packet: { ctmark: 0x100001 },
    expect: true,
  },
];

describe('evaluateMatch', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const answer = evaluateMatch(c.match, { packet: packet(c.packet), mark: c.mark ?? 0, ipsets });
    expect(typeof answer === 'boolean' ? answer : 'unknown').toBe(c.expect);
  });
});

describe('setMatches', () => {
  it('refuses an unknown set type instead of guessing', () => {
    expect(setMatches(set('x', 'bitmap:port', ['80']), packet(), 'dst').known).toBe(false);
  });
});

describe('ifaceMatches', () => {
  it.each([
    ['cni0', 'cni0', true],
    ['cni+', 'cni0', true],
    ['+', 'anything', true],
    ['cni0', 'cni01', false],
    ['cni0', undefined, false],
  ] as const)('%s vs %s', (pattern, name, want) => expect(ifaceMatches(pattern, name)).toBe(want));
});
