// The ipset netlink writer's decisions, with a scripted channel standing in for the kernel: which answers are a
// refusal (fall back to ipset restore), which are a refused member (a failed write naming it), how a call is cut
// into datagrams. The kernel's real answers: test/kernel/ipset-netlink.test.ts.

import { IpsetNetlinkError, IpsetNetlinkRefused, openIpsetNetlink } from '../../../src/dataplane/ipset-netlink.js';
import { parseAttributes } from '../../../src/dataplane/netlink-attributes.js';
import { nlmsg, splitMessages } from '../../../src/dataplane/ipset-wire.js';
import { NetfilterChannelError, type NetfilterChannel } from '../../../src/dataplane/netfilter-channel.js';

const NLMSG_ERROR = 2;
const PROTOCOL_MSG = (6 << 8) | 1;

function attr(type: number, value: Buffer): Buffer {
  const out = Buffer.alloc((4 + value.length + 3) & ~3);
  out.writeUInt16LE(4 + value.length, 0);
  out.writeUInt16LE(type, 2);
  value.copy(out, 4);
  return out;
}

/** The kernel's protocol reply: IPSET_ATTR_PROTOCOL max, IPSET_ATTR_PROTOCOL_MIN min. */
const protocolReply = (seq: number, max: number, min: number): Buffer =>
  nlmsg(PROTOCOL_MSG, 0, seq, Buffer.concat([Buffer.from([2, 0, 0, 0]), attr(1, Buffer.from([max])), attr(10, Buffer.from([min]))]));

/** An NLMSG_ERROR answering `request` with `errno`; with `lineno`, the echoed request's IPSET_ATTR_LINENO rewritten. */
function errorReply(request: Buffer, errno: number, lineno?: number): Buffer {
  const echoed = Buffer.from(request);
  if (lineno !== undefined) {
    // The top-level IPSET_ATTR_LINENO (type 9 | NLA_F_NET_BYTEORDER) after nlmsghdr and nfgenmsg.
    for (let off = 20; off + 4 <= echoed.length; off += (echoed.readUInt16LE(off) + 3) & ~3) {
      if ((echoed.readUInt16LE(off + 2) & 0x3fff) === 9) echoed.writeUInt32BE(lineno, off + 4);
    }
  }
  const head = Buffer.alloc(4);
  head.writeInt32LE(-errno, 0);
  return nlmsg(NLMSG_ERROR, 0, echoed.readUInt32LE(8), Buffer.concat([head, errno === 0 ? echoed.subarray(0, 16) : echoed]));
}

/** A channel whose kernel answers the protocol query with `protocol` and each request with `answer`. */
function scripted(
  protocol: { max: number; min: number } | number,
  answer: (request: Buffer, index: number) => Buffer = (r) => errorReply(r, 0),
): NetfilterChannel & { datagrams: Buffer[][] } {
  let index = 0;
  const channel = {
    datagrams: [] as Buffer[][],
    exchange(messages: readonly Buffer[], seqs: readonly number[]) {
      channel.datagrams.push([...messages]);
      return Promise.resolve(
        messages.map((m, i) => {
          if (m.readUInt16LE(4) === PROTOCOL_MSG)
            return typeof protocol === 'number' ? errorReply(m, protocol) : protocolReply(seqs[i]!, protocol.max, protocol.min);
          return answer(m, index++);
        }),
      );
    },
    close: () => Promise.resolve(),
  };
  return channel;
}

const open = (channel: NetfilterChannel) => openIpsetNetlink({ channel: () => Promise.resolve(channel) });

describe('openIpsetNetlink', () => {
  it.each([
    ['the kernel speaks 6–7', { max: 7, min: 6 }, 7],
    ['an older kernel speaking only 6', { max: 6, min: 6 }, 6],
    ['a newer kernel (8, min 6)', { max: 8, min: 6 }, 7],
  ])('%s (%j): uses protocol %i', async (_, versions, want) => {
    expect((await open(scripted(versions))).protocol).toBe(want);
  });

  it.each([
    ['EPERM (no CAP_NET_ADMIN)', 1, /protocol query: EPERM/],
    ['EOPNOTSUPP (ip_set not loaded)', 95, /protocol query: EOPNOTSUPP/],
  ])('a protocol query answered with %s is a refusal', async (_, errno, reason) => {
    const err = await open(scripted(errno)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetNetlinkRefused);
    expect((err as IpsetNetlinkRefused).reason).toMatch(reason);
  });

  it.each([
    ['a kernel older than protocol 6', { max: 5, min: 5 }],
    ['a kernel that no longer speaks 7', { max: 9, min: 8 }],
  ])('%s is a protocol mismatch refusal', async (_, versions) => {
    await expect(open(scripted(versions))).rejects.toMatchObject({
      name: 'IpsetNetlinkRefused',
      reason: expect.stringMatching(/protocol mismatch/),
    });
  });

  it('a channel that cannot be opened is a refusal', async () => {
    const err = await openIpsetNetlink({
      channel: () => Promise.reject(new NetfilterChannelError('no binding', 'ERR_DLOPEN_FAILED')),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetNetlinkRefused);
  });
});

describe('apply', () => {
  it('sends every request of a call as one datagram, each acknowledged', async () => {
    const channel = scripted({ max: 7, min: 6 });
    const nl = await open(channel);
    await nl.apply([
      { set: 'a', op: 'del', members: ['10.0.0.1'] },
      { set: 'a', op: 'add', members: ['10.0.0.2'] },
      { set: 'b', op: 'add', members: ['fd00::1,tcp:80'] },
    ]);
    const [datagram] = channel.datagrams.slice(1);
    expect(datagram!.map((m) => m.readUInt16LE(4) & 0xff)).toEqual([10, 9, 9]);
    // Each request its own sequence number, with NLM_F_REQUEST | NLM_F_ACK and no NLM_F_EXCL.
    expect(new Set(datagram!.map((m) => m.readUInt32LE(8))).size).toBe(3);
    expect(datagram!.map((m) => m.readUInt16LE(6))).toEqual([5, 5, 5]);
  });

  it('cuts a large call into datagrams of at most 128 KiB', async () => {
    const channel = scripted({ max: 7, min: 6 });
    const nl = await open(channel);
    const members = Array.from({ length: 8_000 }, (_, i) => `fd00::${i.toString(16)},tcp:80`);
    await nl.apply([{ set: 'big', op: 'add', members }]);
    const sent = channel.datagrams.slice(1);
    expect(sent.length).toBeGreaterThan(1);
    for (const d of sent) expect(d.reduce((n, m) => n + m.length, 0)).toBeLessThanOrEqual(128 * 1024);
    const lines = sent.flat().map((m) => parseAttributes(splitMessages(m)[0]!.payload.subarray(4)).get(9)!.readUInt32BE(0));
    expect(lines[0]).toBe(1);
    expect(lines).toEqual([...lines].sort((a, b) => a - b));
  });

  it('a refused member fails the call naming it (the echoed line number), not a fallback', async () => {
    const nl = await open(scripted({ max: 7, min: 6 }, (r, i) => (i === 1 ? errorReply(r, 4104, 2) : errorReply(r, 0))));
    const err = await nl
      .apply([
        { set: 'a', op: 'add', members: ['10.0.0.1'] },
        { set: 'n', op: 'add', members: ['10.1.0.0/16', '10.0.0.0/0', '10.2.0.0/16'] },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetNetlinkError);
    expect(err).toMatchObject({ set: 'n', op: 'add', member: '10.0.0.0/0', errno: 4104 });
  });

  it('EPERM on a write is a refusal (fall back), whatever request it answered', async () => {
    const nl = await open(scripted({ max: 7, min: 6 }, (r) => errorReply(r, 1)));
    await expect(nl.apply([{ set: 'a', op: 'add', members: ['10.0.0.1'] }])).rejects.toBeInstanceOf(IpsetNetlinkRefused);
  });

  it('a socket refused by the environment while writing is a refusal; a timeout is a failed write', async () => {
    const failing = (err: Error): NetfilterChannel => {
      const ok = scripted({ max: 7, min: 6 });
      let first = true;
      return {
        exchange: (m, s, t) => {
          if (first) {
            first = false;
            return ok.exchange(m, s, t);
          }
          return Promise.reject(err);
        },
        close: () => Promise.resolve(),
      };
    };
    const change = [{ set: 'a', op: 'add' as const, members: ['10.0.0.1'] }];
    await expect((await open(failing(new NetfilterChannelError('sendmsg', 'EPERM')))).apply(change)).rejects.toBeInstanceOf(
      IpsetNetlinkRefused,
    );
    await expect((await open(failing(new NetfilterChannelError('no reply', 'ETIMEDOUT')))).apply(change)).rejects.toBeInstanceOf(
      NetfilterChannelError,
    );
  });
});
