// The IP packet around a DNS message, as the kernel hands it over (a queued answer, a logged query): the
// addresses and ports that key a query to its answer, and the transport payload. Pure and bounds-checked like
// wire.ts: the packet is whatever a pod or a server sent, so every fault is a refusal with its reason.

import { ipFromBytes } from '../model/index.js';
import type { Parsed } from './wire.js';

const UDP = 17;
const TCP = 6;

export interface TcpHeader {
  /** Sequence number of the segment's first payload byte (after SYN: the initial sequence number itself). */
  readonly seq: number;
  readonly syn: boolean;
  readonly fin: boolean;
  readonly rst: boolean;
}

/** One UDP datagram or TCP segment: who sent it to whom, and its payload. */
export interface Segment {
  readonly family: 4 | 6;
  readonly protocol: 'udp' | 'tcp';
  readonly src: string;
  readonly dst: string;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly payload: Buffer;
  /** TCP only. */
  readonly tcp?: TcpHeader;
}

/**
 * An IPv4 or IPv6 packet (from its network header on) → its UDP or TCP segment. IPv4 fragments and IPv6
 * extension headers are refused: a DNS answer that arrives fragmented is released ungranted (the kernel's
 * conntrack defragments before the FORWARD hook, so fragments do not reach the queue in practice).
 */
export function parseSegment(p: Buffer): Parsed<Segment> {
  if (p.length < 1) return { ok: false, reason: 'empty packet' };
  const version = p[0]! >> 4;
  let family: 4 | 6;
  let protocol: number;
  let src: string;
  let dst: string;
  let at: number;
  let end: number;
  if (version === 4) {
    if (p.length < 20) return { ok: false, reason: `IPv4 packet of ${p.length} bytes` };
    at = (p[0]! & 0x0f) * 4;
    end = p.readUInt16BE(2);
    if (at < 20 || end < at || end > p.length) return { ok: false, reason: 'IPv4 header lengths do not fit the packet' };
    if ((p.readUInt16BE(6) & 0x3fff) !== 0) return { ok: false, reason: 'an IPv4 fragment' };
    family = 4;
    protocol = p[9]!;
    src = ipFromBytes(p.subarray(12, 16));
    dst = ipFromBytes(p.subarray(16, 20));
  } else if (version === 6) {
    if (p.length < 40) return { ok: false, reason: `IPv6 packet of ${p.length} bytes` };
    at = 40;
    end = 40 + p.readUInt16BE(4);
    if (end > p.length) return { ok: false, reason: 'IPv6 payload length does not fit the packet' };
    family = 6;
    protocol = p[6]!;
    src = ipFromBytes(p.subarray(8, 24));
    dst = ipFromBytes(p.subarray(24, 40));
  } else return { ok: false, reason: `IP version ${version}` };

  if (protocol === UDP) {
    if (end - at < 8) return { ok: false, reason: 'UDP header cut short' };
    const udpLength = p.readUInt16BE(at + 4);
    if (udpLength < 8 || at + udpLength > end) return { ok: false, reason: 'UDP length does not fit the packet' };
    return {
      ok: true,
      value: {
        family,
        protocol: 'udp',
        src,
        dst,
        srcPort: p.readUInt16BE(at),
        dstPort: p.readUInt16BE(at + 2),
        payload: p.subarray(at + 8, at + udpLength),
      },
    };
  }
  if (protocol === TCP) {
    if (end - at < 20) return { ok: false, reason: 'TCP header cut short' };
    const dataOffset = (p[at + 12]! >> 4) * 4;
    if (dataOffset < 20 || at + dataOffset > end) return { ok: false, reason: 'TCP data offset does not fit the packet' };
    const flags = p[at + 13]!;
    return {
      ok: true,
      value: {
        family,
        protocol: 'tcp',
        src,
        dst,
        srcPort: p.readUInt16BE(at),
        dstPort: p.readUInt16BE(at + 2),
        payload: p.subarray(at + dataOffset, end),
        tcp: { seq: p.readUInt32BE(at + 4), syn: (flags & 0x02) !== 0, fin: (flags & 0x01) !== 0, rst: (flags & 0x04) !== 0 },
      },
    };
  }
  return { ok: false, reason: `IP protocol ${protocol} is neither UDP nor TCP` };
}
