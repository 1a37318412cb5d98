// How the daemon writes ipset steps: member changes (the per-change path: pods joining and leaving sets) over
// netlink, with no process; anything else (creating, swapping, flushing or destroying sets: start-up, policy
// changes, large rewrites) with one `ipset restore`, as before. When the kernel or the environment refuses the
// netlink protocol (ip_set missing, no CAP_NET_ADMIN, a protocol mismatch, no netlink binding) the writer falls
// back to `ipset restore` for good, says so once (onFallback) and reports it in `state`.

import { renderIpsetOps, type IpsetOp } from '../render/index.js';
import { IpsetNetlinkRefused, openIpsetNetlink, type IpsetNetlink, type SetMembersChange } from './ipset-netlink.js';
import { NetfilterChannelError } from './netfilter-channel.js';

export type IpsetWriterMode = 'netlink' | 'restore';

export interface IpsetWriterState {
  readonly mode: IpsetWriterMode;
  /** Why member changes go through `ipset restore` (disabled, or what the kernel refused). */
  readonly reason?: string;
}

export interface IpsetWriter {
  /** Applies the ops in order: over netlink when they only add or delete members, else with `ipset restore`. */
  apply(ops: readonly IpsetOp[]): Promise<void>;
  /** Opens the netlink writer now rather than at the first member change, so the mode is known from the start. */
  prepare(): Promise<IpsetWriterState>;
  readonly state: IpsetWriterState;
  close(): Promise<void>;
}

export interface IpsetWriterOptions {
  readonly netns?: string | undefined;
  /** false: every step through `ipset restore` (config `ipsetNetlink: false`). */
  readonly netlink: boolean;
  /** `ipset -exist restore` (the Kernel's). */
  readonly restore: (text: string) => Promise<void>;
  /** Told once, when member changes start going through `ipset restore` because the kernel refused netlink. */
  readonly onFallback?: (reason: string) => void;
  /** Told of every call that went over netlink (a metric). */
  readonly onNetlinkWrite?: () => void;
  /** Opens the netlink writer; tests pass one (default: openIpsetNetlink in `netns`). */
  readonly open?: () => Promise<IpsetNetlink>;
}

/** The ops as member changes, or undefined when one of them is more than that (a real create, swap, flush, destroy). */
export function memberChangesOf(ops: readonly IpsetOp[]): SetMembersChange[] | undefined {
  const out: SetMembersChange[] = [];
  for (const o of ops) {
    switch (o.op) {
      case 'create':
        if (o.prime !== true) return undefined;
        break;
      case 'add':
      case 'del':
        if (o.members.length > 0) out.push({ set: o.name, op: o.op, members: o.members });
        break;
      case 'flush':
      case 'swap':
      case 'destroy':
        return undefined;
    }
  }
  return out;
}

export function createIpsetWriter(opts: IpsetWriterOptions): IpsetWriter {
  let state: IpsetWriterState = opts.netlink
    ? { mode: 'netlink' }
    : { mode: 'restore', reason: 'disabled by configuration (ipsetNetlink: false)' };
  let opened: Promise<IpsetNetlink | undefined> | undefined;
  const open = opts.open ?? (() => openIpsetNetlink({ netns: opts.netns }));

  const fallBack = (reason: string): void => {
    if (state.mode === 'restore') return;
    state = { mode: 'restore', reason };
    opts.onFallback?.(reason);
  };
  const writer = (): Promise<IpsetNetlink | undefined> => {
    if (state.mode === 'restore') return Promise.resolve(undefined);
    opened ??= open().catch((err: Error) => {
      fallBack(err instanceof IpsetNetlinkRefused ? err.reason : err.message);
      return undefined;
    });
    return opened;
  };
  const restore = (ops: readonly IpsetOp[]): Promise<void> => {
    const text = renderIpsetOps(ops);
    return text ? opts.restore(text) : Promise.resolve();
  };

  return {
    get state() {
      return state;
    },
    async prepare() {
      await writer();
      return state;
    },
    async apply(ops) {
      const changes = memberChangesOf(ops);
      const nl = changes ? await writer() : undefined;
      if (!changes || !nl) return restore(ops);
      if (changes.length === 0) return;
      try {
        await nl.apply(changes);
        opts.onNetlinkWrite?.();
      } catch (err) {
        if (err instanceof IpsetNetlinkRefused) {
          fallBack(err.reason);
          opened = undefined;
          await nl.close().catch(() => undefined);
          // Adds and deletes are idempotent (`-exist`): whatever part the kernel took is simply taken again.
          return restore(ops);
        }
        if (err instanceof NetfilterChannelError) {
          // The socket or its netns relay failed (not the kernel's answer): open a new one for the next write.
          opened = undefined;
          await nl.close().catch(() => undefined);
        }
        throw err;
      }
    },
    async close() {
      const nl = await opened;
      opened = undefined;
      await nl?.close();
    },
  };
}
