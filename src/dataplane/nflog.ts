// The flow log's kernel end: a NETLINK_NETFILTER socket (node-netlink) bound to one nfnetlink_log group.
// A netlink socket belongs to the network namespace of the process that opens it, so for a named
// namespace (`--netns`, the sandbox) the socket is opened by a small child started with `ip netns exec`
// (nflog-child.ts), which forwards each parsed packet as a JSON line; otherwise it is opened here.

import { dataplaneModuleCommand, startJsonLineProcess } from './process.js';
import { bindRequest, modeRequest, NFULNL_MSG_CONFIG, parseNflogMessage, unbindRequest, type NflogPacket } from './nflog-wire.js';

export type { NflogPacket } from './nflog-wire.js';

const NETLINK_NETFILTER = 12;
/**
 * Bytes of each packet the kernel copies (the log rules set no `--nflog-size`, so this is the copy): the IP header,
 * on IPv6 with up to 80 bytes of extension headers, and the first 8 bytes after it (ports; ICMP type, code, echo id).
 */
const COPY_RANGE = 128;
/** A burst of denied packets queues here while the event loop is busy; the rule's rate limit bounds it. */
const RECV_BUFFER = 1 << 20;

export interface NflogReaderOptions {
  readonly group: number;
  readonly netns?: string | undefined;
  readonly onPacket: (packet: NflogPacket) => void;
  /** Socket errors after start (ENOBUFS: the kernel dropped messages we were too slow to read). */
  readonly onError?: (message: string) => void;
}

export interface NflogReader {
  /** The pid of the netns child, when there is one. */
  readonly pid?: number;
  stop(): Promise<void>;
}

export class NflogBindError extends Error {
  override readonly name = 'NflogBindError';
}

/** Binds the group and starts delivering packets; rejects (with nothing left open) if the group cannot be bound. */
export async function startNflogReader(opts: NflogReaderOptions): Promise<NflogReader> {
  return opts.netns === undefined ? openInProcess(opts) : openInNetns(opts, opts.netns);
}

async function openInProcess(opts: NflogReaderOptions): Promise<NflogReader> {
  // Imported lazily so a missing native binding is a start-up error of the flow log, not of the daemon.
  const { createNetlink } = await import('netlink');
  const socket = createNetlink(NETLINK_NETFILTER, { ref: true, recvBufferSize: RECV_BUFFER, sendBufferSize: 1 << 16 });
  socket.on('error', (err) => opts.onError?.(`${err.code ?? ''} ${err.message}`.trim()));
  socket.on('message', (msgs) => {
    for (const msg of msgs) {
      const packet = parseNflogMessage(msg.type, msg.data);
      if (packet) opts.onPacket(packet);
    }
  });
  try {
    await socket.request(NFULNL_MSG_CONFIG, bindRequest(opts.group), { timeout: 5000 });
    await socket.request(NFULNL_MSG_CONFIG, modeRequest(opts.group, COPY_RANGE), { timeout: 5000 });
  } catch (err) {
    socket.close();
    throw new NflogBindError(bindFailure(opts.group, err as Error & { errno?: number; code?: string }));
  }
  return {
    async stop() {
      await socket.request(NFULNL_MSG_CONFIG, unbindRequest(opts.group), { timeout: 1000 }).catch(() => undefined);
      socket.close();
    },
  };
}

function bindFailure(group: number, err: Error & { errno?: number; code?: string }): string {
  const text = `${err.code ?? ''} ${err.message}`;
  // The kernel answers EPERM both to a process without CAP_NET_ADMIN and when another socket holds the group.
  if (/EPERM|EACCES|not permitted/i.test(text)) {
    return process.getuid?.() === 0
      ? `NFLOG group ${group} is already read by another process in this network namespace (choose another with flow-log-group)`
      : `reading NFLOG group ${group} needs root or CAP_NET_ADMIN (or another process already reads it)`;
  }
  return `cannot bind NFLOG group ${group}: ${text.trim()}`;
}

async function openInNetns(opts: NflogReaderOptions, netns: string): Promise<NflogReader> {
  const child = dataplaneModuleCommand('nflog-child');
  const proc = await startJsonLineProcess({
    file: child.file,
    args: [...child.args, String(opts.group)],
    netns,
    onStderr: (line) => opts.onError?.(line),
    onMessage: (msg) => {
      if (msg['packet']) opts.onPacket(msg['packet'] as NflogPacket);
      else if (typeof msg['error'] === 'string') opts.onError?.(msg['error']);
    },
  }).catch((err: Error) => {
    throw new NflogBindError(err.message);
  });
  return {
    pid: proc.pid,
    async stop() {
      await proc.stop();
    },
  };
}
