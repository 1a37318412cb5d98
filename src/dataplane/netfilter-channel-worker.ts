// Runs inside another network namespace (`ip netns exec NAME node netfilter-channel-worker.js`) and relays
// datagrams to that namespace's NETLINK_NETFILTER socket over JSON lines:
// `{ id, op: 'exchange', messages: base64[], seqs, timeoutMs }` → `{ id, replies: base64[] }`, errors as
// `{ id, error, code }`. The first line is `{ ready: true }`, or `{ ready: true, error, code }` when the socket
// cannot be opened. It exits when stdin closes.

import { serveJsonLines, writeLine } from './json-line-worker.js';
import { NetfilterChannelError, openInProcess, type NetfilterChannel } from './netfilter-channel.js';

let channel: NetfilterChannel | undefined;
try {
  channel = await openInProcess();
  writeLine({ ready: true });
} catch (err) {
  writeLine({ ready: true, error: (err as Error).message, code: (err as NetfilterChannelError).code });
}

serveJsonLines(
  async (request) => {
    if (request.op !== 'exchange' || !channel) throw new Error(`unknown op ${String(request.op)}`);
    const replies = await channel.exchange(
      ((request['messages'] as string[] | undefined) ?? []).map((m) => Buffer.from(m, 'base64')),
      (request['seqs'] as number[] | undefined) ?? [],
      (request['timeoutMs'] as number | undefined) ?? 10_000,
    );
    return { replies: replies.map((r) => r.toString('base64')) };
  },
  () => channel?.close() ?? Promise.resolve(),
);
