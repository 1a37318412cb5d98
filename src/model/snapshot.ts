// A snapshot of the cluster: every object kind the compiler reads, from one source at one moment. It joins the
// NetworkPolicy objects (cluster.ts) and the ClusterNetworkPolicy objects (cluster-policy.ts), which is why it
// lives beside them rather than in either (neither imports the other).

import type { ClusterNode, Namespace, NetworkPolicy, Pod } from './cluster.js';
import type { ClusterNetworkPolicy } from './cluster-policy.js';

export interface ClusterSnapshot {
  readonly nodes: readonly ClusterNode[];
  readonly namespaces: readonly Namespace[];
  readonly pods: readonly Pod[];
  readonly policies: readonly NetworkPolicy[];
  /** ClusterNetworkPolicies (policy.networking.k8s.io/v1alpha2). Absent: none (the CRD may not be installed). */
  readonly clusterPolicies?: readonly ClusterNetworkPolicy[];
  /**
   * How this snapshot differs from an earlier one of the same source, for a consumer that keeps state between
   * snapshots (the incremental compiler): it then never walks the whole pod or policy list for a one-object
   * change. Absent: compare whole lists.
   */
  readonly changes?: SnapshotChanges;
}

export interface SnapshotChanges {
  /** What differs from `earlier`; undefined when this snapshot cannot tell (another source, or too long ago). */
  since(earlier: ClusterSnapshot): SnapshotDelta | undefined;
}

/**
 * Pods and NetworkPolicies by `ns/name` key that may differ between two snapshots: each with its value in
 * the later one (undefined: not in it). A key may be listed with the value it already had (changed and changed back).
 */
export interface SnapshotDelta {
  readonly pods: ReadonlyMap<string, Pod | undefined>;
  readonly policies: ReadonlyMap<string, NetworkPolicy | undefined>;
}

export const emptySnapshot: ClusterSnapshot = { nodes: [], namespaces: [], pods: [], policies: [] };
