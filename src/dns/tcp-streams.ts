// DNS over TCP, per flow direction: each direction's in-order payload through its own DnsTcpFramer. A stream is
// followed only from its SYN (the framing starts at the first byte), and a segment that is not the next in
// sequence (a retransmit, a reorder) is read as nothing: it is still released, and grants nothing. Bounded: past
// `maxStreams` the oldest stream is forgotten (its later messages then grant nothing).

import { DnsTcpFramer, type Parsed } from './wire.js';
import type { Segment } from './packet.js';

interface Stream {
  next: number;
  readonly framer: DnsTcpFramer;
  lastSeen: number;
}

const IDLE_MS = 30_000;

export class TcpStreams {
  private readonly streams = new Map<string, Stream>();

  constructor(private readonly maxStreams = 4096) {}

  get size(): number {
    return this.streams.size;
  }

  /** The whole DNS messages this segment completes, or why it is not read. */
  push(s: Segment, now: number): Parsed<Buffer[]> {
    const tcp = s.tcp!;
    const key = `${s.src}|${s.srcPort}|${s.dst}|${s.dstPort}`;
    if (tcp.rst) {
      this.streams.delete(key);
      return { ok: true, value: [] };
    }
    if (tcp.syn) {
      this.streams.delete(key);
      this.evict(now);
      this.streams.set(key, { next: (tcp.seq + 1) >>> 0, framer: new DnsTcpFramer(), lastSeen: now });
      return { ok: true, value: [] };
    }
    const stream = this.streams.get(key);
    if (tcp.fin) this.streams.delete(key);
    if (s.payload.length === 0) return { ok: true, value: [] };
    if (!stream) return { ok: false, reason: 'a TCP stream whose start was not seen' };
    if (tcp.seq !== stream.next) return { ok: false, reason: 'a TCP segment out of sequence' };
    stream.next = (stream.next + s.payload.length) >>> 0;
    stream.lastSeen = now;
    const messages = stream.framer.push(s.payload);
    if (!messages.ok) this.streams.delete(key);
    return messages;
  }

  private evict(now: number): void {
    if (this.streams.size < this.maxStreams) return;
    for (const [k, st] of this.streams) if (now - st.lastSeen > IDLE_MS) this.streams.delete(k);
    while (this.streams.size >= this.maxStreams) this.streams.delete(this.streams.keys().next().value!);
  }
}
