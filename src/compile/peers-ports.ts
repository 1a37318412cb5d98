// One NetworkPolicy rule's peers and ports, resolved into alternatives for one address family.
// A rule allows a packet iff some peer alternative AND some port alternative match.

import type { IpBlock, IpFamily, L4Protocol, PolicyPeer, PolicyPort, PortRange, Protocol } from '../model/index.js';
import { contains, familyBits, formatCidr, parseCidr, type Cidr } from '../model/address.js';
import { peerKey } from './cluster-state.js';

export type PeerAlt =
  | { readonly kind: 'any' }
  | { readonly kind: 'pods'; readonly key: string; readonly peer: PolicyPeer; readonly namespace: string }
  | { readonly kind: 'cidrs'; readonly key: string; readonly cidrs: readonly Cidr[] }
  /**
   * ipBlocks that share the same excepts: in one of `cidrs` and in none of `excepts`. A `/0` among the
   * cidrs stands for the whole family (hash:net cannot hold it): then only the excepts are matched.
   */
  | {
      readonly kind: 'block';
      readonly key: string;
      readonly cidrs: readonly Cidr[];
      readonly cidrsKey: string;
      readonly excepts: readonly Cidr[];
      /** The excepts as set members (what their set holds), in `excepts` order. */
      readonly exceptMembers: readonly string[];
      readonly exceptsKey: string;
    };

export type PortAlt =
  | { readonly kind: 'any' }
  | { readonly kind: 'protocol'; readonly protocol: L4Protocol }
  | { readonly kind: 'ranges'; readonly protocol: L4Protocol; readonly ranges: readonly PortRange[] }
  | { readonly kind: 'named'; readonly protocol: L4Protocol; readonly name: string };

const L4: Record<Protocol, L4Protocol> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

/** iptables' multiport takes at most 15 ports, a range counting as two. */
const MULTIPORT_SLOTS = 15;

export function resolvePeers(peers: readonly PolicyPeer[] | undefined, policyNamespace: string, family: IpFamily): PeerAlt[] {
  // "If this field is empty or missing, this rule matches all sources (traffic not restricted by source)."
  if (!peers || peers.length === 0) return [{ kind: 'any' }];
  const alts: PeerAlt[] = [];
  for (const peer of peers) {
    if (peer.ipBlock) continue;
    alts.push({ kind: 'pods', key: peerKey(peer, policyNamespace), peer, namespace: policyNamespace });
  }
  alts.push(...ipBlockAlts(peers, family));
  return alts;
}

/**
 * The rule's ipBlocks in one family. "IPBlock describes a particular CIDR ... that is allowed ... with the
 * except entries excluded." Each block is matched as "in its cidr and not in its excepts", with the excepts
 * as a set of their own: members grow with what the policy says, never with cidr minus excepts (0.0.0.0/0
 * minus 10,000 /32s is ~320,000 CIDRs). Peers are OR-ed, so one block's excepts must not exclude what
 * another block allows: blocks without excepts share one set, blocks with the same excepts share one
 * alternative, and every other block is an alternative (an iptables rule) of its own.
 * Matching pod IPs too: an ipBlock says nothing about pods, so pod addresses inside it match.
 */
export function ipBlockAlts(peers: readonly PolicyPeer[], family: IpFamily): PeerAlt[] {
  const plain: Cidr[] = [];
  const byExcepts = new Map<string, { cidrs: Cidr[]; parts: BlockParts }>();
  for (const peer of peers) {
    if (!peer.ipBlock) continue;
    const block = ipBlockParts(peer.ipBlock, family);
    if (!block) continue;
    if (block.excepts.length === 0) plain.push(block.cidr);
    else {
      const group = byExcepts.get(block.exceptsKey);
      if (group) group.cidrs.push(block.cidr);
      else byExcepts.set(block.exceptsKey, { cidrs: [block.cidr], parts: block });
    }
  }
  // hash:net cannot hold a /0, and a /0 with no except means "any address of this family" anyway.
  if (plain.some((c) => c.prefix === 0)) return [{ kind: 'any' }];
  const alts: PeerAlt[] = [];
  if (plain.length > 0) {
    const cidrs = uniqueCidrs(plain);
    alts.push({ kind: 'cidrs', key: cidrsKeyOf(cidrs), cidrs });
  }
  for (const [exceptsKey, group] of [...byExcepts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const whole = group.cidrs.find((c) => c.prefix === 0);
    const cidrs = whole ? [whole] : uniqueCidrs(group.cidrs);
    const cidrsKey = cidrsKeyOf(cidrs);
    const { excepts, exceptMembers } = group.parts;
    alts.push({ kind: 'block', key: `${cidrsKey} except ${exceptsKey}`, cidrs, cidrsKey, excepts, exceptMembers, exceptsKey });
  }
  return alts;
}

const uniqueCidrs = (cidrs: readonly Cidr[]): Cidr[] => [...new Map(cidrs.map((c) => [formatCidr(c), c])).values()];
const cidrsKeyOf = (cidrs: readonly Cidr[]): string => cidrs.map(formatCidr).sort().join(',');

/** One ipBlock in one family: its cidr, and its excepts that lie inside it (sorted, each once). */
interface BlockParts {
  readonly cidr: Cidr;
  readonly excepts: readonly Cidr[];
  readonly exceptMembers: readonly string[];
  /** The excepts as set members, comma-joined: what names their set. */
  readonly exceptsKey: string;
}

// Validation counts a block's members and every compile of the policy's chains uses them: parse once per ipBlock object.
const partsOf = new WeakMap<IpBlock, { 4?: BlockParts | null; 6?: BlockParts | null }>();

/**
 * One ipBlock's cidr and excepts in one family; undefined when the cidr is of the other family or unreadable,
 * or when an except covers the whole cidr (the block then allows nothing). An except outside the cidr is
 * left out (validation reports it, and the policy fails closed).
 */
export function ipBlockParts(block: IpBlock, family: IpFamily): BlockParts | undefined {
  let byFamily = partsOf.get(block);
  if (!byFamily) partsOf.set(block, (byFamily = {}));
  let parts = byFamily[family];
  if (parts === undefined) {
    parts = byFamily[family] = readBlock(block, family) ?? null;
  }
  return parts ?? undefined;
}

function readBlock(block: IpBlock, family: IpFamily): BlockParts | undefined {
  const parsed = parseCidr(block.cidr);
  if (!parsed.ok || parsed.cidr.family !== family) return undefined;
  const cidr = parsed.cidr;
  const inside = new Map<string, Cidr>();
  for (const text of block.except) {
    const e = parseCidr(text);
    if (!e.ok || !contains(cidr, e.cidr)) continue;
    if (e.cidr.prefix === cidr.prefix) return undefined;
    inside.set(cidrMember(e.cidr), e.cidr);
  }
  const sorted = [...inside].sort(([, a], [, b]) => (a.base < b.base ? -1 : a.base > b.base ? 1 : a.prefix - b.prefix));
  const exceptMembers = sorted.map(([member]) => member);
  return { cidr, excepts: sorted.map(([, c]) => c), exceptMembers, exceptsKey: exceptMembers.join(',') };
}

/** Set members one ipBlock writes in both families: its cidr and its excepts. */
export function blockMembers(block: IpBlock): number {
  const parts = ipBlockParts(block, 4) ?? ipBlockParts(block, 6);
  return parts ? 1 + parts.excepts.length : 0;
}

/** Set member text of a CIDR as `ipset save` prints it for hash:net (a full-length prefix prints bare). */
export const cidrMember = (c: Cidr): string => (c.prefix === familyBits(c.family) ? formatCidr(c).split('/')[0]! : formatCidr(c));

export function resolvePorts(ports: readonly PolicyPort[] | undefined): PortAlt[] {
  // "If this field is empty or missing, this rule matches all ports (traffic not restricted by port)."
  if (!ports || ports.length === 0) return [{ kind: 'any' }];
  const allPorts = new Set<L4Protocol>();
  const ranges = new Map<L4Protocol, PortRange[]>();
  const named: PortAlt[] = [];
  for (const p of ports) {
    const protocol = L4[p.protocol];
    if (p.port === undefined) allPorts.add(protocol);
    else if (typeof p.port === 'string') named.push({ kind: 'named', protocol, name: p.port });
    else ranges.set(protocol, [...(ranges.get(protocol) ?? []), { from: p.port, to: p.endPort ?? p.port }]);
  }
  const alts: PortAlt[] = [];
  for (const protocol of ['tcp', 'udp', 'sctp'] as const) {
    if (allPorts.has(protocol)) alts.push({ kind: 'protocol', protocol });
    else
      for (const chunk of chunkForMultiport(mergeRanges(ranges.get(protocol) ?? [])))
        alts.push({ kind: 'ranges', protocol, ranges: chunk });
  }
  const seen = new Set<string>();
  for (const n of named) {
    if (n.kind !== 'named' || allPorts.has(n.protocol) || seen.has(`${n.protocol}/${n.name}`)) continue;
    seen.add(`${n.protocol}/${n.name}`);
    alts.push(n);
  }
  return alts;
}

function mergeRanges(ranges: readonly PortRange[]): PortRange[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from || a.to - b.to);
  const out: PortRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.from <= last.to + 1) out[out.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
    else out.push(r);
  }
  return out;
}

function chunkForMultiport(ranges: readonly PortRange[]): PortRange[][] {
  const chunks: PortRange[][] = [];
  let current: PortRange[] = [];
  let slots = 0;
  for (const r of ranges) {
    const cost = r.from === r.to ? 1 : 2;
    if (slots + cost > MULTIPORT_SLOTS) {
      chunks.push(current);
      current = [];
      slots = 0;
    }
    current.push(r);
    slots += cost;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
