// The DNS agent's one NETLINK_NETFILTER socket (docs/dns-egress-design.md): it binds the NFQUEUE the answers are
// held on and the NFLOG group the queries are copied to, and writes the learned set members over the same socket.
// One socket delivers in order, and nfnetlink_log sends at hook time (queue threshold 1), so a query's log message
// is read before its answer's queue message: no race between the two. An answer is released only by `grant`
// (after its adds are acknowledged, or at the deadline) or `release`; `close()` releases every held answer before
// it unbinds (the kernel drops what a destroyed queue still holds).
//
// A netlink socket belongs to the network namespace of the process that opens it: for `--netns NAME` (tests,
// the sandbox) a small worker (dns-socket-worker.ts) opens it inside that namespace with `ip netns exec`, does the
// grant (adds, then verdict) there, and relays packets and grants as JSON lines, two pipe hops per answer.

import { openIpsetNetlink, IpsetNetlinkError, type IpsetNetlink, type SetMembersChange } from './ipset-netlink.js';
import { NLMSG_ERROR, nlmsg, parseError, splitMessages } from './ipset-wire.js';
import type { NetfilterChannel } from './netfilter-channel.js';
import { seqExchange, type WaitingReplies } from './seq-exchange.js';
import { bindRequest as logBind, modeRequest, NFULNL_MSG_CONFIG, nflogPayload, unbindRequest as logUnbind } from './nflog-wire.js';
import {
  bindRequest as queueBind,
  configRequest,
  NFQNL_MSG_CONFIG,
  NFQNL_MSG_VERDICT,
  parsePacketMessage,
  unbindRequest as queueUnbind,
  verdictRequest,
} from './nfqueue-codec.js';
import { dataplaneModuleCommand, startJsonLineProcess } from './process.js';

const NETLINK_NETFILTER = 12;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
/** Whole packets: a DNS message over TCP may be up to 64 KiB, over UDP with EDNS a few KiB. */
const COPY_RANGE = 0xffff;
/** The kernel holds at most this many answers for us; past it they pass unheld (NFQA_CFG_F_FAIL_OPEN). */
const QUEUE_MAXLEN = 1024;
const IPSET_HASH_FULL = 4352;

export interface DnsSocketOptions {
  readonly queue: number;
  readonly nflogGroup: number;
  readonly netns?: string | undefined;
  /** How many answers the kernel holds at most (default 1024); past it they pass unheld (fail open). */
  readonly maxLen?: number;
  /** A held answer (the packet from its network header on); release it with grant or release. */
  readonly onAnswer: (packetId: number, packet: Buffer) => void;
  /** A logged query (the packet from its network header on). */
  readonly onQuery: (packet: Buffer) => void;
  /** Socket errors after start (ENOBUFS: the kernel dropped messages; their answers wait for the queue to go). */
  readonly onError: (message: string) => void;
}

/** How a grant ended: the answer is released in every case. */
export type GrantOutcome =
  | { readonly ok: true }
  /** `full`: a set's maxelem was reached; `deadline`: no acknowledgement in time; `error`: anything else. */
  | { readonly ok: false; readonly kind: 'full' | 'deadline' | 'error'; readonly message: string };

export interface DnsSocket {
  /** The worker's pid under `--netns`. */
  readonly pid?: number;
  /** Adds the members (one batched, acknowledged write), then releases the answer; at the deadline it is released anyway. */
  grant(packetId: number, changes: readonly SetMembersChange[], deadlineMs: number): Promise<GrantOutcome>;
  /** Releases a held answer unchanged, granting nothing. */
  release(packetId: number): void;
  /** Releases every held answer, then unbinds both and closes. */
  close(): Promise<void>;
}

export class DnsSocketBindError extends Error {
  override readonly name = 'DnsSocketBindError';
}

export async function openDnsSocket(opts: DnsSocketOptions): Promise<DnsSocket> {
  return opts.netns === undefined ? openInProcess(opts) : openInNetns(opts, opts.netns);
}

/** The socket in this process's own network namespace. */
export async function openInProcess(opts: Omit<DnsSocketOptions, 'netns'>): Promise<DnsSocket> {
  const { RawNetlinkSocket } = await import('netlink');
  let socket: InstanceType<typeof RawNetlinkSocket>;
  try {
    socket = new RawNetlinkSocket(NETLINK_NETFILTER, { recvBufferSize: 1 << 22, sendBufferSize: 1 << 20 });
  } catch (err) {
    throw new DnsSocketBindError(`cannot open a NETLINK_NETFILTER socket: ${(err as Error).message}`);
  }
  let seq = 1;
  const nextSeq = (): number => (seq = (seq % 0x7fffffff) + 1);
  const waiting: WaitingReplies = new Map();
  const held = new Set<number>();
  socket.on('message', (datagram: Buffer) => {
    for (const m of splitMessages(datagram)) {
      // A request's first reply (a data reply such as the ipset protocol's, or the ACK); the kernel's own
      // messages (queued and logged packets) carry sequence number 0, which no request uses.
      const w = m.seq !== 0 ? waiting.get(m.seq) : undefined;
      if (w) {
        waiting.delete(m.seq);
        w(m.raw);
        continue;
      }
      if (m.type === NLMSG_ERROR) {
        // A verdict is sent without an ack; the kernel still answers one that failed.
        const { errno } = parseError(m.payload);
        if (errno !== 0) opts.onError(`netlink error ${errno} on an unacknowledged message`);
        continue;
      }
      const packet = parsePacketMessage(m.type, m.payload);
      if (packet) {
        held.add(packet.id);
        opts.onAnswer(packet.id, packet.payload);
        continue;
      }
      const logged = nflogPayload(m.type, m.payload);
      if (logged) opts.onQuery(logged);
    }
  });
  socket.on('error', (err: Error & { code?: string }) => opts.onError(`netlink socket: ${err.code ?? ''} ${err.message}`.trim()));

  const send = (messages: readonly Buffer[]): Promise<void> =>
    new Promise((resolve, reject) => socket.send(Buffer.concat(messages), {}, (err) => (err ? reject(err) : resolve())));
  const exchange = seqExchange(waiting, send);
  const request = async (type: number, payload: Buffer, what: string): Promise<void> => {
    const s = nextSeq();
    const [reply] = await exchange([nlmsg(type, NLM_F_REQUEST | NLM_F_ACK, s, payload)], [s], 5000);
    const { errno } = parseError(splitMessages(reply!)[0]!.payload);
    // EBUSY: another socket holds the queue; EPERM: no CAP_NET_ADMIN, or another socket reads the group.
    if (errno !== 0) throw new DnsSocketBindError(`cannot ${what}: errno ${errno}`);
  };
  const channel: NetfilterChannel = { exchange, close: async () => undefined };

  let ipset: IpsetNetlink;
  try {
    await request(NFQNL_MSG_CONFIG, queueBind(opts.queue), `bind NFQUEUE ${opts.queue}`);
    await request(
      NFQNL_MSG_CONFIG,
      configRequest(opts.queue, { copyRange: COPY_RANGE, maxLen: opts.maxLen ?? QUEUE_MAXLEN, failOpen: true, conntrack: false }),
      `configure NFQUEUE ${opts.queue}`,
    );
    await request(NFULNL_MSG_CONFIG, logBind(opts.nflogGroup), `bind NFLOG group ${opts.nflogGroup}`);
    await request(NFULNL_MSG_CONFIG, modeRequest(opts.nflogGroup, COPY_RANGE), `configure NFLOG group ${opts.nflogGroup}`);
    ipset = await openIpsetNetlink({ channel: async () => channel });
  } catch (err) {
    socket.close();
    throw err instanceof DnsSocketBindError ? err : new DnsSocketBindError((err as Error).message);
  }

  let open = true;
  let closing: Promise<void> | undefined;
  const release = (packetId: number): void => {
    if (!open || !held.delete(packetId)) return;
    socket.send(nlmsg(NFQNL_MSG_VERDICT, NLM_F_REQUEST, nextSeq(), verdictRequest(opts.queue, packetId, 'accept')), {}, (err) => {
      if (err) opts.onError(`verdict for answer ${packetId}: ${err.message}`);
    });
  };
  return {
    release,
    async grant(packetId, changes, deadlineMs) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<GrantOutcome>((resolve) => {
        timer = setTimeout(
          () => resolve({ ok: false, kind: 'deadline', message: `no acknowledgement within ${deadlineMs} ms` }),
          deadlineMs,
        );
      });
      const write = ipset.apply(changes).then(
        (): GrantOutcome => ({ ok: true }),
        (err: Error): GrantOutcome => ({
          ok: false,
          kind: err instanceof IpsetNetlinkError && err.errno === IPSET_HASH_FULL ? 'full' : 'error',
          message: err.message,
        }),
      );
      const outcome = await Promise.race([write, deadline]);
      clearTimeout(timer);
      release(packetId);
      return outcome;
    },
    close() {
      closing ??= (async () => {
        // A queue of length 0 fails open: from the kernel's acknowledgement on, new answers pass unheld, and every
        // answer queued before it is already in this socket (the kernel sends a packet's message as it queues it).
        await request(
          NFQNL_MSG_CONFIG,
          configRequest(opts.queue, { copyRange: COPY_RANGE, maxLen: 0, failOpen: true, conntrack: false }),
          'drain',
        ).catch(() => undefined);
        // Then the held ones are released; unbinding first would drop them (the kernel flushes a destroyed queue
        // with NF_DROP). The unbind goes out after the verdicts, in order, and its acknowledgement follows them.
        for (const id of [...held]) release(id);
        open = false;
        await request(NFQNL_MSG_CONFIG, queueUnbind(opts.queue), 'unbind').catch(() => undefined);
        await request(NFULNL_MSG_CONFIG, logUnbind(opts.nflogGroup), 'unbind').catch(() => undefined);
        socket.close();
      })();
      return closing;
    },
  };
}

async function openInNetns(opts: DnsSocketOptions, netns: string): Promise<DnsSocket> {
  const { file, args } = dataplaneModuleCommand('dns-socket-worker');
  const proc = await startJsonLineProcess({
    file,
    args: [...args, String(opts.queue), String(opts.nflogGroup), ...(opts.maxLen !== undefined ? [String(opts.maxLen)] : [])],
    netns,
    readyTimeoutMs: 20_000,
    onStderr: (line) => opts.onError(line),
    onMessage: (m) => {
      if (typeof m['answer'] === 'number') opts.onAnswer(m['answer'], Buffer.from(m['packet'] as string, 'base64'));
      else if (typeof m['query'] === 'string') opts.onQuery(Buffer.from(m['query'], 'base64'));
      else if (typeof m['error'] === 'string') opts.onError(m['error']);
    },
  }).catch((err: Error) => {
    throw new DnsSocketBindError(err.message);
  });
  if (typeof proc.hello['error'] === 'string') {
    await proc.stop();
    throw new DnsSocketBindError(proc.hello['error']);
  }
  return {
    pid: proc.pid,
    async grant(packetId, changes, deadlineMs) {
      try {
        const reply = await proc.request({ op: 'grant', packetId, changes, deadlineMs }, deadlineMs + 5000);
        return reply['outcome'] as GrantOutcome;
      } catch (err) {
        return { ok: false, kind: 'error', message: (err as Error).message };
      }
    },
    release(packetId) {
      proc.request({ op: 'release', packetId }, 5000).catch((err: Error) => opts.onError(err.message));
    },
    async close() {
      // The worker releases what it holds when its stdin closes, before it unbinds.
      await proc.stop(2000);
    },
  };
}
