// The desired (and observed) kernel state: ipsets and filter-table chains, as structured values.
// Rendering to restore text happens in src/render/; nothing here knows about text formats.

import type { IpFamily } from './cluster.js';
import type { DnsLearningPlan } from './dns-egress.js';

export type ChainName = string & { readonly __brand: 'ChainName' };
export type IpSetName = string & { readonly __brand: 'IpSetName' };

/** iptables: XT_EXTENSION_MAXNAMELEN is 29 including the NUL (Felix MaxChainNameLength). */
export const MAX_CHAIN_NAME = 28;
/** ipset: IPSET_MAXNAMELEN is 32 including the NUL (Felix MaxIPSetNameLength). */
export const MAX_IPSET_NAME = 31;

const CHAIN_NAME_RE = /^[A-Za-z0-9_.:+-]+$/;
const IPSET_NAME_RE = /^[A-Za-z0-9_.:+-]+$/;

export function chainName(name: string): ChainName {
  if (name.length === 0 || name.length > MAX_CHAIN_NAME || !CHAIN_NAME_RE.test(name)) {
    throw new Error(`invalid chain name ${JSON.stringify(name)} (1-${MAX_CHAIN_NAME} chars of [A-Za-z0-9_.:+-])`);
  }
  return name as ChainName;
}

export function ipSetName(name: string): IpSetName {
  if (name.length === 0 || name.length > MAX_IPSET_NAME || !IPSET_NAME_RE.test(name)) {
    throw new Error(`invalid ipset name ${JSON.stringify(name)} (1-${MAX_IPSET_NAME} chars of [A-Za-z0-9_.:+-])`);
  }
  return name as IpSetName;
}

/** Chains the kernel owns; we only ever add our hook rules to these. */
export type KernelChainName = 'INPUT' | 'FORWARD' | 'OUTPUT';
export const KERNEL_CHAINS: readonly KernelChainName[] = ['INPUT', 'FORWARD', 'OUTPUT'];

export type IpSetType = 'hash:ip' | 'hash:net' | 'hash:ip,port';

export interface IpSet {
  readonly name: IpSetName;
  readonly type: IpSetType;
  readonly family: IpFamily;
  /**
   * Canonical member strings exactly as `ipset save` prints them, sorted:
   * `10.0.0.1`, `10.0.0.0/24` (hash:net omits /32), `10.0.0.1,tcp:80`, and `10.0.0.0/24 nomatch`.
   */
  readonly members: readonly string[];
  /** What the set stands for, for humans (diff, inspect). Not written to the kernel. */
  readonly description: string;
  /**
   * Rules match it with `! --match-set` (an ipBlock's excepts): a member narrows what they allow instead of
   * widening it, which decides on which side of a rule change its member changes go (plan.ts placeDeltas).
   */
  readonly negated?: true;
  /**
   * A set learned at run time (ClusterNetworkPolicy `domainNames`, model/dns-egress.ts): created with
   * `timeout <timeout> maxelem <maxelem> comment`, its members are the DNS agent's (each with its own
   * counting-down timeout and a provenance comment). The planner creates and destroys it, never diffs, flushes
   * or repairs its members (`members` is always empty).
   */
  readonly learned?: LearnedSetOptions;
}

export interface LearnedSetOptions {
  /** The set's default entry timeout in seconds (an entry added without one lives this long). */
  readonly timeout: number;
  readonly maxelem: number;
}

export type L4Protocol = 'tcp' | 'udp' | 'sctp';
/** What `-p` may say: a policy's L4 protocols, and ICMPv6 for the link-local allowance of the IPv6 ruleset. */
export type MatchProtocol = L4Protocol | 'ipv6-icmp';

export interface PortRange {
  readonly from: number;
  /** Equal to `from` for a single port. */
  readonly to: number;
}

/** `src`, `dst`, or the two-dimension flags of hash:ip,port sets. */
export type SetDirection = 'src' | 'dst' | 'src,src' | 'dst,dst';

export type ConntrackState = 'NEW' | 'ESTABLISHED' | 'RELATED' | 'INVALID' | 'UNTRACKED';

/** Every match netfence emits. The renderer, parser, hasher and tracer each handle all of them. */
export type Match =
  | { readonly kind: 'src-net'; readonly cidr: string; readonly negate?: boolean }
  | { readonly kind: 'dst-net'; readonly cidr: string; readonly negate?: boolean }
  | { readonly kind: 'in-iface'; readonly name: string; readonly negate?: boolean }
  | { readonly kind: 'out-iface'; readonly name: string; readonly negate?: boolean }
  | { readonly kind: 'protocol'; readonly protocol: MatchProtocol }
  /** `-m icmp6 --icmpv6-type N` (with `-p ipv6-icmp`): the link's own ICMPv6, always allowed (static-chains.ts). */
  | { readonly kind: 'icmpv6-type'; readonly type: number }
  /** `-m hl --hl-eq N`: ND travels with hop limit 255 and MLD with 1, so a routed packet can never pose as either. */
  | { readonly kind: 'hop-limit'; readonly value: number }
  | { readonly kind: 'dports'; readonly ports: readonly PortRange[] }
  /** `-m multiport --sports …`: DNS answers come from port 53. */
  | { readonly kind: 'sports'; readonly ports: readonly PortRange[] }
  | { readonly kind: 'set'; readonly set: IpSetName; readonly direction: SetDirection; readonly negate?: boolean }
  | { readonly kind: 'mark'; readonly value: number; readonly mask: number; readonly negate?: boolean }
  | { readonly kind: 'ctstate'; readonly states: readonly ConntrackState[] }
  /** `-m conntrack --ctdir ORIGINAL|REPLY`: which way of its flow the packet travels (a query, or its answer). */
  | { readonly kind: 'ctdir'; readonly direction: 'ORIGINAL' | 'REPLY' }
  | { readonly kind: 'physdev'; readonly in?: string; readonly out?: string; readonly isBridged?: boolean }
  /** `-m connmark --mark value/mask`: the flow's conntrack mark (strict mode's revoke bit). */
  | { readonly kind: 'connmark'; readonly value: number; readonly mask: number; readonly negate?: boolean }
  /**
   * `-m limit --limit N/sec --limit-burst B`: a token bucket per rule. Only in front of NFLOG, so a flood
   * of denied packets cannot flood the flow log; a packet over the rate simply skips the log rule.
   */
  | { readonly kind: 'limit'; readonly perSecond: number; readonly burst: number };

export type Action =
  | { readonly kind: 'accept' }
  | { readonly kind: 'drop' }
  | { readonly kind: 'reject' }
  | { readonly kind: 'return' }
  | { readonly kind: 'jump'; readonly target: ChainName }
  | { readonly kind: 'goto'; readonly target: ChainName }
  /** `-j MARK --set-xmark value/mask`: clears the mask bits, then xors value in. */
  | { readonly kind: 'set-mark'; readonly value: number; readonly mask: number }
  /**
   * `-j NFLOG --nflog-prefix P --nflog-group G`: hands a copy of the packet to the userspace reader of
   * netlink log group G and goes on to the next rule (not a verdict). The prefix names the drop, so the
   * reader can explain it (see compile/flow-log.ts).
   */
  | {
      readonly kind: 'nflog';
      readonly group: number;
      readonly prefix: string;
      /** `--nflog-threshold N`: queue at most N packets in the kernel before sending (1: each at once). */
      readonly threshold?: number;
    }
  /**
   * `-j NFQUEUE --queue-num Q --queue-bypass`: holds the packet for the userspace reader of queue Q, which
   * decides it (DNS answers, held until what they grant is programmed). With no reader bound the packet passes.
   */
  | { readonly kind: 'nfqueue'; readonly queue: number };

export interface Rule {
  readonly match: readonly Match[];
  readonly action: Action;
  /** Human text after the hash in the rule's comment (e.g. `ns/policy ingress[0]`). */
  readonly comment?: string;
}

/** What a chain is for, so tools can group and explain without parsing names. */
export type ChainRole =
  | { readonly kind: 'static' }
  | { readonly kind: 'dispatch'; readonly direction: 'from' | 'to' }
  | { readonly kind: 'workload'; readonly direction: 'ingress' | 'egress'; readonly pod: string; readonly ip: string }
  /** `audited`: the policy carries `netfence.io/mode: audit` (judged and logged, not enforced). */
  | { readonly kind: 'policy'; readonly direction: 'ingress' | 'egress'; readonly policy: string; readonly audited?: true }
  /** The dispatch tree of traffic from local pods to this node itself (INPUT; ClusterNetworkPolicy egress). */
  | { readonly kind: 'host-dispatch' }
  /** A local pod's chain for traffic to this node itself: its ClusterNetworkPolicy egress tiers. */
  | { readonly kind: 'host-workload'; readonly pod: string; readonly ip: string }
  /** A ClusterNetworkPolicy's chain (`policy` is its name). */
  | {
      readonly kind: 'cluster-policy';
      readonly direction: 'ingress' | 'egress';
      readonly policy: string;
      readonly tier: 'Admin' | 'Baseline';
      readonly priority: number;
      /** The CNP carries `netfence.io/mode: audit`. */
      readonly audited?: true;
      /** Audit mode's copy: its Deny sets the deny bit and returns instead of dropping. */
      readonly verdictOnly?: true;
    };

export interface Chain {
  readonly name: ChainName;
  readonly rules: readonly Rule[];
  readonly role: ChainRole;
}

/** A rule we place in a kernel chain. `position: 'insert'` keeps it at the top (re-asserted every sync). */
export interface Hook {
  readonly chain: KernelChainName;
  readonly rule: Rule;
  readonly position: 'insert' | 'append';
}

/** One address family's worth of filter-table state. */
export interface FamilyState {
  readonly family: IpFamily;
  readonly ipsets: readonly IpSet[];
  readonly chains: readonly Chain[];
  readonly hooks: readonly Hook[];
}

export interface DesiredState {
  readonly v4: FamilyState;
  readonly v6: FamilyState;
  /** What the DNS agent learns into which set (ClusterNetworkPolicy `domainNames`); absent when no rule asks. */
  readonly dns?: DnsLearningPlan;
}

export const emptyFamilyState = (family: IpFamily): FamilyState => ({ family, ipsets: [], chains: [], hooks: [] });
