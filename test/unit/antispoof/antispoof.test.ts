// Anti-spoofing as values: which bridge port may claim which address, from the kernel's port list and
// the CNI result cache, and what the bridge table does with a frame. The kernel test
// (test/kernel/anti-spoofing.test.ts) proves the rendered table does the same with real frames.

import { antiSpoofState, judgeFrame, type Frame } from '../../../src/antispoof/model.js';
import { renderAntiSpoof } from '../../../src/antispoof/render.js';
import { parseCniResult, type CniBinding } from '../../../src/dataplane/cni-cache.js';
import { nftCountsByComment, parseNftListing } from '../../../src/render/index.js';
import { cniResult } from '../../../sandbox/cni-cache.js';

const A: CniBinding = { key: 'cbr0-aaa-eth0', containerId: 'aaa', hostVeth: 'veth0a', ips: ['10.244.1.2', 'fd00::2'] };
const B: CniBinding = { key: 'cbr0-bbb-eth0', containerId: 'bbb', hostVeth: 'veth0b', ips: ['10.244.1.3'] };
const links = [
  { name: 'cni0' },
  { name: 'veth0a', master: 'cni0' },
  { name: 'veth0b', master: 'cni0' },
  { name: 'veth0new', master: 'cni0' },
  { name: 'vethdock', master: 'docker0' },
];
const state = antiSpoofState('cni0', links, [A, B, { ...B, key: 'cbr0-gone-eth0', hostVeth: 'vethgone' }]);

describe('antiSpoofState', () => {
  it('binds each port of the bridge the cache names, and only those', () => {
    expect(state.bindings).toEqual([
      { port: 'veth0a', ipv4: ['10.244.1.2'], ipv6: ['fd00::2'], source: 'cbr0-aaa-eth0' },
      { port: 'veth0b', ipv4: ['10.244.1.3'], ipv6: [], source: 'cbr0-bbb-eth0' },
    ]);
  });
  it('lists ports of the bridge nobody named as unknown, and other bridges’ ports apart', () => {
    expect(state.unknownPorts).toEqual(['veth0new']);
    expect(state.otherPorts).toEqual(['vethdock']);
  });
  it('treats a port two cache entries disagree about as unknown', () => {
    const twice = antiSpoofState('cni0', links, [A, { ...A, key: 'cbr0-zzz-eth0', ips: ['10.244.1.9'] }]);
    expect(twice.unknownPorts).toContain('veth0a');
  });
});

describe('antiSpoofState with two live ports claiming one address', () => {
  // A stale sandbox (its veth still on the bridge, its cache file still there) and the pod that got its address.
  const stale: CniBinding = { key: 'cbr0-old-eth0', containerId: 'old', hostVeth: 'veth0a', ips: ['10.244.1.3', 'fd00::9'] };
  const fresh: CniBinding = { key: 'cbr0-new-eth0', containerId: 'new', hostVeth: 'veth0b', ips: ['10.244.1.3'] };
  const both = antiSpoofState('cni0', links, [stale, fresh]);

  it('binds the address to neither port, and reports the conflict with both entries', () => {
    expect(both.bindings.flatMap((b) => b.ipv4)).not.toContain('10.244.1.3');
    expect(both.conflicts).toEqual([
      {
        address: '10.244.1.3',
        claims: [
          { entry: 'cbr0-new-eth0', port: 'veth0b' },
          { entry: 'cbr0-old-eth0', port: 'veth0a' },
        ],
      },
    ]);
  });
  it.each(['veth0a', 'veth0b'])('refuses frames from %s with that source, as IPv4 and as ARP', (inPort) => {
    expect(judgeFrame(both, { inPort, kind: 'ipv4', src: '10.244.1.3' }).verdict).toBe('drop');
    expect(judgeFrame(both, { inPort, kind: 'arp', src: '10.244.1.3' }).verdict).toBe('drop');
  });
  it('keeps a port its uncontested addresses, and a port left with none is unknown', () => {
    expect(both.bindings).toEqual([{ port: 'veth0a', ipv4: [], ipv6: ['fd00::9'], source: 'cbr0-old-eth0' }]);
    expect(both.unknownPorts).toEqual(['veth0b', 'veth0new']);
  });
  it('sees one address in two spellings as one claim', () => {
    const v6 = antiSpoofState('cni0', links, [stale, { ...fresh, ips: ['fd00:0::09'] }]);
    expect(v6.conflicts.map((c) => c.address)).toEqual(['fd00::9']);
    expect(v6.bindings.flatMap((b) => b.ipv6)).toEqual([]);
  });
  it('is no conflict when the other entry names a port that is gone, or the same port', () => {
    expect(antiSpoofState('cni0', links, [{ ...stale, hostVeth: 'vethgone' }, fresh]).conflicts).toEqual([]);
    expect(antiSpoofState('cni0', links, [fresh, { ...fresh, key: 'cbr0-new2-eth0' }]).conflicts).toEqual([]);
  });
});

describe('judgeFrame', () => {
  it.each<{ name: string; frame: Frame; expect: 'accept' | 'drop' }>([
    { name: 'IPv4 from its own address', frame: { inPort: 'veth0a', kind: 'ipv4', src: '10.244.1.2' }, expect: 'accept' },
    { name: "IPv4 with another pod's address", frame: { inPort: 'veth0a', kind: 'ipv4', src: '10.244.1.3' }, expect: 'drop' },
    { name: 'ARP claiming its own address', frame: { inPort: 'veth0b', kind: 'arp', src: '10.244.1.3' }, expect: 'accept' },
    { name: "ARP claiming another pod's address", frame: { inPort: 'veth0b', kind: 'arp', src: '10.244.1.2' }, expect: 'drop' },
    { name: 'ARP probe (sender 0.0.0.0, RFC 5227)', frame: { inPort: 'veth0b', kind: 'arp', src: '0.0.0.0' }, expect: 'accept' },
    { name: 'IPv6 global of its own', frame: { inPort: 'veth0a', kind: 'ipv6', src: 'fd00::2' }, expect: 'accept' },
    { name: 'IPv6 link-local', frame: { inPort: 'veth0a', kind: 'ipv6', src: 'fe80::1' }, expect: 'accept' },
    { name: 'IPv6 DAD from ::', frame: { inPort: 'veth0b', kind: 'ipv6', src: '::' }, expect: 'accept' },
    { name: 'IPv6 with another address', frame: { inPort: 'veth0b', kind: 'ipv6', src: 'fd00::2' }, expect: 'drop' },
    { name: 'anything from a port whose pod is not known', frame: { inPort: 'veth0new', kind: 'ipv4', src: '10.244.1.9' }, expect: 'drop' },
  ])('$name: $expect', ({ frame, expect: expected }) => {
    expect(judgeFrame(state, frame).verdict).toBe(expected);
  });
});

describe('renderAntiSpoof', () => {
  const script = renderAntiSpoof(state);
  it('replaces the table whole: create, delete, define', () => {
    expect(script.split('\n').slice(0, 3)).toEqual(['table bridge netfence', 'delete table bridge netfence', 'table bridge netfence {']);
  });
  it('hooks bridge prerouting before conntrack, lets other bridges through, and drops unknown veths last', () => {
    const pre = script.slice(script.indexOf('chain prerouting'));
    expect(pre).toContain('type filter hook prerouting priority -300; policy accept;');
    expect(pre).toContain('iifname { "vethdock" } accept');
    expect(pre.trim().split('\n').slice(-3)[0]).toBe('    meta iifkind "veth" counter drop comment "nf:spoof unknown-port"');
  });
  it("accepts a port's own sources, then counts and drops the rest by kind", () => {
    expect(script).toContain('ether type arp arp saddr ip { 10.244.1.2, 0.0.0.0 } accept');
    expect(script).toContain('ether type ip ip saddr { 10.244.1.2 } accept');
    expect(script).toContain('ether type ip counter drop comment "nf:spoof ipv4 veth0a"');
  });
  it("lets a Neighbour Advertisement name only the pod's own IPv6 addresses or a link-local one as its target", () => {
    // RFC 4861 §4.4: the target (ICMPv6 bytes 8-23) is the address whose link-layer address the NA carries.
    expect(script).toContain(
      'ether type ip6 icmpv6 type nd-neighbor-advert @th,64,128 != { 0xfd000000000000000000000000000002 } @th,64,16 & 0xffc0 != 0xfe80 counter drop comment "nf:spoof nd veth0a"',
    );
    // A pod without IPv6 may still advertise link-local addresses (its own, which the cache does not name).
    expect(script).toContain(
      'ether type ip6 icmpv6 type nd-neighbor-advert @th,64,16 & 0xffc0 != 0xfe80 counter drop comment "nf:spoof nd veth0b"',
    );
    // Before the source accepts: an NA from the pod's own link-local address is judged by its target.
    const chain = script.slice(script.indexOf('chain port-veth0a'));
    expect(chain.indexOf('nf:spoof nd veth0a')).toBeLessThan(chain.indexOf('ip6 saddr'));
  });
  it('drops Router Advertisements and Redirects from pods: a pod is never a router of the pod network', () => {
    expect(script).toContain('ether type ip6 icmpv6 type { nd-router-advert, nd-redirect } counter drop comment "nf:spoof router veth0a"');
  });
  it('omits the IPv4 accept for a pod without IPv4 (an empty set is a syntax error)', () => {
    const v6only = renderAntiSpoof(antiSpoofState('cni0', links, [{ ...A, ips: ['fd00::2'] }]));
    expect(v6only).not.toContain('ip saddr {  }');
    expect(v6only).not.toMatch(/ether type ip ip saddr/);
  });
});

describe('parseCniResult', () => {
  const pod = {
    node: 'n1',
    netns: 'ns1',
    hostVeth: 'veth1234',
    containerId: 'c1',
    ips: [{ address: '10.244.1.7', prefix: 24, gateway: '10.244.1.1' }],
  };
  it('reads the host veth and the pod-side addresses of a bridge plugin result', () => {
    expect(parseCniResult('cbr0-c1-eth0', JSON.stringify(cniResult(pod)), 'cni0')).toEqual({
      key: 'cbr0-c1-eth0',
      containerId: 'c1',
      hostVeth: 'veth1234',
      ips: ['10.244.1.7'],
    });
  });
  it('ignores what is not a bridge result or not JSON', () => {
    expect(parseCniResult('x', '{', 'cni0')).toBeUndefined();
    expect(parseCniResult('x', JSON.stringify({ result: { interfaces: [{ name: 'cni0' }], ips: [] } }), 'cni0')).toBeUndefined();
  });
});

describe('nftCountsByComment', () => {
  it('reads packets and bytes per rule comment', () => {
    const json = JSON.stringify({
      nftables: [
        { metainfo: {} },
        { rule: { comment: 'nf:spoof ipv4 veth0a', expr: [{ match: {} }, { counter: { packets: 3, bytes: 90 } }, { drop: null }] } },
        { rule: { expr: [{ accept: null }] } },
      ],
    });
    expect([...nftCountsByComment(parseNftListing(json))]).toEqual([['nf:spoof ipv4 veth0a', { packets: 3, bytes: 90 }]]);
  });
});
