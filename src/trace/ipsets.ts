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
  const trimmed = text.trim();
  // Most members are an element alone: split only what follows one.
  const space = trimmed.search(/\s/);
  if (space < 0) return { element: trimmed, nomatch: false };
  return {
    element: trimmed.slice(0, space),
    nomatch: trimmed
      .slice(space + 1)
      .split(/\s+/)
      .includes('nomatch'),
  };
};

interface Dimensions {
  readonly ip: 'src' | 'dst';
  readonly port?: 'src' | 'dst';
}

/** The directions netfence writes (`dst,dst`: the address and the port), read without splitting text for every packet. */
const DIMENSIONS: ReadonlyMap<string, Dimensions> = new Map<SetDirection, Dimensions>([
  ['src', { ip: 'src' }],
  ['dst', { ip: 'dst' }],
  ['src,src', { ip: 'src', port: 'src' }],
  ['dst,dst', { ip: 'dst', port: 'dst' }],
]);

/** Any other (a hand-written `dst,src`), as iptables reads it: one dimension per comma-separated word. */
function dimensionsOf(direction: string): Dimensions {
  const [ip = 'src', port] = direction.split(',') as ('src' | 'dst')[];
  return { ip, ...(port !== undefined ? { port } : {}) };
}

// The last two addresses parsed for packetAddress (a packet's source and destination).
let lastText: string | undefined;
let lastIp: ParsedIp | undefined;
let otherText: string | undefined;
let otherIp: ParsedIp | undefined;

/**
 * An address of a packet, parsed. A trace asks for its packet's source and destination at every set and CIDR
 * match it meets: the last two are kept in front of model/address.ts's cache of every address parsed.
 */
export function packetAddress(text: string): ParsedIp | undefined {
  if (text === lastText) return lastIp;
  if (text === otherText) return otherIp;
  otherText = lastText;
  otherIp = lastIp;
  lastText = text;
  lastIp = parseIp(text);
  return lastIp;
}

export function setMatches(set: SavedIpSet, packet: Packet, direction: SetDirection): SetAnswer {
  const { ip: ipDim, port: portDim } = DIMENSIONS.get(direction) ?? dimensionsOf(direction);
  const addr = packetAddress(ipDim === 'src' ? packet.src : packet.dst);
  if (!addr) return unknown(`packet ${ipDim} is not an address`);
  // A set of the other family never matches (iptables refuses the rule; a v6 packet never meets a v4 set).
  if (set.family !== addr.family) return member(false);
  switch (set.type) {
    case 'hash:ip': {
      const index = indexOf(set);
      return member(index.hosts.has(addr.value) || index.ranges.some((net) => containsIp(net, addr.family, addr.value)));
    }
    case 'hash:net':
      return member(longestPrefixMember(indexOf(set).nets, addr));
    case 'hash:ip,port': {
      // One dimension given for a two-dimension set: the kernel refuses; we say we cannot tell.
      if (!portDim) return unknown(`${set.name} is hash:ip,port but the rule gives one direction`);
      const port = portDim === 'dst' ? packet.dport : packet.sport;
      if (port === undefined) return unknown('the packet has no source port');
      return member((indexOf(set).ports.get(addr.value) ?? []).some((m) => ipPortMatches(m, addr, packet.proto, port)));
    }
    default:
      return unknown(`set type ${set.type} is not one netfence creates`);
  }
}

/**
 * A set's members read once (a map of thousands of packets asks the same sets again and again): plain
 * addresses by value, `hash:ip,port` elements by address, `hash:net` entries as parsed. Rebuilt when the
 * member list is another array or another length.
 */
interface SetIndex {
  readonly members: readonly string[];
  readonly length: number;
  readonly hosts: ReadonlySet<bigint>;
  readonly ports: ReadonlyMap<bigint, readonly string[]>;
  /** `hash:ip` members given as a range (`10.0.0.0/30` adds every address of it). */
  readonly ranges: readonly Cidr[];
  readonly nets: readonly ParsedEntry[];
}
interface ParsedEntry {
  readonly net: Cidr;
  readonly nomatch: boolean;
}
const indexes = new WeakMap<SavedIpSet, SetIndex>();

function indexOf(set: SavedIpSet): SetIndex {
  const known = indexes.get(set);
  if (known && known.members === set.members && known.length === set.members.length) return known;
  const hosts = new Set<bigint>();
  const ports = new Map<bigint, string[]>();
  const ranges: Cidr[] = [];
  const nets: ParsedEntry[] = [];
  for (let i = 0; i < set.members.length; i++) {
    const { element, nomatch } = entryOf(set.members[i]!);
    if (set.type === 'hash:net') {
      const net = parseCidrOrHost(element);
      if (net) nets.push({ net, nomatch });
      continue;
    }
    if (set.type === 'hash:ip,port') {
      const ip = parseIp(element.slice(0, Math.max(0, element.lastIndexOf(','))));
      if (!ip) continue;
      const list = ports.get(ip.value);
      if (list) list.push(element);
      else ports.set(ip.value, [element]);
    } else if (set.type === 'hash:ip' && element.includes('/')) {
      const net = parseCidrOrHost(element);
      if (net) ranges.push(net);
    } else if (set.type === 'hash:ip') {
      const ip = parseIp(element);
      if (ip) hosts.add(ip.value);
    }
  }
  const index = { members: set.members, length: set.members.length, hosts, ports, ranges, nets };
  indexes.set(set, index);
  return index;
}

/**
 * hash:net: the most specific entry containing the address decides, and a `nomatch` entry makes the
 * test fail ("the element is a 'nomatch' exception of the set": ipset(8)); equal prefixes cannot both exist.
 */
function longestPrefixMember(entries: readonly ParsedEntry[], addr: ParsedIp): boolean {
  let best: { net: Cidr; nomatch: boolean } | undefined;
  for (const e of entries) {
    const net = e.net;
    if (!containsIp(net, addr.family, addr.value)) continue;
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
