// Lists network links and their addresses: the daemon finds the CNI bridge (cni0) and the node's
// own addresses with it. rtnetlink first (one socket, no process); `ip -j` when netlink is not usable
// (no prebuilt binding for this platform, a kernel that rejects the dump) or for another netns,
// which a netlink socket opened by this process cannot see.

import { run } from './exec.js';
import { ipFromBytes } from '../model/index.js';

export interface LinkInfo {
  readonly name: string;
  readonly index: number;
  /** rtnetlink IFLA_INFO_KIND: 'bridge', 'veth', 'vxlan', …; absent for physical devices and lo. */
  readonly kind?: string;
  /** Name of the bridge/bond this link is enslaved to. */
  readonly master?: string;
  /** Addresses without prefix length, both families, in kernel order. */
  readonly addresses: readonly string[];
}

export interface ListLinksOptions {
  readonly netns?: string | undefined;
}

export async function listLinks(opts: ListLinksOptions = {}): Promise<LinkInfo[]> {
  if (opts.netns === undefined) {
    try {
      return await listLinksNetlink();
    } catch {
      // Fall through to iproute2: same answer, one process more.
    }
  }
  const [links, addrs] = await Promise.all([
    run('ip', ['-j', '-d', 'link', 'show'], { netns: opts.netns }),
    run('ip', ['-j', 'addr', 'show'], { netns: opts.netns }),
  ]);
  return linksFromIpJson(links.stdout, addrs.stdout);
}

interface RawLink {
  readonly index: number;
  readonly name: string;
  readonly kind?: string | undefined;
  readonly masterIndex?: number | undefined;
}

/** Joins links (master by index) and addresses (by link index) into LinkInfo, sorted by index. */
function assemble(links: readonly RawLink[], addresses: ReadonlyMap<number, readonly string[]>): LinkInfo[] {
  const nameOf = new Map(links.map((l) => [l.index, l.name]));
  return [...links]
    .sort((a, b) => a.index - b.index)
    .map((l) => {
      const master = l.masterIndex !== undefined ? nameOf.get(l.masterIndex) : undefined;
      return {
        name: l.name,
        index: l.index,
        ...(l.kind !== undefined ? { kind: l.kind } : {}),
        ...(master !== undefined ? { master } : {}),
        addresses: addresses.get(l.index) ?? [],
      };
    });
}

async function listLinksNetlink(): Promise<LinkInfo[]> {
  // Imported lazily so a missing native binding is a fallback, not a crash at startup.
  const { createRtNetlink } = await import('netlink');
  const socket = createRtNetlink();
  try {
    const [links, addrs] = await Promise.all([socket.getLinks(), socket.getAddresses()]);
    const raw: RawLink[] = links.map((l) => ({
      index: l.data.index ?? 0,
      name: l.attrs.ifname ?? '',
      kind: l.attrs.linkinfo ? linkKindFromLinkinfo(l.attrs.linkinfo) : undefined,
      masterIndex: l.attrs.master,
    }));
    const byIndex = new Map<number, string[]>();
    for (const a of addrs) {
      // IFA_LOCAL is the local end on point-to-point links, where IFA_ADDRESS is the peer; IPv6 sends only IFA_ADDRESS.
      const bytes = a.attrs.local ?? a.attrs.address;
      if (bytes === undefined || a.data.index === undefined) continue;
      const list = byIndex.get(a.data.index) ?? [];
      list.push(ipFromBytes(bytes));
      byIndex.set(a.data.index, list);
    }
    return assemble(raw, byIndex);
  } finally {
    socket.socket.close();
  }
}

/** IFLA_LINKINFO is a nested attribute list; IFLA_INFO_KIND (type 1) holds the NUL-terminated kind. */
export function linkKindFromLinkinfo(buf: Uint8Array): string | undefined {
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let off = 0; off + 4 <= view.length;) {
    const len = view.readUInt16LE(off);
    const type = view.readUInt16LE(off + 2) & 0x3fff; // strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if (len < 4) return undefined;
    if (type === 1) return view.toString('utf8', off + 4, off + len).replace(/\0+$/, '');
    off += (len + 3) & ~3;
  }
  return undefined;
}

interface IpJsonLink {
  readonly ifindex: number;
  readonly ifname: string;
  readonly master?: string;
  readonly linkinfo?: { readonly info_kind?: string };
}
interface IpJsonAddr {
  readonly ifindex: number;
  readonly addr_info?: readonly { readonly local?: string }[];
}

/** Parses `ip -j -d link show` and `ip -j addr show` output. */
export function linksFromIpJson(linksJson: string, addrsJson: string): LinkInfo[] {
  const links = JSON.parse(linksJson) as IpJsonLink[];
  const addrs = JSON.parse(addrsJson) as IpJsonAddr[];
  const indexOf = new Map(links.map((l) => [l.ifname, l.ifindex]));
  const raw: RawLink[] = links.map((l) => ({
    index: l.ifindex,
    name: l.ifname,
    kind: l.linkinfo?.info_kind,
    masterIndex: l.master !== undefined ? indexOf.get(l.master) : undefined,
  }));
  const byIndex = new Map<number, string[]>(
    addrs.map((a) => [a.ifindex, (a.addr_info ?? []).flatMap((i) => (i.local !== undefined ? [i.local] : []))]),
  );
  return assemble(raw, byIndex);
}
