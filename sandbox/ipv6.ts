// The IPv6 half of a dual-stack sandbox, planned the way flannel plans it (EnableIPv6, IPv6Network,
// IPv6SubnetLen 64): one cluster prefix, a /64 per node out of it, the node's ::1 on cni0 as the pods'
// gateway, and pods numbered like their IPv4 twin (10.244.1.5 ↔ <node /64>::5), so a reader can pair them.

import { formatCidr, formatIp, parseCidr, type Cidr } from '../src/model/address.js';

export const DEFAULT_CLUSTER_CIDR6 = 'fd00:10:244::/56';
export const DEFAULT_UNDERLAY_CIDR6 = 'fd00:99::/64';

export interface Ipv6Plan {
  readonly clusterCidr: string;
  readonly underlayCidr: string;
}

export interface NodeIpv6 {
  /** The node's /64 (flannel's FLANNEL_IPV6_SUBNET network). */
  readonly podCidr: string;
  /** cni0's second address, the pods' IPv6 default gateway. */
  readonly gatewayIp: string;
  readonly underlayIp: string;
  readonly underlayPrefix: number;
}

function parseV6(text: string, what: string): Cidr {
  const parsed = parseCidr(text);
  if (!parsed.ok || parsed.cidr.family !== 6) throw new Error(`${what} "${text}" is not an IPv6 CIDR`);
  if (parsed.hadHostBits) throw new Error(`${what} "${text}" has host bits set`);
  return parsed.cidr;
}

/** Node `index` (0-based) gets the (index+1)th /64 of the cluster prefix and underlay address ::(index+1). */
export function planNodeIpv6(plan: Ipv6Plan, index: number): NodeIpv6 {
  const cluster = parseV6(plan.clusterCidr, 'IPv6 cluster CIDR');
  const underlay = parseV6(plan.underlayCidr, 'IPv6 underlay CIDR');
  if (cluster.prefix > 63) throw new Error(`IPv6 cluster CIDR ${plan.clusterCidr} leaves no room for a /64 per node`);
  if (index + 1 >= 2 ** (64 - cluster.prefix))
    throw new Error(`IPv6 cluster CIDR ${plan.clusterCidr} has no /64 left for node ${index + 1}`);
  const base = cluster.base + (BigInt(index + 1) << 64n);
  return {
    podCidr: formatCidr({ family: 6, base, prefix: 64 }),
    gatewayIp: formatIp(6, base + 1n),
    underlayIp: formatIp(6, underlay.base + BigInt(index + 1)),
    underlayPrefix: underlay.prefix,
  };
}

/** The pod's IPv6 address: the node's /64 with the IPv4 address's host part (host-local IPAM order). */
export function podIpv6(node: NodeIpv6, hostPart: number): string {
  return formatIp(6, parseV6(node.podCidr, 'node IPv6 pod CIDR').base + BigInt(hostPart));
}

/** An external client's IPv6 underlay address: counted down from the top of the underlay, away from the nodes' ::1, ::2, … */
export function externalIpv6(plan: Ipv6Plan, index: number): { readonly ip: string; readonly prefix: number } {
  const underlay = parseV6(plan.underlayCidr, 'IPv6 underlay CIDR');
  const top = underlay.base + (1n << BigInt(128 - underlay.prefix)) - 1n;
  return { ip: formatIp(6, top - 1n - BigInt(index)), prefix: underlay.prefix };
}
