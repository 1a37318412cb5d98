// The order of a change, proven on the real kernel (docs/dataplane.md, "Order of a change"): a change that
// touches a set and the rules using it never passes through a state that allows what neither the old nor the new
// state allows. The syncer writes through a port that, after every kernel write (each ipset step over netlink,
// each iptables-restore), stops and probes the pods with real TCP connections before the next write starts.

import { jest } from '@jest/globals';
import { compile } from '../../src/compile/index.js';
import { createIpsetWriter, type IpsetWriter } from '../../src/dataplane/ipset-writer.js';
import { openKernel, type Kernel } from '../../src/dataplane/kernel.js';
import type { Labels } from '../../src/model/index.js';
import { Syncer, type KernelPort } from '../../src/reconcile/syncer.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import {
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  NODE,
  podPeer,
  rule,
  sel,
  selectPods,
  settings,
  snapshot,
  tcp,
} from '../helpers/builders.js';
import { memoryLogger, OWN } from '../helpers/kernel-asserts.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(90_000);

/** Which clients are labelled role=client, and the one port the policy admits them to on b. */
interface State {
  readonly clients: readonly ('a' | 'c')[];
  readonly port: 80 | 81;
}
const PROBES = [
  ['a', 80],
  ['a', 81],
  ['c', 80],
  ['c', 81],
] as const;
const key = (from: string, port: number): string => `${from}→b:${port}`;
/** What the spec allows in a state: exactly its clients, to its port. */
const allowedIn = (s: State): Set<string> => new Set(s.clients.map((c) => key(c, s.port)));

describeKernel('the order of a change, sampled on the kernel between writes', () => {
  let sandbox: Sandbox;
  let kernel: Kernel;
  let writer: IpsetWriter;
  let sampling = false;
  const samples: { step: string; allowed: Set<string> }[] = [];

  const cluster = (s: State) =>
    snapshot({
      nodes: [{ name: NODE, podCidrs: ['10.244.1.0/24'], addresses: [] }],
      namespaces: [makeNamespace('x')],
      pods: sandbox.pods().map((p) => {
        const l: Labels = p.name === 'b' ? { app: 'server' } : { role: s.clients.includes(p.name as 'a' | 'c') ? 'client' : 'other' };
        return makePod(p.namespace, p.name, p.ip, labels({ ...l }));
      }),
      policies: [
        makePolicy('x', 'clients-in', selectPods(sel({ app: 'server' })), ingress(rule([podPeer(sel({ role: 'client' }))], [tcp(s.port)]))),
      ],
    });

  async function sample(step: string): Promise<void> {
    if (!sampling) return;
    const results = await Promise.all(
      PROBES.map(async ([from, port]) => {
        const r = await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: sandbox.addressOf('x/b'), port, timeoutMs: 300 });
        return r.ok ? [key(from, port)] : [];
      }),
    );
    samples.push({ step, allowed: new Set(results.flat()) });
  }

  beforeAll(async () => {
    sandbox = await createSandbox({ nodes: [{ name: NODE, podCidr: '10.244.1.0/24' }] });
    for (const name of ['a', 'b', 'c']) await sandbox.addPod({ namespace: 'x', name, node: NODE });
    kernel = await openKernel({ netns: sandbox.nodeNetns(NODE), ipv6: false });
    writer = createIpsetWriter({ netns: sandbox.nodeNetns(NODE), netlink: true, restore: (t) => kernel.ipsetRestore(t) });
    expect((await writer.prepare()).mode).toBe('netlink');
  });
  afterAll(async () => {
    await writer?.close();
    await sandbox?.destroy();
  });

  const port = (): KernelPort => ({
    supports: (f) => kernel.supports(f),
    saveFilter: (f) => kernel.saveFilter(f),
    ipsetSave: () => kernel.ipsetSave(),
    async restoreFilter(f, text) {
      await kernel.restoreFilter(f, text);
      await sample('iptables-restore');
    },
    async ipsetRestore(text) {
      await kernel.ipsetRestore(text);
      await sample('ipset restore');
    },
    async ipsetApply(ops) {
      await writer.apply(ops);
      await sample(`ipset ${ops.map((o) => o.op).join(',')}`);
    },
  });

  it.each<[string, State, State]>([
    // A set widens while the rules using it narrow: c joining the clients before the rule moves to 81 would let c
    // reach 80, which neither state allows.
    ['a set widens, its rule moves', { clients: ['a'], port: 80 }, { clients: ['a', 'c'], port: 81 }],
    // A set shrinks while the rules using it widen elsewhere: the rule moving to 80 before a leaves would let a reach 80.
    ['a set shrinks, its rule moves', { clients: ['a', 'c'], port: 81 }, { clients: ['c'], port: 80 }],
    // Both at once, and back.
    ['one member in, one out, the rule moves', { clients: ['a'], port: 81 }, { clients: ['c'], port: 80 }],
  ])('%s: every state in between allows only what the old or the new state allows', async (_, from, to) => {
    const syncer = new Syncer(port(), OWN, memoryLogger());
    sampling = false;
    await syncer.sync(compile(cluster(from), settings()).desired, { readKernel: true });
    sampling = true;
    samples.splice(0);
    await sample('before');
    await syncer.sync(compile(cluster(to), settings()).desired);
    sampling = false;
    const union = new Set([...allowedIn(from), ...allowedIn(to)]);
    const opened = samples.map((s) => ({ step: s.step, beyond: [...s.allowed].filter((k) => !union.has(k)) }));
    // At least the sets and the rules were written, each sampled.
    expect(samples.length).toBeGreaterThanOrEqual(3);
    expect(opened.filter((o) => o.beyond.length > 0)).toEqual([]);
    expect(samples[0]!.allowed).toEqual(allowedIn(from));
    expect(samples.at(-1)!.allowed).toEqual(allowedIn(to));
  });
});
