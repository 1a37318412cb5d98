// The cluster as netfence sees it: only the fields NetworkPolicy semantics depend on.
// Everything is readonly; sources (informers, manifest files) build new snapshots, nobody mutates one.

import type { Problem } from './problem.js';

export type Labels = Readonly<Record<string, string>>;

export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export type IpFamily = 4 | 6;

export interface Namespace {
  readonly name: string;
  readonly labels: Labels;
}

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol: Protocol;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface Pod {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Labels;
  /** Empty while the pod is unscheduled. */
  readonly nodeName: string;
  readonly hostNetwork: boolean;
  readonly phase: PodPhase;
  /** status.podIPs (or status.podIP), canonical text, v4 and/or v6. Empty until the CNI assigned one. */
  readonly ips: readonly string[];
  readonly ports: readonly ContainerPort[];
  /**
   * The pod's controller (its `ownerReferences` entry with `controller: true`), the Deployment for a
   * Deployment's ReplicaSet (convert.ts says how that is told). Nothing in policy depends on it: `netfence
   * map` groups pods by it. One object per owner, shared by its pods (cluster/intern.ts).
   */
  readonly owner?: PodOwner | undefined;
}

export interface PodOwner {
  /** `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`, `Job`, … */
  readonly kind: string;
  readonly name: string;
}

export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface SelectorRequirement {
  readonly key: string;
  readonly operator: SelectorOperator;
  readonly values: readonly string[];
}

/** metav1.LabelSelector. `{}` (no labels, no expressions) selects everything. */
export interface LabelSelector {
  readonly matchLabels: Labels;
  readonly matchExpressions: readonly SelectorRequirement[];
}

export interface IpBlock {
  readonly cidr: string;
  readonly except: readonly string[];
}

/** One entry of `from`/`to`. At least one field is set; validation reports the ones that are not. */
export interface PolicyPeer {
  readonly podSelector?: LabelSelector;
  readonly namespaceSelector?: LabelSelector;
  readonly ipBlock?: IpBlock;
}

export interface PolicyPort {
  readonly protocol: Protocol;
  /** Absent: all ports of the protocol. A string is a named port. */
  readonly port?: number | string;
  readonly endPort?: number;
}

export interface PolicyRule {
  /** `from` for ingress, `to` for egress. Absent or empty: every peer. */
  readonly peers?: readonly PolicyPeer[];
  /** Absent or empty: every port of every protocol. */
  readonly ports?: readonly PolicyPort[];
}

export type PolicyType = 'Ingress' | 'Egress';

export interface NetworkPolicy {
  readonly namespace: string;
  readonly name: string;
  readonly podSelector: LabelSelector;
  /** As written in the manifest; the compiler applies the API's defaulting. */
  readonly policyTypes?: readonly PolicyType[];
  readonly ingress?: readonly PolicyRule[];
  readonly egress?: readonly PolicyRule[];
  /**
   * metadata.creationTimestamp (RFC 3339, UTC, as the API server writes it). The node budget admits a
   * namespace's policies oldest first, so a new policy cannot take an older one's place. Absent in manifests: oldest.
   */
  readonly creationTimestamp?: string;
  /**
   * Annotation `netfence.io/mode: audit`: programmed but not enforced. Connections are decided as if the
   * policy did not exist; those it would change are flow-logged (docs/audit.md).
   */
  readonly audit?: boolean;
  /**
   * Problems found while loading (wrong types, unknown enum values). A policy with any is invalid:
   * the compiler isolates the pods it selects in its directions and allows nothing through it.
   */
  readonly problems?: readonly Problem[];
}

/** A Kubernetes Node: where pods live and which pod CIDRs it owns. */
export interface ClusterNode {
  readonly name: string;
  /** spec.podCIDRs (or spec.podCIDR). */
  readonly podCidrs: readonly string[];
  /** status.addresses (InternalIP/ExternalIP). */
  readonly addresses: readonly string[];
  /** metadata.labels (ClusterNetworkPolicy `nodes` peers select on them). Absent: none. */
  readonly labels?: Labels;
}

export const podKey = (p: { readonly namespace: string; readonly name: string }): string => `${p.namespace}/${p.name}`;
