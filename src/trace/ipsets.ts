// ipset membership as the kernel's `-m set --match-set` decides it, for the set types netfence creates.

import type { SetDirection } from '../model/index.js';
import type { SavedIpSet } from '../render/index.js';
import { containsIp, parseCidrOrHost, parseIp, type Cidr, type ParsedIp } from '../model/address.js';
import type { Packet } from './packet.js';

/** Sets by name, as `parseIpsetSave` returns them. */
export type IpSets = ReadonlyMap<string, SavedIpSet>;

export type SetAnswer = { readonly known: true; readonly member: boolean } | { readonly known: false; readonly why: string };

const member = (yes: boolean): SetAnswer => ({ known: true, member: yes });
const unknown = (why: string): SetAnswer => ({ known: false, why });

interface Entry {
  readonly element: string;
  readonly nomatch: boolean;
}

/** `10.0.0.0/24 nomatch`, `10.0.0.1 timeout 30`: the element, then flags and options. */
const entryOf = (text: string): Entry => {
  const [element = '', ...flags] = text.trim().split(/\s+/);
  return { element, nomatch: flags.includes('nomatch') };
};

export function setMatches(set: SavedIpSet, packet: Packet, direction: SetDirection): SetAnswer {
  const [ipDim = 'src', portDim] = direction.split(',') as ('src' | 'dst')[];
  const addr = parseIp(ipDim === 'src' ? packet.src : packet.dst);
  if (!addr) return unknown(`packet ${ipDim} is not an address`);
  // A set of the other family never matches (iptables refuses the rule; a v6 packet never meets a v4 set).
  if (set.family !== addr.family) return member(false);
  switch (set.type) {
    case 'hash:ip':
      return member(set.members.some((m) => containsEntry(entryOf(m).element, addr)));
    case 'hash:net':
      return member(longestPrefixMember(set.members.map(entryOf), addr));
    case 'hash:ip,port': {
      // One dimension given for a two-dimension set: the kernel refuses; we say we cannot tell.
      if (!portDim) return unknown(`${set.name} is hash:ip,port but the rule gives one direction`);
      const port = portDim === 'dst' ? packet.dport : packet.sport;
      if (port === undefined) return unknown('the packet has no source port');
      return member(set.members.some((m) => ipPortMatches(entryOf(m).element, addr, packet.proto, port)));
    }
    default:
      return unknown(`set type ${set.type} is not one netfence creates`);
  }
}

function containsEntry(element: string, addr: ParsedIp): boolean {
  const net = parseCidrOrHost(element);
  return net !== undefined && containsIp(net, addr.family, addr.value);
}

/**
 * hash:net: the most specific entry containing the address decides, and a `nomatch` entry makes the
 * test fail ("the element is a 'nomatch' exception of the set": ipset(8)); equal prefixes cannot both exist.
 */
function longestPrefixMember(entries: readonly Entry[], addr: ParsedIp): boolean {
  let best: { net: Cidr; nomatch: boolean } | undefined;
  for (const e of entries) {
    const net = parseCidrOrHost(e.element);
    if (!net || !containsIp(net, addr.family, addr.value)) continue;
    if (!best || net.prefix > best.net.prefix) best = { net, nomatch: e.nomatch };
  }
  return best !== undefined && !best.nomatch;
}

/** `10.244.1.20,tcp:80` (ipset save always names the protocol; a bare port means tcp). */
function ipPortMatches(element: string, addr: ParsedIp, proto: string, port: number): boolean {
  const comma = element.lastIndexOf(',');
  if (comma < 0) return false;
  const ip = parseIp(element.slice(0, comma));
  const portPart = element.slice(comma + 1);
  const [p, n] = portPart.includes(':') ? portPart.split(':') : ['tcp', portPart];
  if (!ip || ip.family !== addr.family || ip.value !== addr.value || p !== proto) return false;
  const [from, to = from] = (n ?? '').split('-').map(Number);
  return from !== undefined && to !== undefined && port >= from && port <= to;
}
