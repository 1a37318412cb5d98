// `ip netns exec NS node --import scripts/register-ts.mjs test/helpers/nfqueue-holder.ts QUEUE [MAXLEN]`: binds
// NFQUEUE QUEUE (holding at most MAXLEN packets) inside that namespace (a netlink socket belongs to the namespace of the process that opens it) and
// holds every packet until the test says otherwise, over JSON lines:
//   out: {"ready":true}, then {"packet":{id, ctinfo, hook, src, dst, srcPort, dstPort, text}} per queued packet
//   in:  {"id", "op":"accept", "packet":N} → {"id"}; {"id", "op":"close"} → {"id"} (unbinds; the process stays)
// It ends when its stdin closes.

import { createInterface } from 'node:readline';
import { parseIpHeader } from '../../src/dataplane/nflog-wire.js';
import { openNfQueue } from '../../src/dataplane/nfqueue.js';

const queueNum = Number(process.argv[2]);
const maxLen = process.argv[3] === undefined ? undefined : Number(process.argv[3]);
const write = (obj: unknown): void => void process.stdout.write(`${JSON.stringify(obj)}\n`);

const queue = await openNfQueue({
  queue: queueNum,
  ...(maxLen === undefined ? {} : { maxLen }),
  onPacket: (p) => {
    const ip = parseIpHeader(p.payload);
    // The UDP payload of an IPv4 packet without options: what the test's peers send is text.
    const text = ip?.family === 4 && ip.protocol === 17 ? p.payload.subarray((p.payload[0]! & 0x0f) * 4 + 8).toString() : undefined;
    write({ packet: { id: p.id, ctinfo: p.ctinfo, hook: p.hook, ...ip, text } });
  },
  onError: (error) => write({ error }),
});
write({ ready: true });
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const req = JSON.parse(line) as { id: number; op: string; packet?: number };
  if (req.op === 'accept') queue.accept(req.packet ?? -1);
  if (req.op === 'close') void queue.close().then(() => write({ id: req.id }));
  else write({ id: req.id });
});
lines.on('close', () => void queue.close().then(() => process.exit(0)));
