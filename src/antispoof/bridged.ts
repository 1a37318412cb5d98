// Pod-to-pod frames the bridge forwards between two of its ports, judged by port where no pod address
// explains them. iptables finds a packet's workload chains by pod address (compile/dispatch.ts), so a
// frame between two local pods whose destination is not a pod address (IPv6 link-local, broadcast,
// multicast) or whose source is not one (a link-local source) reaches nobody's policy and was accepted
// by the rest of FORWARD; IPv6 on a node where netfence programs no ip6tables was never judged at all; and
// a frame with a VLAN 0 (priority) tag never reaches iptables (br_netfilter skips tagged frames unless
// bridge-nf-filter-vlan-tagged is 1) while its receiver reads it as untagged.
//
// Here the bridge's `forward` hook, which names both ports, drops such a frame when the pod behind the
// receiving port is isolated for ingress, or the pod behind the sending port for egress ("isolated"
// meaning some enforced NetworkPolicy or some ClusterNetworkPolicy judges that direction: netfence's
// workload chain for it is not the plain "not isolated" one). A pod isolated for ingress then receives
// from its neighbours only IP traffic
// addressed to one of its own pod addresses (which its policies judge), and the link's neighbour
// discovery and MLD (model/link-icmpv6.ts, exactly what the IPv6 nf-FORWARD accepts). A pod no policy
// selects keeps everything: "By default, a pod is non-isolated … all inbound connections are allowed".
//
// The table never accepts for iptables: a verdict of `accept` in this hook only ends this chain, and
// iptables' FORWARD still judges what passes. It only drops.

import { LINK_ICMPV6 } from '../model/link-icmpv6.js';
import type { NftChain, NftMatch, NftRule } from '../render/nft-script.js';
import { addressKey, type AntiSpoofState, type PortBinding } from './model.js';

/** Whether a local pod is open (no policy judges it) in each direction, as last programmed. */
export interface PodOpenness {
  readonly ingress: boolean;
  readonly egress: boolean;
}

/** What the last sync programmed, as the bridge table needs it. */
export interface BridgedPolicing {
  /** Local pods' addresses (any spelling; compared by value) and their openness. */
  readonly pods: ReadonlyMap<string, PodOpenness>;
  /** Families netfence programs rules for: only their pod addresses can explain a frame. */
  readonly families: ReadonlySet<4 | 6>;
}

/**
 * Before the first sync nothing is known: every port is judged, and its own addresses of both families
 * are left to iptables (rules of a previous run, or the fail-closed unknown-pod drops).
 */
export const UNKNOWN_POLICING: BridgedPolicing = { pods: new Map(), families: new Set([4, 6]) };

export interface PortJudgement {
  readonly port: string;
  /** The pod is isolated in that direction (or not known): what no address of its own explains is dropped. */
  readonly judgeTo: boolean;
  readonly judgeFrom: boolean;
  /** The pod's addresses iptables judges, per family (empty for a family netfence does not program). */
  readonly ipv4: readonly string[];
  readonly ipv6: readonly string[];
}

/**
 * A port is open in a direction only when every address bound to it is a pod known open in that
 * direction; a port whose addresses name no programmed pod (not synced yet, or not a pod of this node)
 * is judged: fail closed.
 */
export function portJudgements(state: AntiSpoofState, policing: BridgedPolicing): PortJudgement[] {
  const byKey = new Map([...policing.pods].map(([ip, open]) => [addressKey(ip), open]));
  return state.bindings.map((b: PortBinding): PortJudgement => {
    const known = [...b.ipv4, ...b.ipv6].map((ip) => byKey.get(addressKey(ip)));
    const open = (d: keyof PodOpenness): boolean => known.length > 0 && known.every((k) => k?.[d] === true);
    return {
      port: b.port,
      judgeTo: !open('ingress'),
      judgeFrom: !open('egress'),
      ipv4: policing.families.has(4) ? b.ipv4 : [],
      ipv6: policing.families.has(6) ? b.ipv6 : [],
    };
  });
}

/** Comments the drop counters are read back by. */
export const bridgedDropComment = (side: 'to' | 'from', port?: string): string => `nf:bridged ${side} ${port ?? 'unknown-port'}`;

/** A counted, commented drop after `match` (the counter carried over from the table being replaced). */
export type Drop = (comment: string, ...match: NftMatch[]) => NftRule;

const accept = (...match: NftMatch[]): NftRule => ({ match, verdict: 'accept' });
const ret = (...match: NftMatch[]): NftRule => ({ match, verdict: 'return' });
const ether = (type: 'ip' | 'ip6' | 'arp'): NftMatch => ({ field: 'ether-type', value: type });

/** The ND/MLD allowance, rule for rule the IPv6 nf-FORWARD's (bridged frames keep their hop limit). */
function linkIcmpv6Accepts(): NftRule[] {
  return LINK_ICMPV6.map((m) =>
    accept(
      ether('ip6'),
      ...(m.sources ? [{ field: 'ip6-saddr', value: { set: m.sources } } as const] : []),
      { field: 'icmpv6-type', value: m.type },
      { field: 'ip6-hoplimit', value: m.hopLimit },
    ),
  );
}

/** One side's chain: to a port (by destination) or from it (by source). */
function sideChain(side: 'to' | 'from', ports: readonly PortJudgement[], drop: Drop): NftChain {
  const iface = side === 'to' ? 'oifname' : 'iifname';
  const judged = (p: PortJudgement) => (side === 'to' ? p.judgeTo : p.judgeFrom);
  const open = ports.filter((p) => !judged(p)).map((p) => p.port);
  return {
    name: `${side}-pods`,
    rules: [
      ...(open.length > 0 ? [ret({ field: iface, value: { set: open } })] : []),
      ...ports.filter(judged).flatMap((p) => [
        ...(p.ipv4.length > 0
          ? [
              ret({ field: iface, value: p.port }, ether('ip'), {
                field: side === 'to' ? 'ip-daddr' : 'ip-saddr',
                value: { set: p.ipv4 },
              }),
            ]
          : []),
        ...(p.ipv6.length > 0
          ? [
              ret({ field: iface, value: p.port }, ether('ip6'), {
                field: side === 'to' ? 'ip6-daddr' : 'ip6-saddr',
                value: { set: p.ipv6 },
              }),
            ]
          : []),
        drop(bridgedDropComment(side, p.port), { field: iface, value: p.port }),
      ]),
      // A veth port no CNI cache entry names yet (or created since this table was written): fail closed.
      drop(bridgedDropComment(side), { field: side === 'to' ? 'oifkind' : 'iifkind', value: 'veth' }),
    ],
  };
}

/**
 * The chains of the bridge `forward` hook (priority filter): only frames bridged between two ports
 * reach it, never traffic routed by the node (to or from other nodes, Services through the node's
 * address, the node itself).
 */
export function bridgedChains(state: AntiSpoofState, policing: BridgedPolicing, drop: Drop): NftChain[] {
  const ports = portJudgements(state, policing);
  const jump = (chain: string): NftRule => ({ match: [], verdict: { jump: chain } });
  return [
    sideChain('to', ports, drop),
    sideChain('from', ports, drop),
    {
      name: 'forward',
      hook: { hook: 'forward', priority: 'filter' },
      rules: [
        ...(state.otherPorts.length > 0 ? [accept({ field: 'iifname', value: { set: state.otherPorts } })] : []),
        // ARP is anti-spoofing's business. Any other frame (a VLAN-tagged one too: br_netfilter shows tagged
        // frames to no iptables, and a receiver reads a VLAN 0 priority tag as untagged) is judged below like IP.
        accept(ether('arp')),
        ...linkIcmpv6Accepts(),
        jump('to-pods'),
        jump('from-pods'),
      ],
    },
  ];
}
