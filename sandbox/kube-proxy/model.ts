// Services as the sandbox's kube-proxy stand-in sees them (the slice of Service + EndpointSlice that
// shapes kube-proxy's rules), and the per-node view each proxy mode renders from. Pure data.

import { createHash } from 'node:crypto';
import type { Protocol } from '../../src/model/index.js';

export type IpFamily = 4 | 6;

/** The family of an address literal. */
export const familyOf = (ip: string): IpFamily => (ip.includes(':') ? 6 : 4);

/** kube-proxy's `--proxy-mode`; IPVS is detected and refused by netfence, never emulated (no IP_VS here). */
export type KubeProxyMode = 'iptables' | 'nftables';

/** "Cluster" obscures the client source IP and may cause a second hop; "Local" preserves it (Service API). */
export type TrafficPolicy = 'Cluster' | 'Local';

export interface ServicePort {
  /** The port's name in the Service (`p80-tcp`). */
  readonly name: string;
  readonly protocol: Protocol;
  readonly port: number;
  readonly targetPort: number;
  /** Set for type NodePort: the port every node answers on. */
  readonly nodePort?: number;
}

export interface ServiceEndpoint {
  readonly ip: string;
  /** The node the endpoint runs on: decides "local endpoints" for externalTrafficPolicy Local. */
  readonly node: string;
}

export interface ServiceSpec {
  readonly namespace: string;
  readonly name: string;
  /** `spec.clusterIP`: the primary family's ClusterIP. */
  readonly clusterIp: string;
  /**
   * `spec.clusterIPs` of a dual-stack Service (ipFamilyPolicy PreferDualStack/RequireDualStack): one per
   * family in `ipFamilies` order, the first equal to `clusterIp`. Absent: single-stack, `[clusterIp]`.
   */
  readonly clusterIps?: readonly string[];
  readonly ports: readonly ServicePort[];
  /** Only meaningful with node ports. Default Cluster. */
  readonly externalTrafficPolicy?: TrafficPolicy;
  readonly endpoints: readonly ServiceEndpoint[];
}

/** What one node's kube-proxy knows about itself. */
export interface ProxyNode {
  readonly name: string;
  /** The family this proxier programs (kube-proxy runs one single-family proxier per family). */
  readonly family: IpFamily;
  /** kube-proxy's `--cluster-cidr`: sources outside it that reach a ClusterIP are masqueraded. */
  readonly clusterCidr: string;
  /** The apiserver's `--service-cluster-ip-range` (nftables mode drops traffic to unallocated ClusterIPs in it). */
  readonly serviceCidr: string;
  /** Addresses that accept NodePort traffic (`--nodeport-addresses`): the node's underlay address. */
  readonly nodeIps: readonly string[];
}

/** kube-proxy's masquerade bit (`--iptables-masquerade-bit=14`). */
export const MASQ_MARK = '0x4000';

/** `ns/svc:port`, as kube-proxy's comments name a service port. */
export const servicePortName = (svc: ServiceSpec, port: ServicePort): string => `${svc.namespace}/${svc.name}:${port.name}`;

/**
 * A short stable hash of the service port (and endpoint), upper-case base32 as kube-proxy's chain
 * names use; our own encoding, since only uniqueness and the shape matter here.
 */
export function chainHash(...parts: readonly string[]): string {
  const digest = createHash('sha256').update(parts.join('|')).digest();
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < 16) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= 16) break;
  }
  return out;
}

export const localEndpoints = (svc: ServiceSpec, node: ProxyNode): readonly ServiceEndpoint[] =>
  svc.endpoints.filter((e) => e.node === node.name);

export const trafficPolicyOf = (svc: ServiceSpec): TrafficPolicy => svc.externalTrafficPolicy ?? 'Cluster';

/**
 * What one family's proxier sees of a Service, as kube-proxy's dual-stack meta-proxier hands it over: the
 * ClusterIP of that family from `spec.clusterIPs` and only that family's endpoints (EndpointSlices carry
 * one addressType each). A Service without a ClusterIP of the family is not this proxier's: undefined.
 */
export function serviceForFamily(svc: ServiceSpec, family: IpFamily): ServiceSpec | undefined {
  const clusterIps = svc.clusterIps ?? [svc.clusterIp];
  if (clusterIps[0] !== svc.clusterIp)
    throw new Error(`service ${svc.namespace}/${svc.name}: clusterIPs[0] ${clusterIps[0]} is not clusterIP ${svc.clusterIp}`);
  const clusterIp = clusterIps.find((ip) => familyOf(ip) === family);
  if (clusterIp === undefined) return undefined;
  const { clusterIps: _all, ...rest } = svc;
  return { ...rest, clusterIp, endpoints: svc.endpoints.filter((e) => familyOf(e.ip) === family) };
}

/** Every Service this family's proxier programs. */
export const servicesForFamily = (services: readonly ServiceSpec[], family: IpFamily): ServiceSpec[] =>
  services.flatMap((svc) => serviceForFamily(svc, family) ?? []);

/** A host route's mask as iptables prints it: /32 or /128. */
export const hostMask = (family: IpFamily): string => (family === 6 ? '/128' : '/32');

/** `ip:port` for DNAT; IPv6 literals in brackets (net.JoinHostPort). */
export const joinHostPort = (ip: string, port: number): string => (familyOf(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`);
