// The DNS wire codec against messages a real server sent (captured.ts) and against hostile bytes: every
// malformed input is refused with its reason, none throws, none loops.

import {
  DnsTcpFramer,
  nameText,
  parseDnsMessage,
  TYPE_A,
  TYPE_AAAA,
  TYPE_CNAME,
  type DnsMessage,
  type Parsed,
} from '../../../src/dns/wire.js';
import { captured } from './captured.js';

const ok = (p: Parsed<DnsMessage>): DnsMessage => {
  if (!p.ok) throw new Error(`refused: ${p.reason}`);
  return p.value;
};
const reason = (p: Parsed<unknown>): string => (p.ok ? 'accepted' : p.reason);

/** A message built byte by byte: header fields, then the raw body. */
function message(opts: { id?: number; flags?: number; qd?: number; an?: number }, ...body: (number[] | Buffer)[]): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(opts.id ?? 0x1234, 0);
  h.writeUInt16BE(opts.flags ?? 0x8180, 2);
  h.writeUInt16BE(opts.qd ?? 1, 4);
  h.writeUInt16BE(opts.an ?? 0, 6);
  return Buffer.concat([h, ...body.map((b) => Buffer.from(b))]);
}
const name = (...labels: string[]): number[] => [...labels.flatMap((l) => [l.length, ...Buffer.from(l, 'latin1')]), 0];
const u16 = (n: number): number[] => [n >> 8, n & 0xff];
const u32 = (n: number): number[] => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const QUESTION_A = [...name('a', 'test'), ...u16(TYPE_A), ...u16(1)]; // at offset 12, the name's first label
const rr = (owner: number[], type: number, ttl: number, data: number[]): number[] => [
  ...owner,
  ...u16(type),
  ...u16(1),
  ...u32(ttl),
  ...u16(data.length),
  ...data,
];

describe('captured messages (dnsmasq 2.90 answering dig 9.18)', () => {
  it('an A answer: header, question, one compressed answer with its TTL', () => {
    const m = ok(parseDnsMessage(captured('a').answer));
    expect(m.header).toMatchObject({ response: true, opcode: 0, rcode: 0, authoritative: true, recursionDesired: true, truncated: false });
    expect(m.questions).toEqual([{ name: ['good', 'example', 'test'], type: TYPE_A, class: 1 }]);
    expect(m.answers).toEqual([
      { name: ['good', 'example', 'test'], type: TYPE_A, class: 1, ttl: 300, data: { kind: 'A', address: '198.51.100.10' } },
    ]);
  });

  it('the query dig sent: QR clear, the same id as the answer', () => {
    const { query, answer } = captured('a');
    const q = ok(parseDnsMessage(query));
    expect(q.header.response).toBe(false);
    expect(q.header.id).toBe(ok(parseDnsMessage(answer)).header.id);
    expect(q.answers).toEqual([]);
  });

  it('an AAAA answer in RFC 5952 text', () => {
    const m = ok(parseDnsMessage(captured('aaaa').answer));
    expect(m.answers.map((r) => r.data)).toEqual([{ kind: 'AAAA', address: '2001:db8::10' }]);
    expect(m.answers[0]!.type).toBe(TYPE_AAAA);
  });

  it('a CNAME chain: owners by pointer, targets in full, the address at the end', () => {
    const m = ok(parseDnsMessage(captured('cname-chain').answer));
    expect(m.answers.map((r) => [nameText(r.name), r.type, r.data])).toEqual([
      ['alias.example.test', TYPE_CNAME, { kind: 'CNAME', target: ['mid', 'example', 'test'] }],
      ['mid.example.test', TYPE_CNAME, { kind: 'CNAME', target: ['target', 'example', 'test'] }],
      ['target.example.test', TYPE_A, { kind: 'A', address: '198.51.100.20' }],
    ]);
  });

  it('the name as the client wrote it (case kept; compared case-insensitively elsewhere)', () => {
    const m = ok(parseDnsMessage(captured('mixed-case').answer));
    expect(m.questions[0]!.name).toEqual(['GoOd', 'ExAmPlE', 'TeSt']);
  });

  it('NXDOMAIN: rcode 3 and no answers', () => {
    const m = ok(parseDnsMessage(captured('nxdomain').answer));
    expect(m.header.rcode).toBe(3);
    expect(m.answers).toEqual([]);
  });

  it('several A records for one name', () => {
    const m = ok(parseDnsMessage(captured('multi-a').answer));
    expect(m.answers.map((r) => r.data)).toEqual([
      { kind: 'A', address: '198.51.100.31' },
      { kind: 'A', address: '198.51.100.32' },
    ]);
  });
});

describe('DNS over TCP framing', () => {
  const segment = captured('tcp-a').answer; // one segment: the two-byte length, then the message

  it('the captured segment is one whole message', () => {
    const framer = new DnsTcpFramer();
    const out = framer.push(segment);
    expect(out.ok && out.value.map((m) => ok(parseDnsMessage(m)).answers[0]!.data)).toEqual([{ kind: 'A', address: '198.51.100.10' }]);
    expect(framer.pending).toBe(0);
  });

  it('two messages in one segment, and one message split across three (inside the length prefix too)', () => {
    const two = Buffer.concat([segment, segment]);
    const framer = new DnsTcpFramer();
    expect(reason(framer.push(two.subarray(0, 1)))).toBe('accepted');
    const a = framer.push(two.subarray(1, segment.length + 5));
    const b = framer.push(two.subarray(segment.length + 5));
    expect([a.ok && a.value.length, b.ok && b.value.length, framer.pending]).toEqual([1, 1, 0]);
    const c = new DnsTcpFramer().push(two);
    expect(c.ok && c.value.map((m) => m.equals(segment.subarray(2)))).toEqual([true, true]);
  });

  it('a length prefix shorter than a header is refused', () => {
    expect(reason(new DnsTcpFramer().push(Buffer.from([0, 3, 1, 2, 3])))).toMatch(/shorter than a DNS header/);
  });
});

describe('hostile messages are refused with a reason', () => {
  const cases: [string, Buffer, RegExp][] = [
    ['empty', Buffer.alloc(0), /shorter than the 12-byte header/],
    ['header cut short', Buffer.alloc(11), /shorter than the 12-byte header/],
    ['counts larger than the bytes', message({ qd: 1, an: 0xffff }, QUESTION_A), /claims 1 question\(s\) and 65535 answer\(s\)/],
    ['a pointer to itself', message({ an: 0 }, [0xc0, 12, 0, 1, 0, 1]), /does not point backwards/],
    [
      'a loop of two pointers',
      message({ an: 1 }, QUESTION_A, [0xc0, 31], [0xc0, 29], u16(1), u16(1), u32(1), u16(4), [1, 2, 3, 4]),
      /does not point backwards/,
    ],
    ['a forward pointer', message({ an: 0 }, [0xc0, 20, 0, 1, 0, 1, 0, 0, 0, 0]), /does not point backwards/],
    ['a pointer into the header', message({ an: 0 }, [0xc0, 2, 0, 1, 0, 1]), /inside the header/],
    [
      'a pointer past the end',
      message({ an: 1 }, QUESTION_A, [0xff, 0xff, ...u16(1), ...u16(1), ...u32(1), ...u16(4), 1, 2, 3, 4]),
      /does not point backwards/,
    ],
    ['a label past the end', message({ an: 0 }, [9, 0x61, 0x62]), /claims|past the end/],
    // 64 is 0x40: no plain label can be longer than 63 (RFC 1035 §4.1.4 keeps the top two bits for pointers).
    ['a label of 64 octets', message({ an: 0 }, [64, ...Buffer.alloc(64, 0x61), 0, 0, 1, 0, 1]), /label type 0x40/],
    [
      'a name of 256 octets',
      message({ an: 0 }, [
        ...Array.from({ length: 5 }, () => [50, ...Buffer.alloc(50, 0x61)]).flat(),
        5,
        ...Buffer.alloc(5, 0x61),
        0,
        0,
        1,
        0,
        1,
      ]),
      /longer than 255/,
    ],
    ['an extended label type', message({ an: 0 }, [0x41, 0, 0, 1, 0, 1]), /label type 0x40/],
    ['a question without type and class', message({ an: 0 }, name('a', 'test'), [0, 1]), /type and class missing/],
    ['an RR cut in its fixed fields', message({ an: 1 }, QUESTION_A, [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0]), /fixed fields truncated/],
    [
      'an RR whose data runs past the end',
      message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_A, 60, [1, 2, 3, 4]).slice(0, -1)),
      /4 bytes of data but only 3 remain/,
    ],
    [
      'an A record of 5 bytes',
      message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_A, 60, [1, 2, 3, 4, 5])),
      /A record's data is 4 bytes, not 5/,
    ],
    [
      'an AAAA record of 4 bytes',
      message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_AAAA, 60, [1, 2, 3, 4])),
      /AAAA record's data is 16 bytes, not 4/,
    ],
    [
      'a CNAME whose name overruns its data',
      message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_CNAME, 60, [3, 0x61, 0x62]), name('x')),
      /past the end of its bytes/,
    ],
    [
      'a CNAME with bytes after its name',
      message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_CNAME, 60, [0xc0, 12, 0])),
      /CNAME data is 3 bytes but its name takes 2/,
    ],
    ['a message over 65535 bytes', message({ an: 0 }, Buffer.alloc(65535)), /longer than 65535/],
  ];
  it.each(cases)('%s', (_what, bytes, why) => {
    expect(reason(parseDnsMessage(bytes))).toMatch(why);
  });

  it('a name of 129 backward pointers is refused, not walked', () => {
    // Question 1 is the root name at offset 12; each next question's name points at the one before, so the
    // 130th walks 129 pointers, every one strictly backwards.
    const body: number[] = [0, ...u16(TYPE_A), ...u16(1)];
    for (let i = 1; i < 130; i++) {
      const target = i === 1 ? 12 : 17 + (i - 2) * 6;
      body.push(0xc0 | (target >> 8), target & 0xff, ...u16(TYPE_A), ...u16(1));
    }
    expect(reason(parseDnsMessage(message({ qd: 130 }, body)))).toMatch(/question 130: more than 128 compression pointers/);
    expect(reason(parseDnsMessage(message({ qd: 129 }, body.slice(0, 5 + 128 * 6))))).toBe('accepted');
  });

  it('mutated captured messages are parsed or refused for a known reason, never by an unexpected exception (5,000 tries)', () => {
    // parseDnsMessage turns an unexpected exception into "unreadable message: …"; none may occur.
    let seed = 42;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
    const base = captured('cname-chain').answer;
    const unexpected: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      const b = Buffer.from(base);
      for (let k = 0; k < 1 + Math.floor(rand() * 4); k++) b[Math.floor(rand() * b.length)] = Math.floor(rand() * 256);
      const parsed = parseDnsMessage(b.subarray(0, Math.floor(rand() * (b.length + 1))));
      if (!parsed.ok && parsed.reason.startsWith('unreadable')) unexpected.push(parsed.reason);
    }
    expect(unexpected).toEqual([]);
  });

  it('a TTL with the top bit set reads as zero (RFC 2181 §8)', () => {
    const m = ok(parseDnsMessage(message({ an: 1 }, QUESTION_A, rr([0xc0, 12], TYPE_A, 0x80000001, [1, 2, 3, 4]))));
    expect(m.answers[0]!.ttl).toBe(0);
  });

  it('a dot inside a label stays inside it (escaped in text)', () => {
    const m = ok(parseDnsMessage(message({ an: 0 }, name('evil.good', 'example', 'test'), u16(TYPE_A), u16(1))));
    expect(m.questions[0]!.name).toEqual(['evil.good', 'example', 'test']);
    expect(nameText(m.questions[0]!.name)).toBe('evil\\.good.example.test');
  });
});
