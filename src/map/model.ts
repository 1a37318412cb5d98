// What `netfence map` answers: groups of pods the compiled rules cannot tell apart (and the outside world cut
// into the address blocks the rules name), and the connections allowed between them, per protocol and port.

import type { IpFamily, L4Protocol } from '../model/index.js';

export const PROTOCOLS: readonly L4Protocol[] = ['tcp', 'udp', 'sctp'];

/** An inclusive range of destination ports of one protocol. */
export interface PortRange {
  readonly proto: L4Protocol;
  readonly from: number;
  readonly to: number;
}

export interface MapGroup {
  /** `shop/web`, `shop/web#2` when a workload splits, `world:0` for an outside block. */
  readonly id: string;
  readonly kind: 'pods' | 'outside';
  readonly namespace?: string;
  /** The workload the pods were grouped by (their owner, label set, or one label's value). */
  readonly workload: string;
  /** The pods' controller, when they were grouped by it (`Deployment web`). */
  readonly owner?: { readonly kind: string; readonly name: string };
  readonly labels?: Readonly<Record<string, string>>;
  readonly pods: readonly string[];
  /** Outside blocks: `0.0.0.0/0 except 10.0.0.0/8`. */
  readonly cidrs?: readonly string[];
  /** A ClusterNetworkPolicy `domainNames` peer: what a lookup of these names answered (domains.ts). */
  readonly domainNames?: readonly string[];
  /** `open`: no policy judges this direction of these pods, so everything is allowed there. */
  readonly egress: 'open' | 'policed';
  readonly ingress: 'open' | 'policed';
  /** The policies whose chains judge each direction (`ns/name`, `ClusterNetworkPolicy name`). */
  readonly policies: { readonly egress: readonly string[]; readonly ingress: readonly string[] };
}

/** What decided one port range of an edge, in each direction: `NetworkPolicy shop/db rule ingress:0`, `not isolated`. */
export interface EdgeReason {
  readonly ports: readonly PortRange[];
  readonly egress: string;
  readonly ingress: string;
}

export interface MapEdge {
  readonly from: string;
  readonly to: string;
  readonly ports: readonly PortRange[];
  readonly because: readonly EdgeReason[];
  /** `netfence why` for one port of each reason (filled for the HTML page). */
  readonly why?: readonly string[];
}

/** A workload whose pods the rules treat differently: drawn as several groups. */
export interface Split {
  readonly workload: string;
  readonly groups: readonly string[];
  readonly why: string;
}

export interface ConnectivityMap {
  readonly family: IpFamily;
  readonly groups: readonly MapGroup[];
  /**
   * Every allowed connection except those between a group whose egress is open and one whose ingress is
   * open: those are allowed on every port and not listed one by one (`openToOpen`).
   */
  readonly edges: readonly MapEdge[];
  readonly openToOpen: true;
  readonly splits: readonly Split[];
  /** Pods left out (host network, no address of the family, not running), with why. */
  readonly skipped: readonly string[];
}

/** Whether the map allows `from` → `to` (group ids) on one port: a listed edge, or open egress to open ingress. */
export function mapAllows(map: ConnectivityMap, from: string, to: string, proto: L4Protocol, port: number): boolean {
  const edge = map.edges.find((e) => e.from === from && e.to === to);
  if (edge) return edge.ports.some((r) => r.proto === proto && port >= r.from && port <= r.to);
  const src = map.groups.find((g) => g.id === from);
  const dst = map.groups.find((g) => g.id === to);
  return (
    src !== undefined &&
    dst !== undefined &&
    src.egress === 'open' &&
    dst.ingress === 'open' &&
    !(src.kind === 'outside' && dst.kind === 'outside')
  );
}

/** The group a pod (`ns/name`) is drawn in. */
export const groupOfPod = (map: ConnectivityMap, pod: string): MapGroup | undefined => map.groups.find((g) => g.pods.includes(pod));
