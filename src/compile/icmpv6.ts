// The ICMPv6 an IPv6 link needs, allowed before any policy is judged (IPv6 ruleset only).
//
// Neighbour discovery is IPv6's ARP: without NS/NA no pod can reach another on the same bridge, and
// conntrack does not track it (research upstream-behaviour §5.2: NS/NA cross ip6tables FORWARD as UNTRACKED),
// so the ESTABLISHED/RELATED accepts never see it and an isolated workload chain would drop it.
// Each message is pinned to what its RFC makes receivers check, so nothing routed can pose as one:
// hop limit 255 for ND (a router decrements it, and ip6_forward does so before the FORWARD hook, so a
// routed packet is at most 254 here), hop limit 1 and a link-local source for MLD. The rules also sit
// on the bridge in both directions: only frames bridged between two local pods match.
// Everything else ICMPv6 (echo included) is judged by policy; errors about an allowed flow (packet too
// big, destination unreachable, time exceeded) are conntrack RELATED and pass the ESTABLISHED/RELATED
// accepts like their IPv4 counterparts.

import type { Rule } from '../model/index.js';

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

/** One ACCEPT per message (and per allowed source), on frames bridged between local pods. */
export function linkIcmpv6Rules(bridge: string): Rule[] {
  return linkRules(bridge, true, { kind: 'accept' }, 'always allowed on the link');
}

/**
 * The same messages from a local pod to this node itself (INPUT: the node is the pod's router and
 * neighbour, so its gateway address is solicited, and RS/MLD go to groups the node listens on). They
 * RETURN, never ACCEPT: netfence's INPUT chain only drops what a ClusterNetworkPolicy denies, and ND/MLD
 * is nobody's egress — a Deny of `::/0` must not cut a pod off its gateway. The kernel does not
 * decrement the hop limit of a packet it delivers locally, so the RFC's 255 / 1 still hold here.
 */
export function hostLinkIcmpv6Rules(bridge: string): Rule[] {
  return linkRules(bridge, false, { kind: 'return' }, 'from a local pod to this node, not judged by ClusterNetworkPolicy');
}

function linkRules(bridge: string, bridged: boolean, action: Rule['action'], why: string): Rule[] {
  return LINK_ICMPV6.flatMap((m) =>
    (m.sources ?? [undefined]).map((source): Rule => ({
      match: [
        ...(source !== undefined ? [{ kind: 'src-net', cidr: source } as const] : []),
        { kind: 'in-iface', name: bridge },
        ...(bridged ? [{ kind: 'out-iface', name: bridge } as const] : []),
        { kind: 'protocol', protocol: 'ipv6-icmp' },
        { kind: 'icmpv6-type', type: m.type },
        { kind: 'hop-limit', value: m.hopLimit },
      ],
      action,
      comment: `ICMPv6 ${m.name}, ${why}`,
    })),
  );
}
