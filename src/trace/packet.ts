// The packet a trace walks, and how its interfaces follow from the node's layout.

import type { L4Protocol, MatchProtocol } from '../model/index.js';
import { inAnyCidr, parseIp } from '../model/address.js';

/** The first packet of a flow as it enters the filter table's FORWARD chain. */
export interface Packet {
  readonly src: string;
  readonly dst: string;
  /** `icmp`: IPv4 ICMP, which no netfence rule names (only `-p ipv6-icmp` exists), so it matches no protocol rule. */
  readonly proto: MatchProtocol | 'icmp';
  /** 0 for ICMP and ICMPv6, which have no ports. */
  readonly dport: number;
  /** ICMP and ICMPv6: the message type and the hop limit (IPv4: TTL) it arrives with. */
  readonly icmp?: { readonly type: number; readonly hopLimit: number };
  readonly sport?: number;
  readonly inIface: string;
  readonly outIface: string;
  /** Bridge ports (veths) when br_netfilter hands a bridged frame to iptables. */
  readonly physIn?: string;
  readonly physOut?: string;
  /**
   * A trace is about new connections; replies are accepted by conntrack before any policy. Neighbour
   * discovery is never tracked (research upstream-behaviour §5.2: NS/NA cross FORWARD as UNTRACKED). An ICMP
   * message that can neither open a flow nor belong to one (an echo reply alone) is INVALID (icmp.ts).
   */
  readonly ctstate: 'NEW' | 'UNTRACKED' | 'INVALID';
  /** The packet mark on entry (default 0). */
  readonly mark?: number;
  /** The flow's conntrack mark (default 0: a new flow has none). */
  readonly ctmark?: number;
}

export interface NodeLayout {
  /** The CNI bridge local pods hang off (flannel: cni0). */
  readonly bridge: string;
  /** Where traffic to and from other nodes and the outside goes (default eth0). */
  readonly uplink: string;
  /** This node's pod CIDRs: an address in one is a local pod. */
  readonly podCidrs: readonly string[];
  /** Addresses known to be local pods even without a pod CIDR (e.g. read from the dispatch chains). */
  readonly localIps?: readonly string[];
}

export interface Flow {
  readonly src: string;
  readonly dst: string;
  readonly proto: L4Protocol;
  readonly dport: number;
  readonly sport?: number;
}

export function isLocal(ip: string, layout: NodeLayout): boolean {
  const addr = parseIp(ip);
  if (!addr) return false;
  return (
    inAnyCidr(addr, layout.podCidrs) || (layout.localIps !== undefined && localSet(layout.localIps).has(`${addr.family}:${addr.value}`))
  );
}

/** A layout's local addresses as a set, made once per list: `netfence map` walks thousands of packets through one node. */
const localSets = new WeakMap<readonly string[], ReadonlySet<string>>();

function localSet(ips: readonly string[]): ReadonlySet<string> {
  let set = localSets.get(ips);
  if (!set) {
    set = new Set(
      ips.flatMap((l) => {
        const a = parseIp(l);
        return a ? [`${a.family}:${a.value}`] : [];
      }),
    );
    localSets.set(ips, set);
  }
  return set;
}

/**
 * flannel's layout: a packet from a local pod enters FORWARD on the bridge, one to a local pod leaves
 * on it (same-node traffic is bridged and seen through br_netfilter with both); anything else uses the uplink.
 */
export function packetFor(flow: Flow, layout: NodeLayout): Packet {
  return {
    ...flow,
    inIface: isLocal(flow.src, layout) ? layout.bridge : layout.uplink,
    outIface: isLocal(flow.dst, layout) ? layout.bridge : layout.uplink,
    ctstate: 'NEW',
  };
}
