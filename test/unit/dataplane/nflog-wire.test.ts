// nfnetlink_log bytes: the bind/mode requests as the kernel's structs lay them out, and packet messages
// built here byte by byte (the kernel-made ones are parsed in test/kernel/flow-log.test.ts).

import {
  bindRequest,
  modeRequest,
  NFULNL_MSG_CONFIG,
  NFULNL_MSG_PACKET,
  parseIpHeader,
  parseNflogMessage,
} from '../../../src/dataplane/nflog-wire.js';

const attr = (type: number, value: Buffer): Buffer => {
  const len = 4 + value.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  value.copy(b, 4);
  return b;
};

function ipv4Tcp(src: number[], dst: number[], sport: number, dport: number): Buffer {
  const p = Buffer.alloc(40);
  p[0] = 0x45;
  p[9] = 6;
  Buffer.from(src).copy(p, 12);
  Buffer.from(dst).copy(p, 16);
  p.writeUInt16BE(sport, 20);
  p.writeUInt16BE(dport, 22);
  return p;
}

describe('nfnetlink_log requests', () => {
  it('message types are NFNL_SUBSYS_ULOG (4) << 8 | PACKET (0) / CONFIG (1)', () => {
    expect([NFULNL_MSG_PACKET, NFULNL_MSG_CONFIG]).toEqual([0x400, 0x401]);
  });

  it('bind: nfgenmsg(AF_UNSPEC, v0, group big-endian) + NFULA_CFG_CMD(BIND)', () => {
    expect([...bindRequest(0x1234)]).toEqual([0, 0, 0x12, 0x34, 5, 0, 1, 0, 1, 0, 0, 0]);
  });

  it('mode: packed copy range (be32) and COPY_PACKET, then queue threshold 1 and no flush timeout', () => {
    const b = modeRequest(7, 128);
    expect([...b.subarray(0, 4)]).toEqual([0, 0, 0, 7]);
    expect([...b.subarray(4, 16)]).toEqual([10, 0, 2, 0, 0, 0, 0, 128, 2, 0, 0, 0]);
    expect([...b.subarray(16, 24)]).toEqual([8, 0, 5, 0, 0, 0, 0, 1]);
  });
});

describe('parseNflogMessage', () => {
  const body = (attrs: Buffer[], group = 9476): Buffer => Buffer.concat([Buffer.from([2, 0, group >> 8, group & 0xff]), ...attrs]);

  it('reads group, prefix, interfaces, the kernel timestamp and the IPv4/TCP header', () => {
    const ts = Buffer.alloc(16);
    ts.writeBigUInt64BE(1_700_000_000n, 0);
    ts.writeBigUInt64BE(250_000n, 8);
    const idx = (n: number): Buffer => Buffer.from([0, 0, 0, n]);
    const msg = body([
      attr(1, Buffer.from([0x08, 0x00, 3, 0])),
      attr(10, Buffer.from('nf:iso:nf-tw-abc\0')),
      attr(3, ts),
      attr(4, idx(3)),
      attr(5, idx(4)),
      attr(9, ipv4Tcp([10, 244, 2, 5], [10, 244, 1, 7], 40000, 80)),
    ]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg)).toEqual({
      group: 9476,
      prefix: 'nf:iso:nf-tw-abc',
      time: 1_700_000_000_250,
      inIfindex: 3,
      outIfindex: 4,
      ip: { family: 4, src: '10.244.2.5', dst: '10.244.1.7', protocol: 6, srcPort: 40000, dstPort: 80 },
    });
  });

  it('takes the reading time when the kernel sent no timestamp, and ignores other message types', () => {
    const msg = body([attr(10, Buffer.from('p\0'))]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg, () => 42)).toEqual({ group: 9476, prefix: 'p', time: 42 });
    expect(parseNflogMessage(NFULNL_MSG_CONFIG, msg)).toBeUndefined();
  });

  it('stops at a truncated attribute instead of reading past the message', () => {
    const msg = Buffer.concat([body([attr(10, Buffer.from('ok\0'))]), Buffer.from([40, 0, 9, 0, 1, 2])]);
    expect(parseNflogMessage(NFULNL_MSG_PACKET, msg, () => 1)).toEqual({ group: 9476, prefix: 'ok', time: 1 });
  });
});

describe('parseIpHeader', () => {
  it('IPv6 UDP, with the address in RFC 5952 text', () => {
    const p = Buffer.alloc(48);
    p[0] = 0x60;
    p[6] = 17;
    Buffer.from('fd000000000000000000000000000001', 'hex').copy(p, 8);
    Buffer.from('fd000001000200000000000000000000', 'hex').copy(p, 24);
    p.writeUInt16BE(5353, 40);
    p.writeUInt16BE(53, 42);
    expect(parseIpHeader(p, 0x86dd)).toEqual({ family: 6, src: 'fd00::1', dst: 'fd00:1:2::', protocol: 17, srcPort: 5353, dstPort: 53 });
  });

  it('no ports for ICMP or a non-first fragment; nothing for a short or foreign payload', () => {
    const icmp = ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 0, 0);
    icmp[9] = 1;
    expect(parseIpHeader(icmp)).toEqual({ family: 4, src: '1.2.3.4', dst: '5.6.7.8', protocol: 1 });
    const frag = ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
    frag.writeUInt16BE(100, 6);
    expect(parseIpHeader(frag)).toEqual({ family: 4, src: '1.2.3.4', dst: '5.6.7.8', protocol: 6 });
    expect(parseIpHeader(Buffer.from([0x45, 0]))).toBeUndefined();
    expect(parseIpHeader(ipv4Tcp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2), 0x86dd)).toBeUndefined();
  });
});
