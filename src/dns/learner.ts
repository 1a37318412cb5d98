// What the DNS agent decides, as pure logic over packets (docs/dns-egress-design.md, "Daemon"): a query leaving a
// subject pod is recorded; an answer to that pod is matched to the pod's own pending query, its granted addresses
// (A/AAAA, the CNAME chain from the queried name) go to every learned set of that pod and family whose
// `domainNames` match the QUERIED name, each with timeout clamp(max(TTL, minTtl), maxTtl) and its provenance
// comment. No socket and no clock here: the caller (src/daemon/dns-egress.ts) holds the answer, writes the adds
// and releases it.

import type { DnsLearnedSet, DnsLearningPlan, DnsLearningSettings } from '../model/dns-egress.js';
import { learnedComment } from '../model/dns-egress.js';
import { grantedAddresses, sentQuery, type GrantedAddress, type SentQuery } from './answer.js';
import { LearnedEntries } from './learned.js';
import { parseSegment, type Segment } from './packet.js';
import { domainMatches, parseDomainPattern, type DomainPattern } from './pattern.js';
import { PendingQueries } from './pending.js';
import { TcpStreams } from './tcp-streams.js';
import { nameText, parseDnsMessage } from './wire.js';

/** Why an answer granted nothing: the metric's label values (a closed set). */
export type AnswerRefusal =
  /** The packet is not a well-formed IP/UDP/TCP packet. */
  | 'packet'
  /** A TCP segment not read: a stream whose SYN was not seen, out of sequence, or framing lost. */
  | 'tcp-stream'
  /** The DNS message does not parse (hostile or corrupt). */
  | 'message'
  /** No pending query of that pod from that port to that server with that id: unsolicited or forged. */
  | 'unsolicited'
  /** A response to the pending query that grants nothing: another question, an error code, a bad chain. */
  | 'mismatch';

/** What one answer packet asks of the kernel, and what it counted. */
export interface AnswerDecision {
  /** Members to add, per learned set (empty: release the answer at once). */
  readonly adds: readonly LearnedAdd[];
  /** Set when the answer granted nothing for a reason worth counting. */
  readonly refused?: AnswerRefusal;
  readonly reason?: string;
  /** Addresses refused because the node holds `perNodeMax` learned entries. */
  readonly nodeBound: number;
  /** Answers to a tracked query whose name no rule of the pod matches (granted nothing, no fault). */
  readonly unmatched: number;
}

export interface LearnedMember {
  readonly member: string;
  readonly timeout: number;
  readonly comment: string;
}

export interface LearnedAdd {
  readonly set: string;
  readonly members: readonly LearnedMember[];
}

export type QueryOutcome = 'recorded' | 'not-tracked' | 'not-a-query' | 'pod-bound' | 'node-bound';

export interface LearnerOptions {
  /** Pending queries on the node (default 16,384: 64 per pod for 256 subject pods). */
  readonly pendingPerNode?: number;
  /** How long a query waits for its answer (default 10 s: glibc's resolver gives up after 5 s × attempts). */
  readonly pendingTtlMs?: number;
}

interface CompiledSet {
  readonly set: DnsLearnedSet;
  readonly patterns: readonly DomainPattern[];
}

export class DnsLearner {
  private settings: DnsLearningSettings;
  /** Subject pod address → its learned sets (both families: the address says which). */
  private byPod = new Map<string, readonly CompiledSet[]>();
  /**
   * Each `domainNames` entry of the current plan → its parsed pattern (undefined: invalid), so a sync with the same
   * entries parses none again. Keyed by the entry's text, and parsing is a function of the text alone: a changed
   * entry is another key, and the map is rebuilt from the plan on each setPlan, so a removed one is gone at once.
   */
  private patterns = new Map<string, DomainPattern | undefined>();
  private pending: PendingQueries;
  private readonly learned: LearnedEntries;
  private readonly tcp = new TcpStreams();

  constructor(
    plan: DnsLearningPlan,
    private readonly options: LearnerOptions = {},
  ) {
    this.settings = plan.settings;
    this.learned = new LearnedEntries(plan.settings.perNodeMax);
    this.pending = this.newPending();
    this.setPlan(plan);
  }

  get learnedEntries(): number {
    return this.learned.size;
  }

  get pendingQueries(): number {
    return this.pending.size;
  }

  /**
   * Members the kernel's learned sets already hold (read back after a restart, or from a set adopted with its
   * members), so the per-node bound counts them: `until` is when the kernel will expire each (ms).
   */
  seed(members: Iterable<{ readonly set: string; readonly address: string; readonly until: number }>): void {
    for (const m of members) this.learned.seed(m.set, m.address, m.until);
  }

  /** A set emptied under the agent (recreated by a sync): its members no longer count. */
  forgetSet(set: string): void {
    this.learned.forgetSet(set);
  }

  /** A new plan: sets that are gone are forgotten (their members went with them); pending queries are kept. */
  setPlan(plan: DnsLearningPlan): void {
    const next = new Map<string, CompiledSet[]>();
    const parsed = new Map<string, DomainPattern | undefined>();
    const patternOf = (text: string): DomainPattern | undefined => {
      if (parsed.has(text)) return parsed.get(text);
      let pattern: DomainPattern | undefined;
      if (this.patterns.has(text)) pattern = this.patterns.get(text);
      else {
        const p = parseDomainPattern(text);
        pattern = p.ok ? p.value : undefined;
      }
      parsed.set(text, pattern);
      return pattern;
    };
    for (const set of plan.sets) {
      const patterns = set.domainNames.flatMap((d) => patternOf(d) ?? []);
      const list = next.get(set.podAddress) ?? [];
      list.push({ set, patterns });
      next.set(set.podAddress, list);
    }
    const kept = new Set(plan.sets.map((s) => s.setName));
    for (const list of this.byPod.values()) for (const c of list) if (!kept.has(c.set.setName)) this.learned.forgetSet(c.set.setName);
    this.byPod = next;
    this.patterns = parsed;
    if (plan.settings.pendingPerPod !== this.settings.pendingPerPod) this.pending = this.newPending(plan.settings.pendingPerPod);
    this.learned.perNodeMax = plan.settings.perNodeMax;
    this.settings = plan.settings;
  }

  /** A packet a subject pod sent to port 53 (the NFLOG copy): its query is recorded. */
  query(packet: Buffer, now: number): QueryOutcome {
    const seg = parseSegment(packet);
    if (!seg.ok || !this.byPod.has(seg.value.src)) return 'not-tracked';
    const messages = this.messagesOf(seg.value, now);
    if (!messages.ok) return 'not-a-query';
    let outcome: QueryOutcome = 'not-a-query';
    for (const bytes of messages.value) {
      const msg = parseDnsMessage(bytes);
      const q = msg.ok ? sentQuery(msg.value) : undefined;
      if (!q?.ok) continue;
      const key = { pod: seg.value.src, podPort: seg.value.srcPort, server: seg.value.dst, id: q.value.id };
      outcome = this.pending.add(key, q.value, now);
    }
    return outcome;
  }

  /** A packet from port 53 to a subject pod (the queued answer): what to add before it is released. */
  answer(packet: Buffer, now: number): AnswerDecision {
    const none = (refused: AnswerRefusal, reason: string): AnswerDecision => ({ adds: [], refused, reason, nodeBound: 0, unmatched: 0 });
    const seg = parseSegment(packet);
    if (!seg.ok) return none('packet', seg.reason);
    const s = seg.value;
    const messages = this.messagesOf(s, now);
    if (!messages.ok) return none(s.protocol === 'tcp' ? 'tcp-stream' : 'message', messages.reason);
    const sets = (this.byPod.get(s.dst) ?? []).filter((c) => c.set.family === s.family);
    const adds = new Map<string, LearnedMember[]>();
    let refused: { refused: AnswerRefusal; reason: string } | undefined;
    let nodeBound = 0;
    let unmatched = 0;
    for (const bytes of messages.value) {
      const msg = parseDnsMessage(bytes);
      if (!msg.ok) {
        refused = { refused: 'message', reason: msg.reason };
        continue;
      }
      const key = { pod: s.dst, podPort: s.dstPort, server: s.src, id: msg.value.header.id };
      const query: SentQuery | undefined = this.pending.find(key, now);
      if (!query) {
        refused = { refused: 'unsolicited', reason: `no pending query ${msg.value.header.id} from ${s.dst}:${s.dstPort} to ${s.src}` };
        continue;
      }
      const grant = grantedAddresses(query, msg.value);
      if (!grant.ok) {
        refused = { refused: 'mismatch', reason: grant.reason };
        continue;
      }
      this.pending.answered(key);
      const matching = sets.filter((c) => c.patterns.some((p) => domainMatches(p, grant.value.name)));
      if (matching.length === 0) {
        unmatched++;
        continue;
      }
      // One provenance comment per answer, whatever the number of sets and addresses it grants.
      const comment = learnedComment({ name: nameText(grant.value.name), learnedAt: Math.floor(now / 1000) });
      for (const c of matching) {
        const members = adds.get(c.set.setName) ?? [];
        for (const a of grant.value.addresses) {
          const member = this.member(c.set.setName, a, comment, now);
          if (member) members.push(member);
          else nodeBound++;
        }
        if (members.length > 0) adds.set(c.set.setName, members);
      }
    }
    return {
      adds: [...adds].map(([set, members]) => ({ set, members })),
      ...(refused ?? {}),
      nodeBound,
      unmatched,
    };
  }

  private member(set: string, a: GrantedAddress, comment: string, now: number): LearnedMember | undefined {
    const { minTtlSeconds, maxTtlSeconds } = this.settings;
    const timeout = Math.min(Math.max(a.ttl, minTtlSeconds), maxTtlSeconds);
    if (this.learned.learn(set, a.address, now + timeout * 1000, now) === 'node-bound') return undefined;
    return { member: a.address, timeout, comment };
  }

  private messagesOf(s: Segment, now: number): { ok: true; value: Buffer[] } | { ok: false; reason: string } {
    if (s.protocol === 'udp') return { ok: true, value: [s.payload] };
    return this.tcp.push(s, now);
  }

  private newPending(perPod = this.settings.pendingPerPod): PendingQueries {
    return new PendingQueries({
      perPod,
      perNode: this.options.pendingPerNode ?? 16_384,
      ttlMs: this.options.pendingTtlMs ?? 10_000,
    });
  }
}
