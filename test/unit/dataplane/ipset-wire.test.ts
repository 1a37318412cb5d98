// The ipset netlink codec against what the real `ipset` tool sent and the real kernel answered, captured with
// strace in a scratch namespace (fixtures/ipset-netlink.json; scripts/capture-ipset-netlink.ts re-records it):
// for every set type and family netfence uses, the request the codec builds for an `ipset -exist restore` batch
// is byte for byte the one libipset built (sequence number aside), and the kernel's replies parse to what the
// tool reported.

import { readFileSync } from 'node:fs';
import {
  IpsetMemberSyntaxError,
  memberData,
  memberRequests,
  nlmsg,
  parseError,
  parseProtocolReply,
  protocolRequest,
  splitMessages,
  type MemberOp,
} from '../../../src/dataplane/ipset-wire.js';
import { parseAttributes } from '../../../src/dataplane/netlink-attributes.js';

interface CapturedCase {
  readonly name: string;
  readonly command: string;
  readonly input?: string;
  readonly exit: number;
  readonly stderr?: string;
  readonly request: string;
  readonly replies: readonly string[];
}

const fixture = JSON.parse(readFileSync(new URL('./fixtures/ipset-netlink.json', import.meta.url), 'utf8')) as {
  readonly cases: readonly CapturedCase[];
};
const captured = (name: string): CapturedCase => {
  const c = fixture.cases.find((x) => x.name === name) ?? fixture.cases.find((x) => x.name.startsWith(name));
  if (!c) throw new Error(`no captured case ${name}`);
  return c;
};
const bytes = (hex: string): Buffer => Buffer.from(hex, 'hex');

/** The one set and op of a restore batch, and its members in order. */
function batchOf(input: string): { op: MemberOp; set: string; members: string[] } {
  const lines = input
    .trim()
    .split('\n')
    .map((l) => l.split(' '));
  return { op: lines[0]![0] as MemberOp, set: lines[0]![1]!, members: lines.map((l) => l.slice(2).join(' ')) };
}

describe('member requests, byte for byte as libipset builds them', () => {
  it.each([
    'restore hash:ip inet',
    'restore hash:ip inet6',
    'restore hash:net inet',
    'restore hash:net inet nomatch',
    'restore hash:net inet6',
    'restore hash:ip,port inet',
    'restore hash:ip,port inet6',
    'restore del hash:ip inet',
  ])('%s', (name) => {
    const c = captured(name);
    const { op, set, members } = batchOf(c.input!);
    const [request, ...more] = memberRequests(op, set, members);
    expect(more).toHaveLength(0);
    const sent = splitMessages(bytes(c.request))[0]!;
    expect(request!.type).toBe(sent.type);
    expect(request!.flags).toBe(sent.flags);
    expect(request!.payload.toString('hex')).toBe(sent.payload.toString('hex'));
    // and as a whole message, sequence number aside
    const whole = nlmsg(request!.type, request!.flags, sent.seq, request!.payload);
    expect(whole.toString('hex')).toBe(c.request);
  });

  it.each(['restore hash:ip inet timeout comment', 'restore hash:ip inet6 timeout comment'])(
    '%s: members with their own timeout and comment (learned sets)',
    (name) => {
      const c = captured(name);
      // `add t4 10.1.2.3 timeout 60 comment "1764000000 good.example"`
      const lines = c
        .input!.trim()
        .split('\n')
        .map((l) => /^add (\S+) (\S+) timeout (\d+) comment "([^"]*)"$/.exec(l)!);
      const members = lines.map((m) => ({ member: m[2]!, timeout: Number(m[3]), comment: m[4]! }));
      const [request, ...more] = memberRequests('add', lines[0]![1]!, members);
      expect(more).toHaveLength(0);
      const sent = splitMessages(bytes(c.request))[0]!;
      expect(nlmsg(request!.type, request!.flags, sent.seq, request!.payload).toString('hex')).toBe(c.request);
    },
  );

  it('refuses a timeout or comment the kernel would not take, before building anything', () => {
    expect(() => memberRequests('add', 't4', [{ member: '10.0.0.1', timeout: -1 }])).toThrow(IpsetMemberSyntaxError);
    expect(() => memberRequests('add', 't4', [{ member: '10.0.0.1', timeout: 1.5 }])).toThrow(IpsetMemberSyntaxError);
    expect(() => memberRequests('add', 't4', [{ member: '10.0.0.1', timeout: 60, comment: 'x'.repeat(256) }])).toThrow(
      IpsetMemberSyntaxError,
    );
    expect(() => memberRequests('add', 't4', [{ member: '10.0.0.1', timeout: 60, comment: 'a\0b' }])).toThrow(IpsetMemberSyntaxError);
    expect(memberRequests('add', 't4', [{ member: '10.0.0.1', timeout: 60, comment: 'x'.repeat(255) }])).toHaveLength(1);
  });

  it("one member's IPSET_ATTR_DATA is that of `ipset add` (which sends line number 0)", () => {
    const sent = splitMessages(bytes(captured('add one').request))[0]!;
    const payload = sent.payload.subarray(4);
    const data = payload.subarray(payload.indexOf(Buffer.from([0x18, 0x00, 0x07, 0x80])));
    expect(memberData('10.1.2.3', 0).toString('hex')).toBe(data.toString('hex'));
  });

  it.each(['10.0.0.1', '10.0.0.0/8', '10.0.0.1,tcp:80', 'fd00::1', 'fd00::/64', 'fd00::1,sctp:9', '10.0.0.0/24 nomatch'])(
    'a member (%s) reads back as it was written',
    (member) => {
      const data = parseAttributes(memberData(member, 7).subarray(4));
      expect(data.get(9)!.readUInt32BE(0)).toBe(7);
      const ip = parseAttributes(data.get(1)!);
      expect((ip.get(1) ?? ip.get(2))!.length).toBe(member.startsWith('fd') ? 16 : 4);
    },
  );

  it('splits a large batch into requests whose line numbers keep counting', () => {
    const members = Array.from({ length: 3000 }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    const requests = memberRequests('add', 'nf4s:big', members);
    expect(requests.length).toBeGreaterThan(1);
    expect(requests.reduce((n, r) => n + r.count, 0)).toBe(3000);
    for (const r of requests) {
      expect(r.payload.length).toBeLessThan(65535);
      const attrs = parseAttributes(r.payload.subarray(4));
      expect(attrs.get(9)!.readUInt32BE(0)).toBe(r.first + 1);
      const datas: Buffer[] = [];
      const adt = attrs.get(8)!;
      for (let off = 0; off < adt.length; off += (adt.readUInt16LE(off) + 3) & ~3)
        datas.push(adt.subarray(off + 4, off + adt.readUInt16LE(off)));
      expect(datas).toHaveLength(r.count);
      expect(parseAttributes(datas.at(-1)!).get(9)!.readUInt32BE(0)).toBe(r.first + r.count);
    }
  });

  it.each([
    '10.0.0.300',
    '10.0.0.0/33',
    'fd00::/129',
    '10.0.0.1,icmp:8',
    '10.0.0.1,tcp:70000',
    'example.com',
    '',
    '10.0.0',
    '10.0.0.1.2',
    '010.0.0.1x',
    '10..0.1',
  ])('refuses a malformed member (%s) before building anything', (member) => {
    expect(() => memberRequests('add', 'nf4s:x', ['10.0.0.1', member])).toThrow(IpsetMemberSyntaxError);
  });

  it('deletes a member saved with options by its element alone, as `ipset del` takes it', () => {
    const [del] = memberRequests('del', 'n4', ['10.30.0.0/16 nomatch']);
    const [plain] = memberRequests('del', 'n4', ['10.30.0.0/16']);
    expect(del!.payload.toString('hex')).toBe(plain!.payload.toString('hex'));
  });

  it('refuses a set name longer than the kernel keeps', () => {
    expect(() => memberRequests('add', 'x'.repeat(32), ['10.0.0.1'])).toThrow(IpsetMemberSyntaxError);
  });
});

describe('replies', () => {
  it('the protocol query is the one `ipset version` sends, and its reply gives 7 with 6 as the minimum', () => {
    const c = captured('protocol');
    expect(protocolRequest().toString('hex')).toBe(splitMessages(bytes(c.request))[0]!.payload.toString('hex'));
    expect(parseProtocolReply(splitMessages(bytes(c.replies[0]!))[0]!.payload)).toEqual({ max: 7, min: 6 });
  });

  it('an ACK is error 0', () => {
    const reply = splitMessages(bytes(captured('restore hash:ip inet').replies[0]!))[0]!;
    expect(reply.type).toBe(2);
    expect(parseError(reply.payload)).toEqual({ errno: 0 });
  });

  it('an error in the middle of a batch names the refused member by its line number', () => {
    const c = captured('error in the middle');
    expect(c.stderr).toMatch(/Error in line 2/);
    const reply = splitMessages(bytes(c.replies[0]!))[0]!;
    expect(parseError(reply.payload)).toEqual({ errno: 4104, lineno: 2 });
  });

  it('adding to a full set (maxelem reached) is IPSET_ERR_HASH_FULL', () => {
    const c = captured('add to a full set');
    expect(c.stderr).toMatch(/Hash is full/);
    expect(parseError(splitMessages(bytes(c.replies[0]!))[0]!.payload).errno).toBe(4352);
  });

  it('deleting an absent member without -exist is IPSET_ERR_EXIST; a missing set is ENOENT', () => {
    expect(parseError(splitMessages(bytes(captured('del of an absent').replies[0]!))[0]!.payload).errno).toBe(4103);
    expect(parseError(splitMessages(bytes(captured('add to a set that does not exist').replies[0]!))[0]!.payload).errno).toBe(2);
  });
});
