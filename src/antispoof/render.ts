// The anti-spoofing state as an `nft -f` script: one `bridge` family table, replaced whole in one
// transaction (the leading `table …` + `delete table …` make it exist, then drop it, so a script that
// fails leaves the previous table in place — nft applies a file atomically or not at all).
//
// Why an nft bridge table (research upstream-behaviour §4.1): a prerouting hook at priority -300 sees every
// frame entering a bridge port before conntrack, br_netfilter's iptables pass or the bridge's own
// forwarding and local delivery, so one place binds IPv4, IPv6 and ARP; a forged source never rides an
// existing conntrack entry; traffic to the node itself is covered too. iptables physdev rules stop IP
// spoofing but cannot see ARP, and ARP poisoning then black-holes the victim's traffic.
// The same table's forward hook judges bridged pod-to-pod frames that no pod address explains
// (bridged.ts); it is written whether anti-spoofing is on or not.

import type { NftCount } from '../dataplane/nft.js';
import { parseIp } from '../model/address.js';
import { bridgedChains, UNKNOWN_POLICING, type BridgedPolicing } from './bridged.js';
import { allowedSources, type AntiSpoofState, type PortBinding } from './model.js';

export const ANTISPOOF_TABLE = 'netfence';
/** The nft family the table lives in: the bridge hooks see frames (and ARP) before IP does. */
export const ANTISPOOF_FAMILY = 'bridge';

/** Comments the counters are read back by. */
export const dropComment = (kind: 'arp' | 'ipv4' | 'ipv6' | 'nd' | 'router' | 'other' | 'unknown-port', port?: string): string =>
  `nf:spoof ${kind}${port !== undefined ? ` ${port}` : ''}`;

const quote = (s: string): string => `"${s}"`;

/** Counts carried over from the table being replaced. */
export type CarriedCounts = ReadonlyMap<string, NftCount>;

/**
 * A counted, commented drop. A rewrite replaces the whole table, so the counts so far are written back
 * as the new counter's start (`counter packets N bytes M`): drops stay counted across pod churn and the
 * periodic re-assert rather than restarting from zero.
 */
function drop(comment: string, counts: CarriedCounts): string {
  const c = counts.get(comment);
  const counter = c && c.packets > 0 ? `counter packets ${c.packets} bytes ${c.bytes}` : 'counter';
  return `${counter} drop comment ${quote(comment)}`;
}

const set = (items: readonly string[]): string => `{ ${items.join(', ')} }`;
export const portChain = (port: string): string => `port-${port}`;

/** An IPv6 address as the 128-bit integer a raw payload match compares (nft 1.0.6 names no ND target field). */
const v6Integer = (ip: string): string => `0x${(parseIp(ip)?.value ?? 0n).toString(16).padStart(32, '0')}`;

/**
 * IPv6's ARP is ICMPv6 (RFC 4861): a Neighbour Advertisement speaks for the address in its *target*
 * field (bytes 8-23 of the ICMPv6 message, `@th,64,128`), whatever its source, so a pod may advertise
 * only its own addresses or a link-local one (which the CNI result does not name). A pod is never a
 * router of the pod network: Router Advertisements and Redirects from it would make it its
 * neighbours' default gateway or next hop, so they are dropped outright.
 */
function ndRules(b: PortBinding, counts: CarriedCounts): string[] {
  const own = b.ipv6.length > 0 ? ` @th,64,128 != ${set(b.ipv6.map(v6Integer))}` : '';
  return [
    `    ether type ip6 icmpv6 type { nd-router-advert, nd-redirect } ${drop(dropComment('router', b.port), counts)}`,
    `    ether type ip6 icmpv6 type nd-neighbor-advert${own} @th,64,16 & 0xffc0 != 0xfe80 ${drop(dropComment('nd', b.port), counts)}`,
  ];
}

function portRules(b: PortBinding, counts: CarriedCounts): string[] {
  const arp = allowedSources(b, 'arp');
  const v6 = [...allowedSources(b, 'ipv6'), 'fe80::/10'];
  return [
    `    ether type arp arp saddr ip ${set(arp)} accept`,
    ...(b.ipv4.length > 0 ? [`    ether type ip ip saddr ${set(b.ipv4)} accept`] : []),
    ...ndRules(b, counts),
    `    ether type ip6 ip6 saddr ${set(v6)} accept`,
    `    ether type arp ${drop(dropComment('arp', b.port), counts)}`,
    `    ether type ip ${drop(dropComment('ipv4', b.port), counts)}`,
    `    ether type ip6 ${drop(dropComment('ipv6', b.port), counts)}`,
    `    ${drop(dropComment('other', b.port), counts)}`,
  ];
}

/** What the table holds besides the port bindings. */
export interface TableOptions {
  /** The prerouting chain that binds each port to its pod's addresses (config `antiSpoofing`). */
  readonly antiSpoofing: boolean;
  /** Judging of bridged pod-to-pod frames no pod address explains (bridged.ts); always written. */
  readonly policing: BridgedPolicing;
}

const ANTI_SPOOFING_ONLY: TableOptions = { antiSpoofing: true, policing: UNKNOWN_POLICING };

/** The whole table. Frames entering ports of other bridges are not ours and pass untouched. */
export function renderAntiSpoof(
  state: AntiSpoofState,
  counts: CarriedCounts = new Map(),
  options: TableOptions = ANTI_SPOOFING_ONLY,
): string {
  const prerouting = [
    ...state.bindings.flatMap((b) => [`  chain ${portChain(b.port)} {`, ...portRules(b, counts), '  }']),
    '  chain prerouting {',
    '    type filter hook prerouting priority -300; policy accept;',
    // This kernel has no bridge meta expressions (`meta ibrname` is EOPNOTSUPP without
    // CONFIG_NFT_BRIDGE_META), so ports of other bridges are let through by name instead.
    ...(state.otherPorts.length > 0 ? [`    iifname ${set(state.otherPorts.map(quote))} accept`] : []),
    ...state.bindings.map((b) => `    iifname ${quote(b.port)} jump ${portChain(b.port)}`),
    // Fail closed: a veth port whose pod the cache has not named yet, including one created after this
    // table was written, sends nothing until the next rewrite names it.
    `    meta iifkind "veth" ${drop(dropComment('unknown-port'), counts)}`,
    '  }',
  ];
  const lines = [
    `table ${ANTISPOOF_FAMILY} ${ANTISPOOF_TABLE}`,
    `delete table ${ANTISPOOF_FAMILY} ${ANTISPOOF_TABLE}`,
    `table ${ANTISPOOF_FAMILY} ${ANTISPOOF_TABLE} {`,
    ...bridgedChains(state, options.policing, (comment) => drop(comment, counts)),
    ...(options.antiSpoofing ? prerouting : []),
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/** The table removed (cleanup, or anti-spoofing turned off): tolerant of a table that is not there. */
export const renderAntiSpoofDelete = (): string =>
  `table ${ANTISPOOF_FAMILY} ${ANTISPOOF_TABLE}\ndelete table ${ANTISPOOF_FAMILY} ${ANTISPOOF_TABLE}\n`;
