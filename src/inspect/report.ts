// The report `inspect` gives: plain, JSON-able views of the pods, workloads, policies, rules and sets the
// ruleset holds, and the problems found in it (model.ts builds it).

import type { Direction } from '../trace/index.js';

export interface RuleRef {
  readonly chain: string;
  /** 1-based, as `iptables -L --line-numbers` counts. */
  readonly ruleIndex: number;
  readonly text: string;
}

export interface SetView {
  readonly set: string;
  /** `src`, `dst`, `dst,dst`. */
  readonly direction: string;
  /** Absent when the set is not in the ipset dump. */
  readonly type?: string;
  readonly members: number;
  /** The first few members, as ipset prints them. */
  readonly sample: readonly string[];
}

export type PeerView =
  | { readonly kind: 'any' }
  | ({ readonly kind: 'set' } & SetView)
  | { readonly kind: 'cidr'; readonly cidr: string; readonly negate: boolean }
  /** An ipBlock with excepts: in `cidrs` (absent: the whole family) and not in `excepts`. */
  | { readonly kind: 'block'; readonly cidrs?: SetView; readonly excepts: SetView };

/** One iptables rule of a policy chain: one (peer, port) alternative of a NetworkPolicy rule. */
export interface PolicyRuleView {
  /** `ingress:0` (from the comment), or `?` when the comment does not say. */
  readonly rule: string;
  readonly ruleIndex: number;
  readonly protocol: 'tcp' | 'udp' | 'sctp' | 'any';
  /** `6379`, `443,8000-8100`, `any`, or `named` (see namedPorts). */
  readonly ports: string;
  readonly peer: PeerView;
  /** A named port: the hash:ip,port set of (pod IP, protocol:number) it resolved to. */
  readonly namedPorts?: SetView;
  /** Packets this rule allowed (`iptables-save -c`), when the ruleset was read with counters. */
  readonly packets?: number;
  /** A ClusterNetworkPolicy `domainNames` Accept: the pod whose lookups fill its set, the names, what it learned. */
  readonly learned?: LearnedView;
}

export interface LearnedView {
  readonly pod: string;
  readonly names: readonly string[];
  readonly addresses: readonly LearnedAddress[];
}

/** One member the DNS agent learned, with its provenance comment and remaining timeout as the kernel holds them. */
export interface LearnedAddress {
  readonly address: string;
  readonly name?: string;
  /** Seconds since the epoch. */
  readonly learnedAt?: number;
  readonly remainingSeconds?: number;
}

export interface PolicyView {
  readonly policy: string;
  readonly direction: Direction;
  readonly chain: string;
  readonly rules: readonly PolicyRuleView[];
  /** Why the chain allows nothing (invalid policy, no rule can match). */
  readonly note?: string;
  /** Local pods whose workload chains jump here. */
  readonly usedBy: readonly string[];
  /** With counters: packets its rules allowed, and packets dropped at the pods it isolates (shared with their other policies). */
  readonly allowedPackets?: number;
  readonly deniedPackets?: number;
}

export interface WorkloadView {
  readonly chain: string;
  /** A final DROP is present: only what a policy allows passes. */
  readonly isolated: boolean;
  readonly policies: readonly string[];
  readonly policyChains: readonly string[];
  /** With counters: new connections' packets the chain's final drop dropped. */
  readonly droppedPackets?: number;
}

export interface PodView {
  /** `namespace/name` from the workload chains' comments; absent when they do not say. */
  readonly pod?: string;
  readonly ip: string;
  readonly dispatch: { readonly egress: readonly RuleRef[]; readonly ingress: readonly RuleRef[] };
  readonly egress?: WorkloadView;
  readonly ingress?: WorkloadView;
  /** Traffic to this node's own addresses (INPUT): the pod's ClusterNetworkPolicy egress tiers, when any select it. */
  readonly toNode?: WorkloadView;
}

export type ProblemKind =
  'owned-unexpected' | 'foreign-above-hook' | 'missing-hook' | 'unreferenced-chain' | 'missing-set' | 'missing-chain';

export interface InspectProblem {
  readonly kind: ProblemKind;
  readonly message: string;
  readonly chain?: string;
  readonly ruleIndex?: number;
  readonly text?: string;
}

export interface InspectReport {
  readonly chainPrefix: string;
  readonly forwardPolicy: string;
  /** Our jump in FORWARD, 1-based; absent when missing. */
  readonly hookPosition?: number;
  /** Address ranges whose unknown addresses are dropped (fail-closed), from the dispatch chains. */
  readonly failClosedCidrs: readonly string[];
  readonly pods: readonly PodView[];
  readonly policies: readonly PolicyView[];
  readonly problems: readonly InspectProblem[];
}

export interface InspectOptions {
  readonly chainPrefix: string;
  /** How many members of each set to show. */
  readonly sampleSize?: number;
}
