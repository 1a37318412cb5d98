import { linkKindFromLinkinfo, linksFromIpJson } from '../../../src/dataplane/links.js';

// Trimmed from `ip -j -d link show` / `ip -j addr show` in a netns with a bridge and a veth pair (iproute2 6.1).
const LINKS = JSON.stringify([
  { ifindex: 1, ifname: 'lo' },
  { ifindex: 2, ifname: 'nft-br0', linkinfo: { info_kind: 'bridge', info_data: { stp_state: 0 } } },
  { ifindex: 3, link: 'nft-v0', ifname: 'nft-v1', linkinfo: { info_kind: 'veth' } },
  { ifindex: 4, link: 'nft-v1', ifname: 'nft-v0', master: 'nft-br0', linkinfo: { info_kind: 'veth', info_slave_kind: 'bridge' } },
]);
const ADDRS = JSON.stringify([
  { ifindex: 1, ifname: 'lo', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8 }] },
  {
    ifindex: 2,
    ifname: 'nft-br0',
    addr_info: [
      { family: 'inet', local: '10.244.1.1', prefixlen: 24 },
      { family: 'inet6', local: 'fd00:1::1', prefixlen: 64 },
    ],
  },
  { ifindex: 3, ifname: 'nft-v1', addr_info: [] },
  { ifindex: 4, ifname: 'nft-v0', addr_info: [] },
]);

describe('linksFromIpJson', () => {
  const links = linksFromIpJson(LINKS, ADDRS);
  it.each([
    ['lo', { name: 'lo', index: 1, addresses: ['127.0.0.1'] }],
    ['bridge with both families', { name: 'nft-br0', index: 2, kind: 'bridge', addresses: ['10.244.1.1', 'fd00:1::1'] }],
    ['veth enslaved to the bridge', { name: 'nft-v0', index: 4, kind: 'veth', master: 'nft-br0', addresses: [] }],
    ['veth peer without master', { name: 'nft-v1', index: 3, kind: 'veth', addresses: [] }],
  ])('%s', (_name, expected) => {
    expect(links.find((l) => l.name === expected.name)).toEqual(expected);
  });

  it('sorts by index', () => {
    expect(links.map((l) => l.index)).toEqual([1, 2, 3, 4]);
  });
});

describe('linkKindFromLinkinfo', () => {
  const attr = (type: number, payload: Buffer): Buffer => {
    const len = 4 + payload.length;
    const out = Buffer.alloc((len + 3) & ~3);
    out.writeUInt16LE(len, 0);
    out.writeUInt16LE(type, 2);
    payload.copy(out, 4);
    return out;
  };
  it.each<[string, Buffer, string | undefined]>([
    ['kind only (as the kernel sends for ifb)', Buffer.from([0x08, 0x00, 0x01, 0x00, 0x69, 0x66, 0x62, 0x00]), 'ifb'],
    ['kind after another attribute', Buffer.concat([attr(2, Buffer.from([1, 2, 3, 4, 5])), attr(1, Buffer.from('bridge\0'))]), 'bridge'],
    ['unaligned kind length', attr(1, Buffer.from('veth\0')), 'veth'],
    ['no kind attribute', attr(2, Buffer.from([0, 0, 0, 0])), undefined],
    ['empty', Buffer.alloc(0), undefined],
    ['corrupt length', Buffer.from([0x02, 0x00, 0x01, 0x00]), undefined],
  ])('%s', (_name, buf, kind) => {
    expect(linkKindFromLinkinfo(buf)).toBe(kind);
  });
});
