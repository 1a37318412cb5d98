// DNS messages on the wire (RFC 1035 §4), as pure functions over bytes: the header, the question and the
// answer section with name compression, A, AAAA and CNAME data and TTLs. The input is hostile (whatever a pod
// or a server on its path sends): every read is bounds-checked, compression pointers may only point backwards
// (so no loop), counts must fit the bytes, and any fault is a refusal with its reason, never an exception.
// Authority and additional sections are not read: nothing in them may grant anything.

/** RR types and the class this module reads (RFC 1035 §3.2.2, RFC 3596 §2.1). */
export const TYPE_A = 1;
export const TYPE_CNAME = 5;
export const TYPE_AAAA = 28;
export const CLASS_IN = 1;

const HEADER = 12;
/** RFC 1035 §2.3.4: a name is at most 255 octets on the wire (a label's 63 is its length byte's six bits). */
const MAX_NAME = 255;
/** The least bytes a question (root name, type, class) and a resource record (root, type, class, TTL, rdlength) take. */
const MIN_QUESTION = 5;
const MIN_RECORD = 11;
/** A DNS message is at most 65535 bytes (the TCP length prefix is two bytes). */
const MAX_MESSAGE = 0xffff;
/** A 255-octet name has at most 127 labels, so more jumps than that cannot be a real name. */
const MAX_JUMPS = 128;

/**
 * A domain name as its labels, each the label's octets as latin1 text (so a byte is a character and a `.`
 * inside a label stays inside it). Compare with {@link sameName}: DNS names are case-insensitive.
 */
export type DnsName = readonly string[];

export interface DnsHeader {
  readonly id: number;
  /** QR: true for a response. */
  readonly response: boolean;
  readonly opcode: number;
  readonly authoritative: boolean;
  readonly truncated: boolean;
  readonly recursionDesired: boolean;
  readonly recursionAvailable: boolean;
  /** RCODE: 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, … */
  readonly rcode: number;
}

export interface DnsQuestion {
  readonly name: DnsName;
  readonly type: number;
  readonly class: number;
}

export type RecordData =
  | { readonly kind: 'A'; readonly address: string }
  | { readonly kind: 'AAAA'; readonly address: string }
  | { readonly kind: 'CNAME'; readonly target: DnsName }
  | { readonly kind: 'other' };

export interface DnsRecord {
  readonly name: DnsName;
  readonly type: number;
  readonly class: number;
  /** Seconds; RFC 2181 §8: a TTL with the most significant bit set is read as zero. */
  readonly ttl: number;
  readonly data: RecordData;
}

export interface DnsMessage {
  readonly header: DnsHeader;
  readonly questions: readonly DnsQuestion[];
  readonly answers: readonly DnsRecord[];
}

export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/** Thrown only inside this module and turned into a refusal at its edge. */
class Refused extends Error {}
const refuse = (reason: string): never => {
  throw new Refused(reason);
};

/** A whole DNS message (without the TCP length prefix) → its header, questions and answers, or why not. */
export function parseDnsMessage(bytes: Uint8Array): Parsed<DnsMessage> {
  try {
    return { ok: true, value: parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, reason: err.message };
    // Every read is checked before it is made; anything else is a bug here, still refused rather than thrown.
    return { ok: false, reason: `unreadable message: ${(err as Error).message}` };
  }
}

function parse(b: Buffer): DnsMessage {
  if (b.length < HEADER) refuse(`message of ${b.length} bytes is shorter than the 12-byte header`);
  if (b.length > MAX_MESSAGE) refuse(`message of ${b.length} bytes is longer than 65535`);
  const flags = b.readUInt16BE(2);
  const header: DnsHeader = {
    id: b.readUInt16BE(0),
    response: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    authoritative: (flags & 0x0400) !== 0,
    truncated: (flags & 0x0200) !== 0,
    recursionDesired: (flags & 0x0100) !== 0,
    recursionAvailable: (flags & 0x0080) !== 0,
    rcode: flags & 0xf,
  };
  const qdcount = b.readUInt16BE(4);
  const ancount = b.readUInt16BE(6);
  // Refused before anything is allocated: a header claiming 65535 records in a 40-byte message.
  if (HEADER + qdcount * MIN_QUESTION + ancount * MIN_RECORD > b.length)
    refuse(`header claims ${qdcount} question(s) and ${ancount} answer(s), more than ${b.length} bytes can hold`);
  let at = HEADER;
  const questions: DnsQuestion[] = [];
  for (let i = 0; i < qdcount; i++) {
    const [name, next] = readName(b, at, `question ${i + 1}`);
    if (next + 4 > b.length) refuse(`question ${i + 1} ends after the message (type and class missing)`);
    questions.push({ name, type: b.readUInt16BE(next), class: b.readUInt16BE(next + 2) });
    at = next + 4;
  }
  const answers: DnsRecord[] = [];
  for (let i = 0; i < ancount; i++) {
    const [record, next] = readRecord(b, at, `answer ${i + 1}`);
    answers.push(record);
    at = next;
  }
  return { header, questions, answers };
}

function readRecord(b: Buffer, at: number, what: string): [DnsRecord, number] {
  const [name, next] = readName(b, at, what);
  if (next + 10 > b.length) refuse(`${what} ends after the message (fixed fields truncated)`);
  const type = b.readUInt16BE(next);
  const klass = b.readUInt16BE(next + 2);
  const rawTtl = b.readUInt32BE(next + 4);
  const rdlength = b.readUInt16BE(next + 8);
  const start = next + 10;
  const end = start + rdlength;
  if (end > b.length) refuse(`${what} has ${rdlength} bytes of data but only ${b.length - start} remain`);
  const ttl = rawTtl > 0x7fffffff ? 0 : rawTtl;
  let data: RecordData = { kind: 'other' };
  if (klass === CLASS_IN && type === TYPE_A) {
    if (rdlength !== 4) refuse(`${what}: an A record's data is 4 bytes, not ${rdlength}`);
    data = { kind: 'A', address: [...b.subarray(start, end)].join('.') };
  } else if (klass === CLASS_IN && type === TYPE_AAAA) {
    if (rdlength !== 16) refuse(`${what}: an AAAA record's data is 16 bytes, not ${rdlength}`);
    data = { kind: 'AAAA', address: ipv6Text(b.subarray(start, end)) };
  } else if (klass === CLASS_IN && type === TYPE_CNAME) {
    // The target may point back into the message, but its own bytes must stay inside this record's data.
    const [target, after] = readName(b, start, `${what}'s CNAME target`, end);
    if (after !== end) refuse(`${what}: CNAME data is ${rdlength} bytes but its name takes ${after - start}`);
    data = { kind: 'CNAME', target };
  }
  return [{ name, type, class: klass, ttl, data }, end];
}

/**
 * The name at `at` and the offset after it (after the first pointer when compressed). `limit` bounds the
 * in-place bytes (a CNAME target must end inside its record). A pointer must point before the label that
 * holds it, so every jump goes strictly backwards and the walk ends; the 255-octet name limit bounds it too.
 */
function readName(b: Buffer, at: number, what: string, limit = b.length): [DnsName, number] {
  const labels: string[] = [];
  let wire = 1; // the root's zero octet
  let pos = at;
  let end = -1;
  let floor = at; // a pointer must go below every position read so far
  let jumps = 0;
  for (;;) {
    if (pos >= (end < 0 ? limit : b.length)) refuse(`${what}: name runs past the end of its bytes`);
    const len = b[pos]!;
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= (end < 0 ? limit : b.length)) refuse(`${what}: compression pointer cut short`);
      const target = ((len & 0x3f) << 8) | b[pos + 1]!;
      if (target < HEADER) refuse(`${what}: compression pointer to offset ${target}, inside the header`);
      if (target >= floor)
        refuse(`${what}: compression pointer to offset ${target} does not point backwards (a loop or a forward reference)`);
      if (++jumps > MAX_JUMPS) refuse(`${what}: more than ${MAX_JUMPS} compression pointers in one name`);
      if (end < 0) end = pos + 2;
      floor = target;
      pos = target;
      continue;
    }
    if (kind !== 0) refuse(`${what}: label type 0x${kind.toString(16)} is not a plain label or a pointer`);
    if (len === 0) break;
    if (pos + 1 + len > (end < 0 ? limit : b.length)) refuse(`${what}: label runs past the end of its bytes`);
    wire += 1 + len;
    if (wire > MAX_NAME) refuse(`${what}: name is longer than 255 octets`);
    labels.push(b.toString('latin1', pos + 1, pos + 1 + len));
    pos += 1 + len;
  }
  return [labels, end < 0 ? pos + 1 : end];
}

/** RFC 4343: DNS compares names ASCII case-insensitively (other octets exactly). */
const asciiLower = (s: string): string => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));

/** Labels lower-cased the DNS way, for comparing and keying. */
export const canonicalName = (name: DnsName): DnsName => name.map(asciiLower);

export const sameName = (a: DnsName, b: DnsName): boolean =>
  a.length === b.length && a.every((l, i) => asciiLower(l) === asciiLower(b[i]!));

/** Presentation text (RFC 1035 §5.1): a `.` or `\` inside a label and bytes outside printable ASCII are escaped, so the text reads back as the same labels. */
export function nameText(name: DnsName): string {
  if (name.length === 0) return '.';
  return name
    .map((label) =>
      label.replace(/[^\x21-\x7e]|[.\\]/g, (c) => {
        const code = c.charCodeAt(0);
        return code > 0x20 && code < 0x7f ? `\\${c}` : `\\${String(code).padStart(3, '0')}`;
      }),
    )
    .join('.');
}

/** RFC 5952 text: lower case, the longest run of two or more zero groups as `::`. */
function ipv6Text(b: Buffer): string {
  const groups = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/**
 * DNS over TCP (RFC 1035 §4.2.2, RFC 7766 §8): each message is preceded by its two-byte length, one segment
 * may carry several messages and one message may span segments. Feed each segment's payload in order; whole
 * messages come out, the rest waits for the next segment. One stream per framer (per TCP flow direction).
 */
export class DnsTcpFramer {
  private buffered: Buffer = Buffer.alloc(0);

  /** The messages completed by this segment, or a refusal (the stream is then unusable: framing is lost). */
  push(segment: Uint8Array): Parsed<Buffer[]> {
    this.buffered = this.buffered.length === 0 ? Buffer.from(segment) : Buffer.concat([this.buffered, segment]);
    const messages: Buffer[] = [];
    while (this.buffered.length >= 2) {
      const length = this.buffered.readUInt16BE(0);
      if (length < HEADER) {
        this.buffered = Buffer.alloc(0);
        return { ok: false, reason: `TCP length prefix ${length} is shorter than a DNS header` };
      }
      if (this.buffered.length < 2 + length) break;
      messages.push(this.buffered.subarray(2, 2 + length));
      this.buffered = this.buffered.subarray(2 + length);
    }
    return { ok: true, value: messages };
  }

  /** Bytes held for a message not complete yet (at most 65537: a prefix and its whole message). */
  get pending(): number {
    return this.buffered.length;
  }
}
