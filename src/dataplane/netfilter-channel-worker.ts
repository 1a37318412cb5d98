// Runs inside another network namespace (`ip netns exec NAME node netfilter-channel-worker.js`) and relays
// datagrams to that namespace's NETLINK_NETFILTER socket over JSON lines:
// `{ id, op: 'exchange', messages: base64[], seqs, timeoutMs }` → `{ id, replies: base64[] }`, errors as
// `{ id, error, code }`. The first line is `{ ready: true }`, or `{ ready: true, error, code }` when the socket
// cannot be opened. It exits when stdin closes.

import { createInterface } from 'node:readline';
import { NetfilterChannelError, openInProcess, type NetfilterChannel } from './netfilter-channel.js';

const write = (message: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

let channel: NetfilterChannel | undefined;
try {
  channel = await openInProcess();
  write({ ready: true });
} catch (err) {
  write({ ready: true, error: (err as Error).message, code: (err as NetfilterChannelError).code });
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let request: { id?: number; op?: string; messages?: string[]; seqs?: number[]; timeoutMs?: number };
  try {
    request = JSON.parse(line) as typeof request;
  } catch {
    process.stderr.write(`unparsable request: ${line.slice(0, 200)}\n`);
    return;
  }
  const { id } = request;
  const answer = async (): Promise<Record<string, unknown>> => {
    if (request.op !== 'exchange' || !channel) throw new Error(`unknown op ${String(request.op)}`);
    const replies = await channel.exchange(
      (request.messages ?? []).map((m) => Buffer.from(m, 'base64')),
      request.seqs ?? [],
      request.timeoutMs ?? 10_000,
    );
    return { replies: replies.map((r) => r.toString('base64')) };
  };
  answer().then(
    (reply) => write({ id, ...reply }),
    (err: NetfilterChannelError) => write({ id, error: err.message, ...(err.code ? { code: err.code } : {}) }),
  );
});
lines.on('close', () => {
  void (channel?.close() ?? Promise.resolve()).then(() => process.exit(0));
});
