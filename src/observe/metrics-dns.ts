// Egress by DNS name (ClusterNetworkPolicy `domainNames`): what the DNS agent sees, learns and refuses. The
// answers are held until their addresses are written, so the hold time is what the feature costs every lookup.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Why an answer granted nothing (src/dns/learner.ts AnswerRefusal). */
export type DnsRefusalReason = 'packet' | 'tcp-stream' | 'message' | 'unsolicited' | 'mismatch';
/** Which bound refused: pending queries per pod or per node, learned entries per node, a learned set's maxelem. */
export type DnsBound = 'pending-pod' | 'pending-node' | 'learned-node' | 'set-full';
/** Why an answer was released before its addresses were written: the deadline, or the write failed. */
export type DnsReleaseError = 'deadline' | 'error';

export interface DnsMetrics {
  countDnsAnswer(): void;
  countDnsLearned(n: number): void;
  observeDnsHold(seconds: number): void;
  countDnsRefused(reason: DnsRefusalReason): void;
  countDnsBound(bound: DnsBound, n?: number): void;
  countDnsReleasedOnError(kind: DnsReleaseError): void;
  setDnsLearnedEntries(n: number): void;
}

/** From the queue's floor (tens of microseconds) to the hold deadline (100 ms by default) and past it. */
const HOLD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];

export function createDnsMetrics(registers: Registry[]): DnsMetrics {
  const answers = new Counter({
    name: 'netfence_dns_answers_total',
    help: 'DNS answers to pods with domainNames rules held by the agent (each is released, never dropped or rewritten).',
    registers,
  });
  const learned = new Counter({
    name: 'netfence_dns_addresses_learned_total',
    help: 'Addresses written to learned sets (a refresh of an address already learned counts again).',
    registers,
  });
  const hold = new Histogram({
    name: 'netfence_dns_hold_seconds',
    help: 'Time a DNS answer was held: from its arrival at the agent to its release (after its addresses were written).',
    buckets: HOLD_BUCKETS,
    registers,
  });
  const refused = new Counter({
    name: 'netfence_dns_answers_refused_total',
    help: 'Answers that granted nothing, by reason: packet or message unreadable (hostile or corrupt), a TCP stream not followed, unsolicited (no pending query of that pod), mismatch (another question, an error code, a bad CNAME chain).',
    labelNames: ['reason'] as const,
    registers,
  });
  const bounds = new Counter({
    name: 'netfence_dns_bound_refusals_total',
    help: 'Queries or addresses refused at a bound: pending queries per pod or per node, learned entries per node, a learned set full (its maxelem).',
    labelNames: ['bound'] as const,
    registers,
  });
  const releasedOnError = new Counter({
    name: 'netfence_dns_released_on_error_total',
    help: 'Answers released before their addresses were acknowledged (the deadline passed, or the write failed): DNS works, those addresses are not allowed.',
    labelNames: ['kind'] as const,
    registers,
  });
  const entries = new Gauge({
    name: 'netfence_dns_learned_entries',
    help: 'Learned entries the agent counts on this node (unexpired), against its per-node bound.',
    registers,
  });
  answers.inc(0);
  learned.inc(0);
  return {
    countDnsAnswer: () => answers.inc(),
    countDnsLearned: (n) => learned.inc(n),
    observeDnsHold: (s) => hold.observe(s),
    countDnsRefused: (reason) => refused.inc({ reason }),
    countDnsBound: (bound, n = 1) => bounds.inc({ bound }, n),
    countDnsReleasedOnError: (kind) => releasedOnError.inc({ kind }),
    setDnsLearnedEntries: (n) => entries.set(n),
  };
}
