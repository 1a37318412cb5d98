// The daemon's ipset writer: member changes over netlink, the rest through `ipset restore`, and the fallback to
// `ipset restore` when the kernel refuses netlink (told once, for good), forced here with netlink writers that
// refuse the way a kernel does (test/kernel/ipset-netlink.test.ts has the real EPERM, daemon-ipset-netlink the
// daemon's fallback end to end).

import { createIpsetWriter, memberChangesOf } from '../../../src/dataplane/ipset-writer.js';
import { IpsetNetlinkError, IpsetNetlinkRefused, type IpsetNetlink, type SetMembersChange } from '../../../src/dataplane/ipset-netlink.js';
import type { IpsetOp } from '../../../src/render/index.js';

const set = { type: 'hash:ip', family: 4 } as const;
const MEMBER_OPS: IpsetOp[] = [
  { op: 'create', name: 'nf4s:a', set, prime: true },
  { op: 'del', name: 'nf4s:a', members: ['10.0.0.1'] },
  { op: 'add', name: 'nf4s:a', members: ['10.0.0.2', '10.0.0.3'] },
  { op: 'add', name: 'nf4s:b', members: [] },
];
const CREATE_OPS: IpsetOp[] = [
  { op: 'create', name: 'nf4s:c', set },
  { op: 'add', name: 'nf4s:c', members: ['10.0.0.4'] },
];

/** A netlink writer that records what it is asked and fails as told. */
function fakeNetlink(fail?: () => Error): IpsetNetlink & { calls: SetMembersChange[][]; closed: number } {
  const fake = {
    protocol: 7,
    calls: [] as SetMembersChange[][],
    closed: 0,
    apply(changes: readonly SetMembersChange[]) {
      fake.calls.push([...changes]);
      const err = fail?.();
      return err ? Promise.reject(err) : Promise.resolve();
    },
    close() {
      fake.closed++;
      return Promise.resolve();
    },
  };
  return fake;
}

function harness(opts: { netlink?: boolean; open?: () => Promise<IpsetNetlink> } = {}) {
  const restored: string[] = [];
  const fallbacks: string[] = [];
  let netlinkWrites = 0;
  const writer = createIpsetWriter({
    netlink: opts.netlink ?? true,
    restore: async (text) => void restored.push(text),
    onFallback: (reason) => void fallbacks.push(reason),
    onNetlinkWrite: () => void netlinkWrites++,
    ...(opts.open ? { open: opts.open } : {}),
  });
  return { writer, restored, fallbacks, writes: () => netlinkWrites };
}

describe('memberChangesOf', () => {
  it('keeps adds and deletes in order, skips priming creates and empty lists', () => {
    expect(memberChangesOf(MEMBER_OPS)).toEqual([
      { set: 'nf4s:a', op: 'del', members: ['10.0.0.1'] },
      { set: 'nf4s:a', op: 'add', members: ['10.0.0.2', '10.0.0.3'] },
    ]);
  });
  it.each<[string, IpsetOp]>([
    ['a real create', { op: 'create', name: 'x', set }],
    ['a swap', { op: 'swap', name: 'x', with: 'y' }],
    ['a flush', { op: 'flush', name: 'x' }],
    ['a destroy', { op: 'destroy', name: 'x' }],
  ])('is undefined with %s among them', (_, op) => {
    expect(memberChangesOf([...MEMBER_OPS, op])).toBeUndefined();
  });
});

describe('createIpsetWriter', () => {
  it('sends member changes over netlink, with no ipset restore', async () => {
    const nl = fakeNetlink();
    const h = harness({ open: async () => nl });
    await h.writer.apply(MEMBER_OPS);
    expect(nl.calls).toEqual([memberChangesOf(MEMBER_OPS)]);
    expect(h.restored).toEqual([]);
    expect(h.writes()).toBe(1);
    expect(h.writer.state).toEqual({ mode: 'netlink' });
  });

  it('sends a step that creates a set through ipset restore, as its text', async () => {
    const nl = fakeNetlink();
    const h = harness({ open: async () => nl });
    await h.writer.apply(CREATE_OPS);
    expect(nl.calls).toEqual([]);
    expect(h.restored).toEqual(['create nf4s:c hash:ip family inet hashsize 1024 maxelem 1048576\nadd nf4s:c 10.0.0.4\n']);
  });

  it('falls back for good when the kernel refuses the protocol at open: told once, every step through restore', async () => {
    let opens = 0;
    const h = harness({
      open: async () => {
        opens++;
        throw new IpsetNetlinkRefused('protocol query: EPERM');
      },
    });
    expect(await h.writer.prepare()).toEqual({ mode: 'restore', reason: 'protocol query: EPERM' });
    await h.writer.apply(MEMBER_OPS);
    await h.writer.apply(MEMBER_OPS);
    expect(opens).toBe(1);
    expect(h.fallbacks).toEqual(['protocol query: EPERM']);
    expect(h.restored).toHaveLength(2);
    expect(h.restored[0]).toBe(
      'create nf4s:a hash:ip family inet hashsize 1024 maxelem 1048576\ndel nf4s:a 10.0.0.1\nadd nf4s:a 10.0.0.2\nadd nf4s:a 10.0.0.3\n',
    );
  });

  it('falls back when the kernel refuses a write, and writes that same step with restore (adds and deletes are idempotent)', async () => {
    const nl = fakeNetlink(() => new IpsetNetlinkRefused('add nf4s:a: EPERM'));
    const h = harness({ open: async () => nl });
    await h.writer.apply(MEMBER_OPS);
    expect(h.fallbacks).toEqual(['add nf4s:a: EPERM']);
    expect(h.restored).toHaveLength(1);
    expect(nl.closed).toBe(1);
    await h.writer.apply(MEMBER_OPS);
    expect(nl.calls).toHaveLength(1);
    expect(h.writer.state.mode).toBe('restore');
  });

  it('a member the kernel refuses is a failed write, not a fallback', async () => {
    const nl = fakeNetlink(() => new IpsetNetlinkError('nf4s:a', 'add', '10.0.0.2', 4103));
    const h = harness({ open: async () => nl });
    await expect(h.writer.apply(MEMBER_OPS)).rejects.toBeInstanceOf(IpsetNetlinkError);
    expect(h.fallbacks).toEqual([]);
    expect(h.restored).toEqual([]);
    expect(h.writer.state.mode).toBe('netlink');
  });

  it('configured off: never opens netlink, says why', async () => {
    const h = harness({
      netlink: false,
      open: () => {
        throw new Error('must not open');
      },
    });
    await h.writer.apply(MEMBER_OPS);
    expect(h.restored).toHaveLength(1);
    expect(h.fallbacks).toEqual([]);
    expect(h.writer.state).toEqual({ mode: 'restore', reason: 'disabled by configuration (ipsetNetlink: false)' });
  });
});
