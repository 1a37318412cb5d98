// Settings of the node being programmed: everything the compiler needs besides the cluster snapshot.

import { defaultDnsLearningSettings, type DnsLearningSettings } from './dns-egress.js';
import { DEFAULT_FLOW_LOG, type FlowLogSettings } from './flow-log.js';

export type UnknownPodPolicy = 'fail-closed' | 'fail-open';

export interface MarkBits {
  /** Set by a policy chain when it allows the packet. */
  readonly accept: number;
  /** Set by a ClusterNetworkPolicy `Pass` rule: skip the rest of the tier. */
  readonly pass: number;
  /** Scratch bit: reserved for multi-rule boolean blocks. */
  readonly scratch0: number;
  /** All bits netfence owns; cleared on entry to nf-FORWARD. */
  readonly all: number;
}

export interface NodeSettings {
  readonly nodeName: string;
  /** The CNI bridge pods hang off (flannel: cni0). */
  readonly bridge: string;
  /** This node's pod CIDRs (spec.podCIDRs / flannel subnet.env), any family. */
  readonly podCidrs: readonly string[];
  readonly unknownPods: UnknownPodPolicy;
  /** Chain name prefix, e.g. `nf-`. */
  readonly chainPrefix: string;
  /** ipset name prefix, e.g. `nf` (sets are `nf4s:…`, `nf6n:…`). */
  readonly ipsetPrefix: string;
  readonly marks: MarkBits;
  /**
   * Strict mode (revokeEstablished): the conntrack-mark bit that revokes a flow. When set, nf-FORWARD
   * drops packets of flows carrying it before any ESTABLISHED accept. Absent: strict mode is off.
   */
  readonly revokeMark?: number;
  /** NFLOG before every drop of a new connection; absent: no flow-log rules. */
  readonly flowLog?: FlowLogSettings | undefined;
  /** What NetworkPolicies may make this node program in all (compile/budget.ts); absent: no node-wide limit. */
  readonly budget?: NodeBudget | undefined;
  /** Egress by DNS name (ClusterNetworkPolicy `domainNames`); absent: defaultDnsLearningSettings. */
  readonly dnsEgress?: DnsLearningSettings | undefined;
}

/**
 * Sized for the DaemonSet's 512 MiB memory limit: a 50,000-pod cluster's daemon peaks near 290 MiB, a set
 * member costs up to ~0.9 KiB of RSS and a rule up to ~16 KiB while it is planned (BENCHMARKS.md,
 * "ipBlock excepts and the node budget"). The generated 5,000-policy cluster uses 599 rules and 10 ipBlock
 * members on a node.
 */
export const DEFAULT_NODE_BUDGET: NodeBudget = { setMembers: 100_000, rules: 5_000 };

/**
 * Node-wide limits on what NetworkPolicies write, so that no namespace can exhaust the node agent's memory.
 * Shared fairly between namespaces (compile/budget.ts); within its share a namespace's policies are admitted
 * oldest first; one that would cross a limit fails closed.
 */
export interface NodeBudget {
  /** ipBlock set members (cidrs and excepts as written), counted once per distinct set. */
  readonly setMembers: number;
  /** iptables rules of NetworkPolicy chains. */
  readonly rules: number;
}

/** Away from kube-proxy's 0x4000/0x8000; the same layout Felix uses under its 0xffff0000 mask. */
export const DEFAULT_MARKS: MarkBits = { accept: 0x10000, pass: 0x20000, scratch0: 0x40000, all: 0xf0000 };

export const defaultNodeSettings = (nodeName: string, podCidrs: readonly string[] = []): NodeSettings => ({
  nodeName,
  bridge: 'cni0',
  podCidrs,
  // Fail closed: a pod the daemon has not programmed yet may be one a policy isolates, and letting
  // its first packets through would be exactly the "window where traffic is wrongly allowed" we promise
  // never to open. The cost is that a brand-new pod's first packets wait for one sync (tens of ms).
  unknownPods: 'fail-closed',
  chainPrefix: 'nf-',
  ipsetPrefix: 'nf',
  marks: DEFAULT_MARKS,
  flowLog: DEFAULT_FLOW_LOG,
  budget: DEFAULT_NODE_BUDGET,
  dnsEgress: defaultDnsLearningSettings,
});
