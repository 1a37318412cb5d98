// The ICMPv6 an IPv6 link needs between neighbours, as data: the iptables ruleset (compile/icmpv6.ts) and
// the bridge table's judgement of bridged pod traffic (antispoof/bridged.ts) allow exactly these, so the
// two can never disagree on what neighbour discovery and MLD look like.

export interface LinkIcmpv6 {
  readonly type: number;
  readonly name: string;
  readonly hopLimit: 255 | 1;
  /** Source prefixes the receiver accepts; absent: any source. */
  readonly sources?: readonly string[];
}

const LINK_LOCAL = 'fe80::/10';
const UNSPECIFIED = '::/128';

/**
 * RFC 4861 §6.1.1 (RS), §6.1.2 (RA), §7.1.1 (NS), §7.1.2 (NA), §8.1 (Redirect): "The IP Hop Limit
 * field has a value of 255, i.e., the packet could not possibly have been forwarded by a router."
 * RA and Redirect add "IP Source Address is a link-local address"; RS and NS may come from the
 * unspecified address (an RS before any address; DAD's NS, RFC 4862 §5.4.2), NA from any own address.
 * RFC 2710 §3 / RFC 3810 §5: MLD messages are "sent with a link-local IPv6 Source Address, an IPv6 Hop
 * Limit of 1"; RFC 3810 §5.2.13 lets an MLDv2 Report come from the unspecified address "if the
 * sending interface has not acquired a valid link-local address yet" (RFC 3590 the same for MLDv1
 * Reports), and §5.1.14 has receivers discard a Query whose source "is not a valid IPv6 link-local address".
 */
export const LINK_ICMPV6: readonly LinkIcmpv6[] = [
  { type: 133, name: 'router solicitation', hopLimit: 255 },
  { type: 134, name: 'router advertisement', hopLimit: 255, sources: [LINK_LOCAL] },
  { type: 135, name: 'neighbour solicitation', hopLimit: 255 },
  { type: 136, name: 'neighbour advertisement', hopLimit: 255 },
  { type: 137, name: 'redirect', hopLimit: 255, sources: [LINK_LOCAL] },
  { type: 130, name: 'MLD query', hopLimit: 1, sources: [LINK_LOCAL] },
  { type: 131, name: 'MLDv1 report', hopLimit: 1, sources: [LINK_LOCAL, UNSPECIFIED] },
  { type: 132, name: 'MLDv1 done', hopLimit: 1, sources: [LINK_LOCAL] },
  { type: 143, name: 'MLDv2 report', hopLimit: 1, sources: [LINK_LOCAL, UNSPECIFIED] },
];
