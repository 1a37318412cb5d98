// A NETLINK_NETFILTER socket that sends a batch of requests as one datagram and waits for one reply per
// request (matched by sequence number). The ipset writer speaks through it (ipset-netlink.ts).
//
// A netlink socket belongs to the network namespace of the process that opens it: in the daemon's own namespace
// the socket is opened here; for `--netns NAME` (tests, the sandbox, benchmarks) a small relay
// (netfilter-channel-worker.ts) is started once with `ip netns exec NAME` and the datagrams go to it as JSON
// lines, as for ctnetlink. Either way no process starts per request.

import { splitMessages } from './ipset-wire.js';
import { dataplaneModuleCommand, startJsonLineProcess } from './process.js';

const NETLINK_NETFILTER = 12;
/** An error reply echoes its request (up to ~16 KiB, ipset-wire.ts); leave room for a batch of them. */
const BUFFER_BYTES = 1 << 20;

/** A failure of the socket itself (not the kernel's answer to a request): EPERM, ENOBUFS, a timeout, a dead relay. */
export class NetfilterChannelError extends Error {
  override readonly name = 'NetfilterChannelError';
  constructor(
    message: string,
    /** The errno name (`EPERM`, `EPROTONOSUPPORT`, …) when the socket reported one. */
    readonly code?: string,
  ) {
    super(message);
  }
}

export interface NetfilterChannel {
  /**
   * Sends `messages` (whole netlink messages, each with its own sequence number `seqs[i]` and NLM_F_ACK) as one
   * datagram and resolves with each one's reply message (bytes, header included), in the order sent.
   */
  exchange(messages: readonly Buffer[], seqs: readonly number[], timeoutMs: number): Promise<Buffer[]>;
  close(): Promise<void>;
}

export interface ChannelOptions {
  /** Named network namespace; undefined: this process's own. */
  readonly netns?: string | undefined;
  readonly onStderr?: (line: string) => void;
}

export async function openNetfilterChannel(opts: ChannelOptions = {}): Promise<NetfilterChannel> {
  return opts.netns === undefined ? openInProcess() : openRelay(opts.netns, opts.onStderr);
}

interface Waiting {
  readonly seqs: ReadonlySet<number>;
  readonly replies: Map<number, Buffer>;
  readonly done: (err?: Error) => void;
}

/** The socket in this process's own network namespace. */
export async function openInProcess(): Promise<NetfilterChannel> {
  // Imported lazily: a missing native binding is this writer's start-up failure (and the fallback's reason).
  const { RawNetlinkSocket } = await import('netlink');
  let socket: InstanceType<typeof RawNetlinkSocket>;
  try {
    socket = new RawNetlinkSocket(NETLINK_NETFILTER, { recvBufferSize: BUFFER_BYTES, sendBufferSize: BUFFER_BYTES });
  } catch (err) {
    const e = err as Error & { code?: string };
    throw new NetfilterChannelError(`cannot open a NETLINK_NETFILTER socket: ${e.message}`, e.code);
  }
  // Unreferenced: a pending exchange's timer keeps the process alive, an idle socket does not.
  socket.unref();
  const waiting = new Set<Waiting>();
  socket.on('message', (datagram: Buffer) => {
    for (const reply of splitMessages(datagram)) {
      for (const w of waiting) {
        if (!w.seqs.has(reply.seq)) continue;
        w.replies.set(reply.seq, reply.raw);
        if (w.replies.size === w.seqs.size) w.done();
      }
    }
  });
  const failAll = (err: Error): void => {
    for (const w of waiting) w.done(err);
  };
  socket.on('error', (err: Error & { code?: string }) => failAll(new NetfilterChannelError(`netlink socket: ${err.message}`, err.code)));
  return {
    exchange(messages, seqs, timeoutMs) {
      return new Promise<Buffer[]>((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const w: Waiting = {
          seqs: new Set(seqs),
          replies: new Map(),
          done: (err) => {
            clearTimeout(timer);
            waiting.delete(w);
            if (err) reject(err);
            else resolve(seqs.map((s) => w.replies.get(s)!));
          },
        };
        waiting.add(w);
        timer = setTimeout(
          () => w.done(new NetfilterChannelError(`no reply from the kernel within ${timeoutMs} ms`, 'ETIMEDOUT')),
          timeoutMs,
        );
        socket.send(Buffer.concat(messages), {}, (err) => {
          if (err) w.done(new NetfilterChannelError(`sendmsg: ${err.message}`, err.code));
        });
      });
    },
    async close() {
      failAll(new NetfilterChannelError('netlink socket closed'));
      socket.close();
    },
  };
}

async function openRelay(netns: string, onStderr?: (line: string) => void): Promise<NetfilterChannel> {
  const { file, args } = dataplaneModuleCommand('netfilter-channel-worker');
  let proc;
  try {
    proc = await startJsonLineProcess({ file, args, netns, readyTimeoutMs: 20_000, ...(onStderr ? { onStderr } : {}) });
  } catch (err) {
    throw new NetfilterChannelError(`netlink relay in netns ${netns}: ${(err as Error).message}`);
  }
  const relay = proc;
  if (typeof relay.hello['error'] === 'string') {
    await relay.stop();
    throw new NetfilterChannelError(`netlink relay in netns ${netns}: ${relay.hello['error']}`, relay.hello['code'] as string | undefined);
  }
  return {
    async exchange(messages, seqs, timeoutMs) {
      let reply;
      try {
        reply = await relay.request(
          { op: 'exchange', messages: messages.map((m) => m.toString('base64')), seqs, timeoutMs },
          timeoutMs + 5000,
        );
      } catch (err) {
        throw new NetfilterChannelError(`netlink relay in netns ${netns}: ${(err as Error).message}`);
      }
      if (typeof reply['error'] === 'string') throw new NetfilterChannelError(reply['error'], reply['code'] as string | undefined);
      return (reply['replies'] as string[]).map((r) => Buffer.from(r, 'base64'));
    },
    async close() {
      await relay.stop();
    },
  };
}
