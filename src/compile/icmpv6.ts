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
import { LINK_ICMPV6 } from '../model/link-icmpv6.js';

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
