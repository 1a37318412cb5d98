// Egress by DNS name (ClusterNetworkPolicy `domainNames`): what the compiler hands the daemon's DNS agent.
// The compiler decides which sets exist and which pods' answers are queued; the agent fills the sets at run time
// from each pod's own answers (docs/dns-egress-design.md). Members of a learned set are runtime state: the planner
// creates and destroys the set with its rule, never diffs, flushes or repairs its members.

import type { IpFamily } from './cluster.js';

/** The addresses DNS answers granted one subject pod for one `domainNames` rule, in one family. */
export interface DnsLearnedSet {
  /** The kernel ipset: `hash:ip family inet|inet6 timeout <minTtl> maxelem <perSetMax> comment`. */
  readonly setName: string;
  readonly family: IpFamily;
  /** The subject pod, `namespace/name`, and its address in this family (the answer's destination). */
  readonly pod: string;
  readonly podAddress: string;
  /** The ClusterNetworkPolicy, the rule's index in its egress list, and the rule's name when it has one. */
  readonly policy: string;
  readonly ruleIndex: number;
  readonly ruleName?: string;
  /** The peer's `domainNames` entries as written (valid ones only; src/dns/pattern.ts). */
  readonly domainNames: readonly string[];
  /** The policy is in audit mode: learned like any other, the rule only logs. */
  readonly audited?: true;
}

/** Bounds and numbers every learned set and the agent share (config keys under `dnsEgress`). */
export interface DnsLearningSettings {
  /** NFQUEUE number the answers are held on. */
  readonly queueNum: number;
  /** NFLOG group the queries are copied to (bound on the same netlink socket as the queue). */
  readonly nflogGroup: number;
  /** An entry lives max(answer TTL, minTtlSeconds), at most maxTtlSeconds. */
  readonly minTtlSeconds: number;
  readonly maxTtlSeconds: number;
  /** Per learned set (one pod, one rule, one family): the set's maxelem. */
  readonly perSetMax: number;
  /** Learned entries on the node, counted by the agent; past it new addresses are refused. */
  readonly perNodeMax: number;
  /** Pending queries per pod awaiting their answer. */
  readonly pendingPerPod: number;
  /** How long an answer may be held for its set writes before it is released ungranted. */
  readonly holdDeadlineMs: number;
}

export const defaultDnsLearningSettings: DnsLearningSettings = {
  queueNum: 4100,
  nflogGroup: 4101,
  minTtlSeconds: 30,
  maxTtlSeconds: 86_400,
  perSetMax: 4096,
  perNodeMax: 65_536,
  pendingPerPod: 64,
  holdDeadlineMs: 100,
};

/** Everything the agent needs for one node: empty `sets` means no queue rules and no agent work. */
export interface DnsLearningPlan {
  readonly settings: DnsLearningSettings;
  readonly sets: readonly DnsLearnedSet[];
}

/** Where a learned entry came from, kept in the kernel as the member's ipset comment (so it outlives the daemon). */
export interface LearnedProvenance {
  /** The name the pod queried (lower-case, no trailing dot). */
  readonly name: string;
  /** When the answer was seen, whole seconds since the epoch. */
  readonly learnedAt: number;
}

/** `<learnedAt> <name>`, cut to the kernel's 255-byte comment limit (a DNS name is at most 253 bytes). */
export function learnedComment(p: LearnedProvenance): string {
  return `${p.learnedAt} ${p.name}`.slice(0, 255);
}

export function parseLearnedComment(text: string): LearnedProvenance | undefined {
  const m = /^(\d+) (\S+)$/.exec(text);
  return m ? { learnedAt: Number(m[1]), name: m[2]! } : undefined;
}
