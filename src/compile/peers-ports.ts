// One NetworkPolicy rule's peers and ports, resolved into alternatives for one address family.
// A rule allows a packet iff some peer alternative AND some port alternative match.

import type { IpBlock, IpFamily, L4Protocol, PolicyPeer, PolicyPort, PortRange, Protocol } from '../model/index.js';
import { familyBits, formatCidr, parseCidr, subtract, type Cidr } from './cidr.js';
import type { ClusterState } from './cluster-state.js';

export type PeerAlt =
  | { readonly kind: 'any' }
  | { readonly kind: 'pods'; readonly key: string; readonly peer: PolicyPeer; readonly namespace: string }
  | { readonly kind: 'cidrs'; readonly key: string; readonly cidrs: readonly Cidr[] };

export type PortAlt =
  | { readonly kind: 'any' }
  | { readonly kind: 'protocol'; readonly protocol: L4Protocol }
  | { readonly kind: 'ranges'; readonly protocol: L4Protocol; readonly ranges: readonly PortRange[] }
  | { readonly kind: 'named'; readonly protocol: L4Protocol; readonly name: string };

const L4: Record<Protocol, L4Protocol> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

/** iptables' multiport takes at most 15 ports, a range counting as two. */
const MULTIPORT_SLOTS = 15;

export function resolvePeers(
  peers: readonly PolicyPeer[] | undefined,
  policyNamespace: string,
  family: IpFamily,
  state: Pick<ClusterState, 'peerKey'>,
): PeerAlt[] {
  // "If this field is empty or missing, this rule matches all sources (traffic not restricted by source)."
  if (!peers || peers.length === 0) return [{ kind: 'any' }];
  const alts: PeerAlt[] = [];
  for (const peer of peers) {
    if (peer.ipBlock) continue;
    alts.push({ kind: 'pods', key: state.peerKey(peer, policyNamespace), peer, namespace: policyNamespace });
  }
  const blocks = ipBlockAlt(peers, family);
  if (blocks) alts.push(blocks);
  return alts;
}

/**
 * Every ipBlock of the rule, each `cidr` minus its `except`s, unioned into one set of disjoint-or-nested
 * CIDRs. "IPBlock describes a particular CIDR ... that is allowed ... with the except entries excluded."
 * Matching pod IPs too: an ipBlock says nothing about pods, so pod addresses inside it match.
 */
export function ipBlockAlt(peers: readonly PolicyPeer[], family: IpFamily): PeerAlt | undefined {
  const pieces: Cidr[] = [];
  for (const peer of peers) {
    if (!peer.ipBlock) continue;
    // A loop, not push(...spread): a block may leave tens of thousands of pieces, past the argument limit.
    for (const piece of ipBlockPieces(peer.ipBlock, family)) pieces.push(piece);
  }
  if (pieces.length === 0) return undefined;
  // hash:net cannot hold a /0, and a /0 with no except means "any address of this family" anyway.
  if (pieces.some((c) => c.prefix === 0)) return { kind: 'any' };
  const unique = [...new Map(pieces.map((c) => [formatCidr(c), c])).values()];
  return { kind: 'cidrs', key: unique.map(formatCidr).sort().join(','), cidrs: unique };
}

// Validation counts a block's pieces and the chain compile uses them: subtract once per ipBlock object.
const piecesOf = new WeakMap<IpBlock, { 4?: readonly Cidr[]; 6?: readonly Cidr[] }>();

/**
 * Pieces past which a block is never compiled: validation refuses the policy first. Subtraction stops there,
 * so a hostile block costs no more than the largest one that is accepted.
 */
export const MAX_BLOCK_PIECES = 65_536;

/**
 * One ipBlock's `cidr` minus its `except`s in one family (empty when the cidr is of the other family or
 * unreadable). More than MAX_BLOCK_PIECES means "too many" (the list is then cut short).
 */
export function ipBlockPieces(block: IpBlock, family: IpFamily): readonly Cidr[] {
  let byFamily = piecesOf.get(block);
  if (!byFamily) piecesOf.set(block, (byFamily = {}));
  let pieces = byFamily[family];
  if (!pieces) {
    const parsed = parseCidr(block.cidr);
    const excepts: Cidr[] = [];
    if (parsed.ok && parsed.cidr.family === family) {
      for (const text of block.except) {
        const e = parseCidr(text);
        if (e.ok && e.cidr.family === family) excepts.push(e.cidr);
      }
    }
    pieces = byFamily[family] = parsed.ok && parsed.cidr.family === family ? subtract(parsed.cidr, excepts, MAX_BLOCK_PIECES) : [];
  }
  return pieces;
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
