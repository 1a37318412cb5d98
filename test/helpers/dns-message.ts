// DNS messages and the IP packets around them, built for unit tests of the DNS agent (no compression, no
// checksums: the agent reads neither).

import { ipToBytes } from '../../src/model/index.js';

export interface TestRecord {
  readonly name: string;
  readonly type: 'A' | 'AAAA' | 'CNAME';
  readonly value: string;
  readonly ttl: number;
}

const TYPE = { A: 1, AAAA: 28, CNAME: 5 } as const;

const encodeName = (name: string): Buffer =>
  Buffer.concat([
    ...name
      .split('.')
      .filter(Boolean)
      .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
    Buffer.from([0]),
  ]);

const u16 = (n: number): Buffer => Buffer.from([n >> 8, n & 255]);
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

export function dnsMessage(opts: {
  id: number;
  response: boolean;
  name: string;
  type: 'A' | 'AAAA';
  rcode?: number;
  answers?: readonly TestRecord[];
}): Buffer {
  const answers = opts.answers ?? [];
  const flags = (opts.response ? 0x8180 : 0x0100) | (opts.rcode ?? 0);
  const header = Buffer.concat([u16(opts.id), u16(flags), u16(1), u16(answers.length), u16(0), u16(0)]);
  const question = Buffer.concat([encodeName(opts.name), u16(TYPE[opts.type]), u16(1)]);
  const records = answers.map((r) => {
    const data = r.type === 'CNAME' ? encodeName(r.value) : ipToBytes(r.value);
    return Buffer.concat([encodeName(r.name), u16(TYPE[r.type]), u16(1), u32(r.ttl), u16(data.length), data]);
  });
  return Buffer.concat([header, question, ...records]);
}

function ipHeader(src: string, dst: string, protocol: number, l4: Buffer): Buffer {
  const s = ipToBytes(src);
  if (s.length === 4) {
    const h = Buffer.alloc(20);
    h[0] = 0x45;
    h.writeUInt16BE(20 + l4.length, 2);
    h[8] = 64;
    h[9] = protocol;
    s.copy(h, 12);
    ipToBytes(dst).copy(h, 16);
    return Buffer.concat([h, l4]);
  }
  const h = Buffer.alloc(40);
  h[0] = 0x60;
  h.writeUInt16BE(l4.length, 4);
  h[6] = protocol;
  h[7] = 64;
  s.copy(h, 8);
  ipToBytes(dst).copy(h, 24);
  return Buffer.concat([h, l4]);
}

export function udpPacket(src: string, srcPort: number, dst: string, dstPort: number, payload: Buffer): Buffer {
  return ipHeader(src, dst, 17, Buffer.concat([u16(srcPort), u16(dstPort), u16(8 + payload.length), u16(0), payload]));
}

export function tcpPacket(
  src: string,
  srcPort: number,
  dst: string,
  dstPort: number,
  seq: number,
  flags: { syn?: boolean; fin?: boolean; ack?: boolean },
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const h = Buffer.alloc(20);
  h.writeUInt16BE(srcPort, 0);
  h.writeUInt16BE(dstPort, 2);
  h.writeUInt32BE(seq >>> 0, 4);
  h[12] = 5 << 4;
  h[13] = (flags.syn ? 0x02 : 0) | (flags.fin ? 0x01 : 0) | (flags.ack !== false ? 0x10 : 0);
  return ipHeader(src, dst, 6, Buffer.concat([h, payload]));
}

/** A DNS message with its two-byte TCP length prefix. */
export const tcpFramed = (message: Buffer): Buffer => Buffer.concat([u16(message.length), message]);
