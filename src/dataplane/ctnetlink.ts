// The conntrack table over ctnetlink: one dump per pass and one mark update per changed flow, on a raw
// NETLINK_NETFILTER socket (the `netlink` package). This replaces one `conntrack` process per flow:
// each `conntrack` call dumps the whole table again (0.36 s at 100 k entries, research upstream-behaviour
// §2.4) and bulk `-U` stops after 256 updates with ENOBUFS.
//
// A netlink socket belongs to the network namespace of the process that opens it. The daemon acting
// on its own namespace opens it in-process; for `--netns NAME` (tests, sandbox) a small worker
// (ctnetlink-worker.ts) is started once with `ip netns exec NAME` and asked over JSON lines.

import type { IpFamily } from '../model/cluster.js';
import {
  dumpRequest,
  entryFromWire,
  errnoOf,
  IPCTNL_MSG_CT_GET,
  IPCTNL_MSG_CT_NEW,
  markUpdateRequest,
  parseEntry,
  type CtEntry,
  type MarkUpdate,
  type WireEntry,
} from './ctnetlink-codec.js';
import { dataplaneModuleCommand, startJsonLineProcess, type JsonLineProcess } from './process.js';

export type { CtEntry, CtTuple, MarkUpdate } from './ctnetlink-codec.js';

const NETLINK_NETFILTER = 12;
const NLMSG_ERROR = 2;
const NLM_F_DUMP = 0x300;
const ENOENT = 2;
/** Updates in flight at once: enough to hide the round trip, few enough for the socket's buffers. */
const WINDOW = 64;

export interface MarkResult {
  /** Entries whose mark the kernel changed (or that already held the value). */
  readonly updated: number;
  /** Entries that ended between the dump and the update (ENOENT): nothing left to revoke. */
  readonly gone: number;
}

export interface ConntrackTable {
  /** Every entry of the family, as one netlink dump. */
  list(family: IpFamily): Promise<CtEntry[]>;
  /** Applies each update to the entry with that original tuple. */
  updateMarks(updates: readonly MarkUpdate[]): Promise<MarkResult>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Named network namespace; undefined: this process's own. */
  readonly netns?: string | undefined;
  readonly onStderr?: (line: string) => void;
}

export async function openConntrackTable(opts: OpenOptions = {}): Promise<ConntrackTable> {
  return opts.netns === undefined ? openInProcess() : openWorker(opts.netns, opts.onStderr);
}

/** A ctnetlink socket in this process's network namespace. */
export async function openInProcess(): Promise<ConntrackTable> {
  const { createNetlink } = await import('netlink');
  const socket = createNetlink(NETLINK_NETFILTER);
  // A dump of 100 k entries arrives in many datagrams; a larger buffer keeps the kernel from waiting on us.
  try {
    socket.setRecvBufferSize(8 * 1024 * 1024);
  } catch {
    // Not fatal: the dump is flow-controlled by the kernel and only slower with the default buffer.
  }
  return {
    async list(family) {
      const [messages] = await socket.request(IPCTNL_MSG_CT_GET, dumpRequest(family), { flags: NLM_F_DUMP, timeout: 60_000 });
      const entries: CtEntry[] = [];
      for (const m of messages) {
        if (m.type !== IPCTNL_MSG_CT_NEW) continue;
        const entry = parseEntry(m.data);
        if (entry) entries.push(entry);
      }
      return entries;
    },
    async updateMarks(updates) {
      let updated = 0;
      let gone = 0;
      const failures: string[] = [];
      const one = async (u: MarkUpdate): Promise<void> => {
        const [replies] = await socket.request(IPCTNL_MSG_CT_NEW, markUpdateRequest(u), { checkError: false, timeout: 10_000 });
        const error = replies.find((r) => r.type === NLMSG_ERROR);
        const errno = error ? errnoOf(error.data) : 0;
        if (errno === 0) updated++;
        else if (errno === ENOENT) gone++;
        else failures.push(`${u.orig.src}→${u.orig.dst} proto ${u.orig.proto}: errno ${errno}`);
      };
      for (let i = 0; i < updates.length; i += WINDOW) await Promise.all(updates.slice(i, i + WINDOW).map(one));
      if (failures.length > 0)
        throw new Error(`conntrack mark update failed for ${failures.length} flow(s): ${failures.slice(0, 3).join('; ')}`);
      return { updated, gone };
    },
    async close() {
      socket.close();
    },
  };
}

const WORKER_TIMEOUT_MS = 120_000;

async function openWorker(netns: string, onStderr?: (line: string) => void): Promise<ConntrackTable> {
  const { file, args } = dataplaneModuleCommand('ctnetlink-worker');
  const proc: JsonLineProcess = await startJsonLineProcess({
    file,
    args,
    netns,
    readyTimeoutMs: 20_000,
    ...(onStderr ? { onStderr } : {}),
  });
  const ask = async (message: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const reply = await proc.request(message, WORKER_TIMEOUT_MS);
    if (typeof reply['error'] === 'string') throw new Error(`ctnetlink worker (netns ${netns}): ${reply['error']}`);
    return reply as Record<string, unknown>;
  };
  return {
    async list(family) {
      return ((await ask({ op: 'list', family }))['entries'] as WireEntry[]).map(entryFromWire);
    },
    async updateMarks(updates) {
      const reply = await ask({ op: 'mark', updates });
      return { updated: Number(reply['updated']), gone: Number(reply['gone']) };
    },
    async close() {
      await proc.stop();
    },
  };
}
