// Request and reply by sequence number over a netlink socket whose other messages (queued and logged packets)
// arrive on the same socket: each request's first reply resolves it, and each has its own deadline.

import { NetfilterChannelError } from './netfilter-channel.js';

/** Where the socket's reader hands a reply for a sequence number that is waited for. */
export type WaitingReplies = Map<number, (reply: Buffer) => void>;

/**
 * The exchange of a socket that delivers replies to `waiting` and sends with `send`: resolves with each
 * sequence number's first reply, in order; rejects when the send fails or a reply is late.
 */
export function seqExchange(
  waiting: WaitingReplies,
  send: (messages: readonly Buffer[]) => Promise<void>,
): (messages: readonly Buffer[], seqs: readonly number[], timeoutMs: number) => Promise<Buffer[]> {
  return async (messages, seqs, timeoutMs) => {
    const timers: NodeJS.Timeout[] = [];
    const replies = seqs.map(
      (s) =>
        new Promise<Buffer>((resolve, reject) => {
          const timer = setTimeout(() => {
            waiting.delete(s);
            reject(new NetfilterChannelError(`no reply from the kernel within ${timeoutMs} ms`, 'ETIMEDOUT'));
          }, timeoutMs);
          timers.push(timer);
          waiting.set(s, (reply) => {
            clearTimeout(timer);
            resolve(reply);
          });
        }),
    );
    await send(messages).catch((err: Error & { code?: string }) => {
      // Nothing will wait for these replies: their deadlines go too, or each would later reject a promise no
      // one holds (an unhandled rejection ends the process).
      for (const t of timers) clearTimeout(t);
      for (const s of seqs) waiting.delete(s);
      throw new NetfilterChannelError(`sendmsg: ${err.message}`, err.code);
    });
    return Promise.all(replies);
  };
}
