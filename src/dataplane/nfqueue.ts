// One NFQUEUE over a raw NETLINK_NETFILTER socket (the `netlink` package): bind the queue, receive each
// queued packet, release it with a verdict. The socket belongs to the network namespace of the process
// that opens it (a test opens it in a child started with `ip netns exec`, as nflog-child.ts does).
//
// Fail open: `close()` releases every packet still held before it unbinds; from then on the iptables
// rule's `--queue-bypass` lets packets pass while no socket is bound, and NFQA_CFG_F_FAIL_OPEN accepts
// packets that arrive while the queue is full. Only a crash loses what was held at that instant: the
// kernel drops a destroyed queue's packets (nfqnl_flush with NF_DROP), so a held DNS answer is lost and
// the resolver's retry, no longer queued, passes.

import {
  bindRequest,
  configRequest,
  NFQNL_MSG_CONFIG,
  NFQNL_MSG_VERDICT,
  parsePacketMessage,
  unbindRequest,
  verdictRequest,
  type QueueConfig,
  type QueuedPacket,
} from './nfqueue-codec.js';

const NETLINK_NETFILTER = 12;
const NLMSG_ERROR = 2;
const NLM_F_REQUEST = 1;

export interface NfQueueOptions extends Partial<QueueConfig> {
  readonly queue: number;
  readonly onPacket: (packet: QueuedPacket) => void;
  /** Socket errors after start (ENOBUFS: the kernel dropped packet messages; those packets then wait for the queue to go away). */
  readonly onError?: (message: string) => void;
}

export interface NfQueue {
  /** Releases a held packet unchanged (an id not held, or already released, is ignored). */
  accept(packetId: number): void;
  /** Accepts every packet still held, then unbinds and closes. */
  close(): Promise<void>;
}

export class NfQueueBindError extends Error {
  override readonly name = 'NfQueueBindError';
}

/**
 * Defaults: the whole of a DNS-over-UDP packet (EDNS answers stay under 4096), a queue of 1024, fail open.
 * Conntrack state per packet is off: it needs a kernel built with CONFIG_NETFILTER_NETLINK_GLUE_CT, and the
 * rule that queues (`--ctstate ESTABLISHED --ctdir REPLY`) already admits only replies of established flows.
 */
const DEFAULTS: QueueConfig = { copyRange: 4096 + 64, maxLen: 1024, failOpen: true, conntrack: false };

/** Binds the queue in this process's network namespace; rejects (with nothing left open) if it cannot. */
export async function openNfQueue(opts: NfQueueOptions): Promise<NfQueue> {
  // Imported lazily so a missing native binding is an error of this feature, not of the daemon's start.
  const { createNetlink } = await import('netlink');
  const config: QueueConfig = {
    copyRange: opts.copyRange ?? DEFAULTS.copyRange,
    maxLen: opts.maxLen ?? DEFAULTS.maxLen,
    failOpen: opts.failOpen ?? DEFAULTS.failOpen,
    conntrack: opts.conntrack ?? DEFAULTS.conntrack,
  };
  const socket = createNetlink(NETLINK_NETFILTER, { ref: true, recvBufferSize: 1 << 22, sendBufferSize: 1 << 20 });
  socket.on('error', (err) => opts.onError?.(`${err.code ?? ''} ${err.message}`.trim()));
  // Ids the kernel holds for us, so close() can release them (a queue of maxLen at most).
  const held = new Set<number>();
  socket.on('message', (msgs) => {
    for (const msg of msgs) {
      if (msg.type === NLMSG_ERROR) {
        // A verdict is sent without asking for an ack; the kernel still answers one that failed (ENOENT: no such packet id).
        const errno = msg.data.length >= 4 ? -msg.data.readInt32LE(0) : 0;
        if (errno !== 0) opts.onError?.(`netlink error ${errno} on a queue ${opts.queue} message`);
        continue;
      }
      const packet = parsePacketMessage(msg.type, msg.data);
      if (!packet) continue;
      held.add(packet.id);
      opts.onPacket(packet);
    }
  });
  let step = 'bind';
  try {
    await socket.request(NFQNL_MSG_CONFIG, bindRequest(opts.queue), { timeout: 5000 });
    step = 'configure';
    await socket.request(NFQNL_MSG_CONFIG, configRequest(opts.queue, config), { timeout: 5000 });
  } catch (err) {
    socket.close();
    throw new NfQueueBindError(bindFailure(opts.queue, step, config, err as Error & { code?: string }));
  }
  let open = true;
  const accept = (packetId: number): void => {
    if (!open || !held.delete(packetId)) return;
    socket.send(NFQNL_MSG_VERDICT, verdictRequest(opts.queue, packetId, 'accept'), { flags: NLM_F_REQUEST }, (err) => {
      if (err) opts.onError?.(`verdict for packet ${packetId}: ${err.message}`);
    });
  };
  return {
    accept,
    async close() {
      if (!open) return;
      for (const id of [...held]) accept(id);
      open = false;
      await socket.request(NFQNL_MSG_CONFIG, unbindRequest(opts.queue), { timeout: 1000 }).catch(() => undefined);
      socket.close();
    },
  };
}

function bindFailure(queue: number, step: string, config: QueueConfig, err: Error & { code?: string }): string {
  const text = `${err.code ?? ''} ${err.message}`.trim();
  // The kernel answers EOPNOTSUPP to NFQA_CFG_F_CONNTRACK when it has no conntrack glue for queues.
  if (step === 'configure' && config.conntrack && /ENOTSUP|EOPNOTSUPP|not supported/i.test(text))
    return `NFQUEUE ${queue}: this kernel cannot report conntrack state to queues (CONFIG_NETFILTER_NETLINK_GLUE_CT): ${text}`;
  // EBUSY: another socket holds the queue; EPERM: no CAP_NET_ADMIN.
  return `cannot ${step} NFQUEUE ${queue}: ${text}`;
}
