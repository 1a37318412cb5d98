// `/learned?pod=NS/NAME&address=IP`: what the node's DNS agent learned for one pod and one destination
// (ClusterNetworkPolicy `domainNames`), as `why --live` asks it. Read from the kernel's learned sets, not the
// agent's memory: the members and their comments outlive a daemon restart, the agent's count does not.

/** One learned set of the pod that holds the address, with the member's comment and counting-down timeout. */
export interface LearnedMemberAnswer {
  readonly set: string;
  /** The ClusterNetworkPolicy and rule (`egress:0 api`) whose `domainNames` the set serves. */
  readonly policy: string;
  readonly rule: string;
  /** From the member's comment: the queried name, and when its answer was seen (seconds since the epoch). */
  readonly name?: string;
  readonly learnedAt?: number;
  /** Seconds the member had left when the set was read. */
  readonly remainingSeconds?: number;
}

export interface LearnedAnswer {
  readonly pod: string;
  readonly address: string;
  /** When the sets were read (ms since the epoch): remainingSeconds counts from here. */
  readonly readAt: number;
  /** The pod's learned sets of the address's family on this node (0: no `domainNames` rule for it here). */
  readonly sets: number;
  /** Their `domainNames`, as written (the names a lookup would grant). */
  readonly names: readonly string[];
  readonly learned: readonly LearnedMemberAnswer[];
}

/** At most this many of a pod's sets are read per request (one per rule and family; more is not expected). */
export const MAX_LEARNED_SETS = 32;
