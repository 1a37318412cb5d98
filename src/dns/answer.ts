// What one DNS answer grants to the pod that asked: the addresses of the name it queried, read from an
// answer to exactly that query. Pure: the caller has matched the packets to the pod's own conntrack flow
// (the answer came back on the reply direction of the flow the query opened); this module matches the
// messages themselves (transaction id and question) and walks the answer.

import { canonicalName, CLASS_IN, sameName, TYPE_A, TYPE_AAAA, type DnsMessage, type DnsName, type Parsed } from './wire.js';

/** The question a pod sent, as the daemon saw it leave. */
export interface SentQuery {
  readonly id: number;
  readonly name: DnsName;
  /** TYPE_A or TYPE_AAAA: only address queries can grant anything. */
  readonly type: number;
}

export interface GrantedAddress {
  readonly family: 4 | 6;
  readonly address: string;
  /** Seconds: the least TTL on the way from the queried name to this address (its record and each CNAME before it). */
  readonly ttl: number;
}

export interface Grant {
  /** The queried name, lower-cased: the name a `domainNames` rule is matched against. */
  readonly name: DnsName;
  readonly addresses: readonly GrantedAddress[];
}

/** A CNAME chain longer than this is refused (resolvers give up far sooner: BIND at 16, RFC 1034 §5.3.3 loops). */
const MAX_CHAIN = 16;

/** A query message (QR clear, one question) → what it asks, or why it is not an address query. */
export function sentQuery(query: DnsMessage): Parsed<SentQuery> {
  if (query.header.response) return { ok: false, reason: 'a response, not a query' };
  if (query.header.opcode !== 0) return { ok: false, reason: `opcode ${query.header.opcode} is not a standard query` };
  if (query.questions.length !== 1) return { ok: false, reason: `${query.questions.length} questions (a query has exactly one)` };
  const q = query.questions[0]!;
  if (q.class !== CLASS_IN) return { ok: false, reason: `class ${q.class} is not IN` };
  if (q.type !== TYPE_A && q.type !== TYPE_AAAA) return { ok: false, reason: `type ${q.type} asks for no address` };
  return { ok: true, value: { id: query.header.id, name: q.name, type: q.type } };
}

/**
 * The addresses `answer` grants for `query`'s name, or why it grants nothing. The answer must be a
 * successful response with the same transaction id and the same single question (names compared
 * case-insensitively). Starting at the queried name, CNAME records in the answer section are followed
 * (a chain that starts anywhere else grants nothing), and the A or AAAA records (the queried type only) of
 * the names on that chain are granted. Records for any other name in the answer are ignored.
 */
export function grantedAddresses(query: SentQuery, answer: DnsMessage): Parsed<Grant> {
  const h = answer.header;
  if (!h.response) return { ok: false, reason: 'not a response' };
  if (h.id !== query.id) return { ok: false, reason: `transaction id ${h.id} is not the query's ${query.id}` };
  if (h.opcode !== 0) return { ok: false, reason: `opcode ${h.opcode} is not a standard query` };
  if (h.rcode !== 0) return { ok: false, reason: `response code ${h.rcode} (not NOERROR) grants nothing` };
  if (answer.questions.length !== 1) return { ok: false, reason: `${answer.questions.length} questions in the answer (the query had one)` };
  const q = answer.questions[0]!;
  if (!sameName(q.name, query.name) || q.type !== query.type || q.class !== CLASS_IN)
    return { ok: false, reason: 'the answer is to another question than the query' };

  // The chain: each name's one CNAME, from the queried name on. Several different CNAMEs for one owner
  // (RFC 2181 §10.1 forbids it) make the chain ambiguous: refused rather than guessed.
  const chain: { name: DnsName; ttl: number }[] = [{ name: query.name, ttl: Number.POSITIVE_INFINITY }];
  for (;;) {
    const current = chain[chain.length - 1]!;
    const targets = answer.answers.filter((r) => r.data.kind === 'CNAME' && sameName(r.name, current.name));
    if (targets.length === 0) break;
    const first = targets[0]!;
    const target = first.data.kind === 'CNAME' ? first.data.target : [];
    if (targets.some((r) => r.data.kind === 'CNAME' && !sameName(r.data.target, target)))
      return { ok: false, reason: 'several CNAMEs for one name' };
    if (chain.some((c) => sameName(c.name, target))) return { ok: false, reason: 'the CNAME chain loops' };
    if (chain.length > MAX_CHAIN) return { ok: false, reason: `CNAME chain longer than ${MAX_CHAIN}` };
    chain.push({ name: target, ttl: Math.min(current.ttl, ...targets.map((r) => r.ttl)) });
  }

  const kind = query.type === TYPE_A ? 'A' : 'AAAA';
  const seen = new Map<string, GrantedAddress>();
  for (const r of answer.answers) {
    if (r.data.kind !== kind) continue;
    const link = chain.find((c) => sameName(c.name, r.name));
    if (!link) continue;
    const ttl = Math.min(link.ttl, r.ttl);
    const prior = seen.get(r.data.address);
    // The same address twice (two names of the chain): it lives as long as its longest-lived path.
    if (!prior || prior.ttl < ttl) seen.set(r.data.address, { family: kind === 'A' ? 4 : 6, address: r.data.address, ttl });
  }
  return { ok: true, value: { name: canonicalName(query.name), addresses: [...seen.values()] } };
}
