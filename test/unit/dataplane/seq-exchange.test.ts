// The DNS agent's socket exchange (dataplane/seq-exchange.ts): replies by sequence number, each with a deadline;
// a failed send must leave nothing behind that fires later (a late rejection nobody holds ends the process).

import { jest } from '@jest/globals';
import { NetfilterChannelError } from '../../../src/dataplane/netfilter-channel.js';
import { seqExchange, type WaitingReplies } from '../../../src/dataplane/seq-exchange.js';

describe('seqExchange', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('resolves each sequence number with its first reply, in the order asked', async () => {
    const waiting: WaitingReplies = new Map();
    const exchange = seqExchange(waiting, async () => {
      // The kernel answers out of order (the socket's reader hands each reply to its number's waiter).
      waiting.get(8)!(Buffer.from('b'));
      waiting.get(7)!(Buffer.from('a'));
    });
    const replies = await exchange([Buffer.from('x')], [7, 8], 1000);
    expect(replies.map((b) => b.toString())).toEqual(['a', 'b']);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('rejects a late reply with ETIMEDOUT and stops waiting for it', async () => {
    const waiting: WaitingReplies = new Map();
    const exchange = seqExchange(waiting, async () => undefined);
    const pending = exchange([Buffer.from('x')], [3], 500);
    const outcome = expect(pending).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    await jest.advanceTimersByTimeAsync(500);
    await outcome;
    expect(waiting.size).toBe(0);
  });

  it('a failed send rejects at once and leaves no deadline running and nothing waiting', async () => {
    const waiting: WaitingReplies = new Map();
    const failing = Object.assign(new Error('No buffer space available'), { code: 'ENOBUFS' });
    const exchange = seqExchange(waiting, () => Promise.reject(failing));
    const err = await exchange([Buffer.from('x'), Buffer.from('y')], [1, 2], 5000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetfilterChannelError);
    expect(err).toMatchObject({ code: 'ENOBUFS', message: 'sendmsg: No buffer space available' });
    expect(waiting.size).toBe(0);
    // Each deadline left running would reject, 5 s later, a promise nothing awaits.
    expect(jest.getTimerCount()).toBe(0);
  });
});
