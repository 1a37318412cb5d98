// ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2): cluster-wide rules in two tiers around
// NetworkPolicy. Only what the semantics depend on; converted from the API object in src/cluster/cnp-convert.ts.
//
// "Policy tiers are evaluated in this order: Admin, NetworkPolicy, Baseline." Within a tier, policies
// go by priority ("lower priority values have higher precedence"), rules by their written order.

import type { LabelSelector, Protocol } from './cluster.js';
import type { Problem } from './problem.js';

export type CnpTier = 'Admin' | 'Baseline';

export type CnpAction = 'Accept' | 'Deny' | 'Pass';

/** spec.subject: exactly one of namespaces | pods. Host-networked pods are never selected. */
export type CnpSubject =
  | { readonly kind: 'namespaces'; readonly namespaceSelector: LabelSelector }
  | { readonly kind: 'pods'; readonly namespaceSelector: LabelSelector; readonly podSelector: LabelSelector };

/**
 * One entry of `from` / `to`. `unknown`: a peer with no field this netfence understands ("the CRD is
 * newer than the implementation") or one it cannot read; the rule holding it fails closed.
 */
export type CnpPeer =
  | { readonly kind: 'namespaces'; readonly namespaceSelector: LabelSelector }
  | { readonly kind: 'pods'; readonly namespaceSelector: LabelSelector; readonly podSelector: LabelSelector }
  /** Egress only. v4 and/or v6 CIDRs as written (validated by the compiler). */
  | { readonly kind: 'networks'; readonly cidrs: readonly string[] }
  /** Egress only: the InternalIP/ExternalIP addresses of matching nodes. */
  | { readonly kind: 'nodes'; readonly nodeSelector: LabelSelector }
  /**
   * Egress only, Accept rules of the Admin tier only: the addresses DNS answers gave each subject pod for
   * names it queried that match an entry (exact, or `*.` and one or more labels). Entries as written, every
   * one valid (model/domain-name.ts); learned at run time (docs/dns-egress-design.md).
   */
  | { readonly kind: 'domainNames'; readonly names: readonly string[] }
  | { readonly kind: 'unknown'; readonly what: string };

export interface CnpPortRange {
  readonly from: number;
  /** Equal to `from` for a single port. */
  readonly to: number;
}

/** One entry of `protocols`. No `ports` on a protocol: every port of it. */
export type CnpProtocol =
  | { readonly kind: 'protocol'; readonly protocol: Protocol; readonly ports?: CnpPortRange }
  | { readonly kind: 'named'; readonly name: string }
  | { readonly kind: 'unknown'; readonly what: string };

export interface CnpRule {
  readonly name?: string;
  /** `undefined`: unreadable, treated as Deny (the closed reading). */
  readonly action?: CnpAction;
  readonly peers: readonly CnpPeer[];
  /** Absent or empty: all protocols and ports. */
  readonly protocols?: readonly CnpProtocol[];
}

export interface ClusterNetworkPolicy {
  readonly name: string;
  readonly tier: CnpTier;
  /** 0–1000, lower first; ties by name. */
  readonly priority: number;
  readonly subject: CnpSubject;
  readonly ingress: readonly CnpRule[];
  readonly egress: readonly CnpRule[];
  /** Annotation `netfence.io/mode: audit`: programmed but not enforced (docs/audit.md). */
  readonly audit?: boolean;
  /** Problems found while loading; the fields they are about were read the closed way. */
  readonly problems?: readonly Problem[];
}
