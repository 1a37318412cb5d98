// Set members written over the kernel's ipset netlink protocol, from inside the daemon: no process per change.
// One request per set and operation carries all its members (ipset-wire.ts), every request of a call goes out as
// one datagram, and each request's ACK is checked. The API is deliberately small: add or delete members of named
// sets, batched, awaited.

import {
  errorText,
  IPSET_MSG_PROTOCOL,
  IPSET_PROTOCOL,
  IPSET_PROTOCOL_MIN,
  memberRequests,
  memberText,
  NLMSG_ERROR,
  nlmsg,
  parseError,
  parseProtocolReply,
  protocolRequest,
  splitMessages,
  type MemberOp,
  type SetMember,
} from './ipset-wire.js';
import { NetfilterChannelError, openNetfilterChannel, type NetfilterChannel } from './netfilter-channel.js';

export { IpsetMemberSyntaxError } from './ipset-wire.js';

/** Members to add to, or delete from, one named set (with their own timeout and comment for a learned set). */
export interface SetMembersChange {
  readonly set: string;
  readonly op: MemberOp;
  readonly members: readonly SetMember[];
}

/** The kernel refused a member change: which set, operation and member, and the kernel's reason. */
export class IpsetNetlinkError extends Error {
  override readonly name = 'IpsetNetlinkError';
  constructor(
    readonly set: string,
    readonly op: MemberOp,
    /** The refused member, when the kernel named it (it stops there; the members after it were not applied). */
    readonly member: string | undefined,
    readonly errno: number,
  ) {
    super(`ipset netlink ${op} ${set}${member !== undefined ? ` ${member}` : ''}: ${errorText(errno)}`);
  }
}

/**
 * This kernel or environment will not take ipset commands over netlink (module missing, no CAP_NET_ADMIN,
 * protocol mismatch, no netlink binding): the caller falls back to `ipset restore`.
 */
export class IpsetNetlinkRefused extends Error {
  override readonly name = 'IpsetNetlinkRefused';
  constructor(readonly reason: string) {
    super(`ipset over netlink refused: ${reason}`);
  }
}

export interface IpsetNetlink {
  /** The protocol version in use (the kernel's, at most IPSET_PROTOCOL). */
  readonly protocol: number;
  /**
   * Applies every change, in order; resolves once the kernel acknowledged each request. A member already present
   * (add) or absent (del) is no error. Rejects with IpsetMemberSyntaxError before anything is sent when a member is
   * malformed, IpsetNetlinkError naming the first member the kernel refused, or IpsetNetlinkRefused when the kernel
   * refuses the protocol itself.
   */
  apply(changes: readonly SetMembersChange[]): Promise<void>;
  close(): Promise<void>;
}

export interface IpsetNetlinkOptions {
  readonly netns?: string | undefined;
  /** Per exchange with the kernel (default 10 s). */
  readonly timeoutMs?: number;
  readonly onStderr?: (line: string) => void;
  /** The channel to the kernel; tests pass one (default: openNetfilterChannel). */
  readonly channel?: (netns: string | undefined) => Promise<NetfilterChannel>;
}

/** Bytes per datagram: below the socket's send buffer and the kernel's default wmem_max (208 KiB). */
const MAX_DATAGRAM = 128 * 1024;

const EPERM = 1;
const EOPNOTSUPP = 95;
const EPROTONOSUPPORT = 93;
/**
 * Answers that mean "not here, not for you": no member is to blame, and `ipset restore` may still work.
 * IPSET_ERR_PROTOCOL is not one of them once the protocol query passed: the kernel also answers it for a member
 * of the wrong family (an IPv4 address for an inet6 set).
 */
const REFUSALS = new Set([EPERM, EOPNOTSUPP, EPROTONOSUPPORT]);
const REFUSED_CODES = new Set(['EPERM', 'EACCES', 'EPROTONOSUPPORT', 'EAFNOSUPPORT', 'ERR_DLOPEN_FAILED', 'MODULE_NOT_FOUND']);

/** Opens the channel and asks the kernel which ipset protocol it speaks; throws IpsetNetlinkRefused if it will not do. */
export async function openIpsetNetlink(opts: IpsetNetlinkOptions = {}): Promise<IpsetNetlink> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let channel: NetfilterChannel;
  try {
    channel = await (opts.channel ?? ((netns) => openNetfilterChannel({ netns, ...(opts.onStderr ? { onStderr: opts.onStderr } : {}) })))(
      opts.netns,
    );
  } catch (err) {
    throw new IpsetNetlinkRefused((err as Error).message);
  }
  let seq = Math.floor(Math.random() * 0x7fffffff);
  const nextSeq = (): number => (seq = (seq + 1) >>> 0);

  let protocol: number;
  try {
    const s = nextSeq();
    const [reply] = await channel.exchange([nlmsg(IPSET_MSG_PROTOCOL, 0x1 | 0x4, s, protocolRequest())], [s], timeoutMs);
    const message = splitMessages(reply!)[0];
    if (!message) throw new IpsetNetlinkRefused('empty reply to the protocol query');
    if (message.type === NLMSG_ERROR) throw new IpsetNetlinkRefused(`protocol query: ${errorText(parseError(message.payload).errno)}`);
    const versions = parseProtocolReply(message.payload);
    if (!versions) throw new IpsetNetlinkRefused('protocol query: no version in the reply');
    // Every command we send is understood from protocol 6 on; the kernel accepts anything within [min, max].
    protocol = Math.min(versions.max, IPSET_PROTOCOL);
    if (protocol < IPSET_PROTOCOL_MIN || protocol < versions.min)
      throw new IpsetNetlinkRefused(
        `protocol mismatch: the kernel speaks ${versions.min}–${versions.max}, netfence ${IPSET_PROTOCOL_MIN}–${IPSET_PROTOCOL}`,
      );
  } catch (err) {
    await channel.close();
    if (err instanceof IpsetNetlinkRefused) throw err;
    throw new IpsetNetlinkRefused((err as Error).message);
  }

  return {
    protocol,
    async apply(changes) {
      // Encoded first: a malformed member fails the call before anything reaches the kernel.
      const requests = changes.flatMap((change) =>
        memberRequests(change.op, change.set, change.members, protocol).map((r) => ({ change, r })),
      );
      for (let i = 0; i < requests.length;) {
        const batch: { change: SetMembersChange; first: number; message: Buffer; seq: number }[] = [];
        let bytes = 0;
        while (i < requests.length && (batch.length === 0 || bytes + requests[i]!.r.payload.length + 16 <= MAX_DATAGRAM)) {
          const { change, r } = requests[i++]!;
          const s = nextSeq();
          const message = nlmsg(r.type, r.flags, s, r.payload);
          batch.push({ change, first: r.first, message, seq: s });
          bytes += message.length;
        }
        let replies: Buffer[];
        try {
          replies = await channel.exchange(
            batch.map((b) => b.message),
            batch.map((b) => b.seq),
            timeoutMs,
          );
        } catch (err) {
          const code = (err as NetfilterChannelError).code;
          if (code !== undefined && REFUSED_CODES.has(code)) throw new IpsetNetlinkRefused((err as Error).message);
          throw err;
        }
        // Every request was processed (the kernel goes on after a refused one); report the first refusal.
        for (const [k, b] of batch.entries()) {
          const message = splitMessages(replies[k]!)[0];
          const { errno, lineno } = message?.type === NLMSG_ERROR ? parseError(message.payload) : { errno: 0, lineno: undefined };
          if (errno === 0) continue;
          if (REFUSALS.has(errno)) throw new IpsetNetlinkRefused(`${b.change.op} ${b.change.set}: ${errorText(errno)}`);
          const refused = lineno !== undefined && lineno >= 1 ? b.change.members[lineno - 1] : undefined;
          const member = refused === undefined ? undefined : memberText(refused);
          throw new IpsetNetlinkError(b.change.set, b.change.op, member, errno);
        }
      }
    },
    close: () => channel.close(),
  };
}
