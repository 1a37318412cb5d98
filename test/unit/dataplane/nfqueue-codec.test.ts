// nfnetlink_queue bytes: the requests as the kernel's structs lay them out (nfnetlink_queue.h), a packet
// message the kernel sent (fixtures/nfqueue-packet.json, recorded by scripts/bench-nfqueue-hold.ts
// --capture), and the attributes that kernel did not send (conntrack info, capture length) built by hand.

import { readFileSync } from 'node:fs';
import {
  bindRequest,
  configRequest,
  IP_CT_ESTABLISHED_REPLY,
  NFQNL_MSG_CONFIG,
  NFQNL_MSG_PACKET,
  NFQNL_MSG_VERDICT,
  parsePacketMessage,
  unbindRequest,
  verdictRequest,
} from '../../../src/dataplane/nfqueue-codec.js';
import { parseIpHeader } from '../../../src/dataplane/nflog-wire.js';

const fixture = JSON.parse(readFileSync(new URL('./fixtures/nfqueue-packet.json', import.meta.url), 'utf8')) as {
  type: number;
  hex: string;
};

const attr = (type: number, value: Buffer): Buffer => {
  const len = 4 + value.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  value.copy(b, 4);
  return b;
};
const be32 = (n: number): Buffer => Buffer.from([(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);

describe('nfnetlink_queue requests', () => {
  it('message types are NFNL_SUBSYS_QUEUE (3) << 8 | PACKET (0) / VERDICT (1) / CONFIG (2)', () => {
    expect([NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG]).toEqual([0x300, 0x301, 0x302]);
  });

  it('bind and unbind: nfgenmsg(AF_UNSPEC, v0, queue big-endian) + NFQA_CFG_CMD { command, pad, be16 pf }', () => {
    expect([...bindRequest(0x0102)]).toEqual([0, 0, 1, 2, 8, 0, 1, 0, 1, 0, 0, 0]);
    expect([...unbindRequest(7)]).toEqual([0, 0, 0, 7, 8, 0, 1, 0, 2, 0, 0, 0]);
  });

  it('config: packed params { be32 copy_range, u8 COPY_PACKET }, maxlen, then flags under their mask', () => {
    const b = configRequest(7, { copyRange: 4160, maxLen: 1024, failOpen: true, conntrack: false });
    expect([...b]).toEqual([
      ...[0, 0, 0, 7],
      ...[9, 0, 2, 0, 0, 0, 0x10, 0x40, 2, 0, 0, 0], // NFQA_CFG_PARAMS: len 9 (padded to 12)
      ...[8, 0, 3, 0, 0, 0, 4, 0], // NFQA_CFG_QUEUE_MAXLEN 1024
      ...[8, 0, 4, 0, 0, 0, 0, 3], // NFQA_CFG_MASK: FAIL_OPEN | CONNTRACK
      ...[8, 0, 5, 0, 0, 0, 0, 1], // NFQA_CFG_FLAGS: FAIL_OPEN
    ]);
    const both = configRequest(7, { copyRange: 0, maxLen: 0, failOpen: true, conntrack: true });
    expect([...both.subarray(both.length - 4)]).toEqual([0, 0, 0, 3]);
  });

  it('verdict: NFQA_VERDICT_HDR { be32 verdict (NF_ACCEPT 1, NF_DROP 0), be32 id }', () => {
    expect([...verdictRequest(7, 0x01020304, 'accept')]).toEqual([0, 0, 0, 7, 12, 0, 2, 0, 0, 0, 0, 1, 1, 2, 3, 4]);
    expect([...verdictRequest(7, 9, 'drop').subarray(8, 12)]).toEqual([0, 0, 0, 0]);
  });
});

describe('packet messages', () => {
  it('a message the kernel sent: id, ethertype, hook, the whole packet', () => {
    const p = parsePacketMessage(fixture.type, Buffer.from(fixture.hex, 'hex'));
    expect(p).toMatchObject({ queue: 5, id: 1, hwProtocol: 0x0800, hook: 3 });
    expect(p?.ctinfo).toBeUndefined();
    expect(parseIpHeader(p!.payload)).toEqual({
      family: 4,
      src: '127.0.0.1',
      dst: '127.0.0.1',
      protocol: 17,
      srcPort: 53,
      dstPort: expect.any(Number),
    });
    expect(p!.payload.subarray(28).toString()).toBe('netfence hold floor');
  });

  it('conntrack info, mark and capture length when the kernel sends them (NFQA_CFG_F_CONNTRACK, a cut copy)', () => {
    const hdr = Buffer.from([0, 0, 0, 42, 0x86, 0xdd, 1]);
    const body = Buffer.concat([
      Buffer.from([10, 0, 0, 9]),
      attr(1, hdr),
      attr(3, be32(0x4000)),
      attr(10, Buffer.alloc(40)),
      attr(0x8000 | 11, attr(1, Buffer.alloc(4))), // NFQA_CT, nested: its flag is masked off, its contents ignored
      attr(12, be32(IP_CT_ESTABLISHED_REPLY)),
      attr(13, be32(1500)),
    ]);
    expect(parsePacketMessage(NFQNL_MSG_PACKET, body)).toEqual({
      queue: 9,
      id: 42,
      hwProtocol: 0x86dd,
      hook: 1,
      payload: Buffer.alloc(40),
      capturedLength: 1500,
      mark: 0x4000,
      ctinfo: IP_CT_ESTABLISHED_REPLY,
    });
  });

  it('anything else is not a packet: another type, a cut body, no or a short packet header', () => {
    const body = Buffer.from(fixture.hex, 'hex');
    expect(parsePacketMessage(NFQNL_MSG_CONFIG, body)).toBeUndefined();
    expect(parsePacketMessage(NFQNL_MSG_PACKET, body.subarray(0, 3))).toBeUndefined();
    expect(parsePacketMessage(NFQNL_MSG_PACKET, Buffer.from([0, 0, 0, 1]))).toBeUndefined();
    expect(parsePacketMessage(NFQNL_MSG_PACKET, Buffer.concat([Buffer.from([0, 0, 0, 1]), attr(1, Buffer.alloc(6))]))).toBeUndefined();
    // Cut inside an attribute: the attributes before the cut are read, the cut one is not.
    expect(parsePacketMessage(NFQNL_MSG_PACKET, body.subarray(0, body.length - 5))).toMatchObject({ id: 1, payload: Buffer.alloc(0) });
  });
});
