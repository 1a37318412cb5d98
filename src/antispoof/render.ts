// The anti-spoofing state as an nft table (typed data, written by render/nft-script.ts): one `bridge` family
// table, replaced whole in one transaction.
//
// Why an nft bridge table (research upstream-behaviour §4.1): a prerouting hook at priority -300 sees every
// frame entering a bridge port before conntrack, br_netfilter's iptables pass or the bridge's own
// forwarding and local delivery, so one place binds IPv4, IPv6 and ARP; a forged source never rides an
// existing conntrack entry; traffic to the node itself is covered too. iptables physdev rules stop IP
// spoofing but cannot see ARP, and ARP poisoning then black-holes the victim's traffic.
// The same table's forward hook judges bridged pod-to-pod frames that no pod address explains
// (bridged.ts); it is written whether anti-spoofing is on or not.

import type { NftCount } from '../dataplane/nft.js';
import { renderNftTable, renderNftTableDelete, type NftChain, type NftMatch, type NftRule } from '../render/nft-script.js';
import { bridgedChains, UNKNOWN_POLICING, type BridgedPolicing, type Drop } from './bridged.js';
import { allowedSources, type AntiSpoofState, type PortBinding } from './model.js';

export const ANTISPOOF_TABLE = 'netfence';
/** The nft family the table lives in: the bridge hooks see frames (and ARP) before IP does. */
export const ANTISPOOF_FAMILY = 'bridge';

/** Comments the counters are read back by. */
export const dropComment = (kind: 'arp' | 'ipv4' | 'ipv6' | 'nd' | 'router' | 'other' | 'unknown-port', port?: string): string =>
  `nf:spoof ${kind}${port !== undefined ? ` ${port}` : ''}`;

/** Counts carried over from the table being replaced. */
export type CarriedCounts = ReadonlyMap<string, NftCount>;

/**
 * A rewrite replaces the whole table, so each drop's counts so far are written back as the new counter's start:
 * drops stay counted across pod churn and the periodic re-assert rather than restarting from zero.
 */
const dropWith =
  (counts: CarriedCounts): Drop =>
  (comment, ...match) => ({ match, counter: counts.get(comment) ?? { packets: 0, bytes: 0 }, verdict: 'drop', comment });

export const portChain = (port: string): string => `port-${port}`;

const ether = (type: 'ip' | 'ip6' | 'arp'): NftMatch => ({ field: 'ether-type', value: type });
const set = (items: readonly string[]): { readonly set: readonly string[] } => ({ set: items });

/**
 * IPv6's ARP is ICMPv6 (RFC 4861): a Neighbour Advertisement speaks for the address in its *target*
 * field (bytes 8-23 of the ICMPv6 message), whatever its source, so a pod may advertise
 * only its own addresses or a link-local one (which the CNI result does not name). A pod is never a
 * router of the pod network: Router Advertisements and Redirects from it would make it its
 * neighbours' default gateway or next hop, so they are dropped outright.
 */
function ndRules(b: PortBinding, drop: Drop): NftRule[] {
  const own: NftMatch[] = b.ipv6.length > 0 ? [{ field: 'nd-target', negate: true, value: set(b.ipv6) }] : [];
  return [
    drop(dropComment('router', b.port), ether('ip6'), { field: 'icmpv6-type', value: set(['nd-router-advert', 'nd-redirect']) }),
    drop(dropComment('nd', b.port), ether('ip6'), { field: 'icmpv6-type', value: 'nd-neighbor-advert' }, ...own, {
      field: 'nd-target-prefix',
      negate: true,
      value: 0xfe80,
    }),
  ];
}

function portRules(b: PortBinding, drop: Drop): NftRule[] {
  const accept = (...match: NftMatch[]): NftRule => ({ match, verdict: 'accept' });
  return [
    accept(ether('arp'), { field: 'arp-sender-ip', value: set(allowedSources(b, 'arp')) }),
    ...(b.ipv4.length > 0 ? [accept(ether('ip'), { field: 'ip-saddr', value: set(b.ipv4) })] : []),
    ...ndRules(b, drop),
    accept(ether('ip6'), { field: 'ip6-saddr', value: set([...allowedSources(b, 'ipv6'), 'fe80::/10']) }),
    drop(dropComment('arp', b.port), ether('arp')),
    drop(dropComment('ipv4', b.port), ether('ip')),
    drop(dropComment('ipv6', b.port), ether('ip6')),
    drop(dropComment('other', b.port)),
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
  const drop = dropWith(counts);
  const prerouting: NftChain[] = [
    ...state.bindings.map((b): NftChain => ({ name: portChain(b.port), rules: portRules(b, drop) })),
    {
      name: 'prerouting',
      hook: { hook: 'prerouting', priority: -300 },
      rules: [
        // This kernel has no bridge meta expressions (`meta ibrname` is EOPNOTSUPP without
        // CONFIG_NFT_BRIDGE_META), so ports of other bridges are let through by name instead.
        ...(state.otherPorts.length > 0
          ? [{ match: [{ field: 'iifname', value: set(state.otherPorts) }], verdict: 'accept' } as const]
          : []),
        ...state.bindings.map((b): NftRule => ({ match: [{ field: 'iifname', value: b.port }], verdict: { jump: portChain(b.port) } })),
        // Fail closed: a veth port whose pod the cache has not named yet, including one created after this
        // table was written, sends nothing until the next rewrite names it.
        drop(dropComment('unknown-port'), { field: 'iifkind', value: 'veth' }),
      ],
    },
  ];
  return renderNftTable({
    family: ANTISPOOF_FAMILY,
    name: ANTISPOOF_TABLE,
    chains: [...bridgedChains(state, options.policing, drop), ...(options.antiSpoofing ? prerouting : [])],
  });
}

/** The table removed (cleanup, or anti-spoofing turned off): tolerant of a table that is not there. */
export const renderAntiSpoofDelete = (): string => renderNftTableDelete(ANTISPOOF_FAMILY, ANTISPOOF_TABLE);
