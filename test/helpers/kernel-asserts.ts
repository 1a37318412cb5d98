// What the real-kernel dataplane tests share: reading state back with the kernel's own tools (parsed
// here by plain text, independently of src/render, so a parser bug cannot hide a renderer bug), a
// KernelPort wrapper that records and can fail writes, a fake clock for the Reconciler, and a quiet logger.

import type { Io } from '../../src/cli/commands-oneshot.js';
import { main } from '../../src/cli/main.js';
import { run } from '../../src/dataplane/exec.js';
import type { IptablesBackend } from '../../src/dataplane/iptables.js';
import type { IpFamily } from '../../src/model/index.js';
import type { ClusterSnapshot, NodeSettings } from '../../src/model/index.js';
import type { FamilyPlan } from '../../src/plan/index.js';
import { Reconciler } from '../../src/reconcile/reconciler.js';
import type { RunReason } from '../../src/reconcile/runner.js';
import { Syncer, type KernelPort, type SyncLogger } from '../../src/reconcile/syncer.js';
import { FakeClock } from '../fakes/fake-clock.js';

export const BACKENDS: readonly IptablesBackend[] = ['nft', 'legacy'];
export const OWN = { chainPrefix: 'nf-', ipsetPrefix: 'nf' } as const;

// --- the kernel's tools ------------------------------------------------------------------------------

const binary = (backend: IptablesBackend, family: IpFamily, suffix = ''): string =>
  `${family === 6 ? 'ip6tables' : 'iptables'}-${backend}${suffix}`;

/** `iptables-<backend> -w args…` inside the namespace (the test's hand, playing "someone else"). */
export async function iptables(netns: string, backend: IptablesBackend, args: readonly string[], family: IpFamily = 4): Promise<string> {
  return (await run(binary(backend, family), ['-w', ...args], { netns })).stdout;
}

export async function iptablesRestore(netns: string, backend: IptablesBackend, text: string, family: IpFamily = 4): Promise<void> {
  await run(binary(backend, family, '-restore'), ['--noflush', '--wait'], { netns, input: text });
}

/** `iptables-save` (one table or all), verbatim. */
export async function iptablesSave(netns: string, backend: IptablesBackend, table?: string, family: IpFamily = 4): Promise<string> {
  return (await run(binary(backend, family, '-save'), table ? ['-t', table] : [], { netns })).stdout;
}

export async function ipset(netns: string, args: readonly string[]): Promise<string> {
  return (await run('ipset', args, { netns })).stdout;
}

/** Save text without the `# Generated/Completed` lines and with counters zeroed: what a human compares. */
export const stable = (save: string): string =>
  save
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]$/, '[0:0]'))
    .join('\n');

// --- someone else's state ---------------------------------------------------------------------------

/** What flanneld and kube-proxy (iptables mode) leave on a node, trimmed to a few rules of each kind. */
export const FOREIGN_V4 = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:FLANNEL-POSTRTG - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG
-A POSTROUTING -s 10.244.0.0/16 ! -d 224.0.0.0/4 -j MASQUERADE
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MASQUERADE --random-fully
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j DNAT --to-destination 192.0.2.10:6443
-A FLANNEL-POSTRTG -s 10.244.1.0/24 -d 10.244.0.0/16 -m comment --comment "flanneld masq" -j RETURN
COMMIT
*filter
:FLANNEL-FWD - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-SERVICES - [0:0]
:nfx-not-ours - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD
-A FORWARD -m set --match-set KUBE-CLUSTER-IP dst,dst -j nfx-not-ours
-A FLANNEL-FWD -s 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT
-A FLANNEL-FWD -d 10.244.0.0/16 -m comment --comment "flanneld forward" -j ACCEPT
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-SERVICES -d 10.96.0.99/32 -p tcp -m comment --comment "default/nosvc has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable
-A nfx-not-ours -m comment --comment "nf: looks like ours, is not" -j RETURN
COMMIT
`;

export const FOREIGN_V6 = `*filter
:KUBE-FORWARD - [0:0]
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
COMMIT
`;

export const FOREIGN_IPSETS = `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
create nf-keep hash:ip family inet hashsize 1024 maxelem 65536
add nf-keep 10.244.1.10
create nf4skeep hash:net family inet hashsize 1024 maxelem 65536
add nf4skeep 10.0.0.0/8
`;

/** Installs FOREIGN_* (both families, the backend's tools) in the namespace. */
export async function installForeignState(netns: string, backend: IptablesBackend): Promise<void> {
  await run('ipset', ['restore'], { netns, input: FOREIGN_IPSETS });
  await iptablesRestore(netns, backend, FOREIGN_V4);
  await iptablesRestore(netns, backend, FOREIGN_V6, 6);
}

// --- our state, as the kernel shows it -----------------------------------------------------------------

/** Chain declarations and `-A` lines of one `*filter` save, per chain, in kernel order. */
export interface SavedFilter {
  readonly declared: ReadonlySet<string>;
  readonly policies: ReadonlyMap<string, string>;
  readonly rules: ReadonlyMap<string, readonly string[]>;
}

export function parseFilter(save: string): SavedFilter {
  const declared = new Set<string>();
  const policies = new Map<string, string>();
  const rules = new Map<string, string[]>();
  let inFilter = false;
  for (const line of save.split('\n')) {
    if (line.startsWith('*')) inFilter = line === '*filter';
    if (!inFilter) continue;
    const decl = /^:(\S+) (\S+)/.exec(line);
    if (decl?.[1] && decl[2]) {
      declared.add(decl[1]);
      policies.set(decl[1], decl[2]);
      rules.set(decl[1], rules.get(decl[1]) ?? []);
    }
    const rule = /^-A (\S+) /.exec(line);
    if (rule?.[1]) rules.set(rule[1], [...(rules.get(rule[1]) ?? []), line]);
  }
  return { declared, policies, rules };
}

/** Our chains (by prefix) with their `-A` lines. */
export function ourChains(filter: SavedFilter, prefix = OWN.chainPrefix): Map<string, readonly string[]> {
  return new Map(
    [...filter.declared]
      .filter((c) => c.startsWith(prefix))
      .sort()
      .map((c) => [c, filter.rules.get(c) ?? []]),
  );
}

/** A rule of ours in a kernel chain: a hash comment and a jump to our prefix. */
export const isOurHook = (line: string, prefix = OWN.chainPrefix): boolean =>
  /--comment "?nf:/.test(line) && new RegExp(`-[jg] ${prefix}`).test(line);

/** What an `iptables-restore` payload (as `netfence compile` prints it) declares: chains, `-A` lines, hooks. */
export function expectedFromRestore(text: string): { chains: Map<string, readonly string[]>; hooks: Map<string, readonly string[]> } {
  const chains = new Map<string, string[]>();
  const hooks = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const decl = /^:(\S+) /.exec(line);
    if (decl?.[1]) chains.set(decl[1], chains.get(decl[1]) ?? []);
    const rule = /^-A (\S+) /.exec(line);
    if (rule?.[1]) chains.set(rule[1], [...(chains.get(rule[1]) ?? []), line]);
    // `-I FORWARD 1 args` shows up in iptables-save as `-A FORWARD args`.
    const hook = /^-I (\S+) \d+ (.*)$/.exec(line);
    if (hook?.[1] && hook[2] !== undefined) hooks.set(hook[1], [...(hooks.get(hook[1]) ?? []), `-A ${hook[1]} ${hook[2]}`]);
  }
  return { chains: new Map([...chains].sort(([a], [b]) => a.localeCompare(b))), hooks };
}

export interface SetContent {
  readonly type: string;
  readonly members: readonly string[];
}

/** `ipset save` / `ipset restore` text → our sets (by prefix), members sorted. */
export function parseSets(text: string, prefix = OWN.ipsetPrefix): Map<string, SetContent> {
  const sets = new Map<string, { type: string; members: string[] }>();
  const ours = (name: string) => new RegExp(`^${prefix}[46][a-z]:`).test(name);
  for (const line of text.split('\n')) {
    const [verb, name, ...rest] = line.trim().split(/\s+/);
    if (!name || !ours(name)) continue;
    if (verb === 'create') sets.set(name, { type: rest[0] ?? '', members: [] });
    if (verb === 'add') sets.get(name)?.members.push(rest.join(' '));
  }
  return new Map([...sets].sort(([a], [b]) => a.localeCompare(b)).map(([n, s]) => [n, { type: s.type, members: [...s.members].sort() }]));
}

export async function savedSets(netns: string): Promise<Map<string, SetContent>> {
  return parseSets(await ipset(netns, ['save']));
}

/** Everything in an all-tables save that is not ours: foreign chains, foreign rules, policies. */
export const foreignOnly = (save: string, prefix = OWN.chainPrefix): string =>
  stable(save)
    .split('\n')
    .filter((l) => !l.startsWith(`:${prefix}`) && !l.startsWith(`-A ${prefix}`) && !isOurHook(l, prefix))
    .join('\n');

/** Runs a netfence command in-process; throws with its output unless it exits 0. Returns the output. */
export async function netfence(argv: readonly string[]): Promise<string> {
  let text = '';
  const io: Io = { out: (t) => void (text += t), err: (t) => void (text += t) };
  const code = await main(argv, io);
  if (code !== 0) throw new Error(`netfence ${argv.join(' ')} exited ${code}:\n${text}`);
  return text;
}

// --- a KernelPort that records every write and can fail some -------------------------------------------

export type WriteCall =
  | { readonly op: 'iptables-restore'; readonly family: IpFamily; readonly text: string }
  | { readonly op: 'ipset-restore'; readonly text: string };

export interface RecordingKernel extends KernelPort {
  readonly writes: WriteCall[];
  /** The next `n` iptables-restore calls throw without reaching the kernel. */
  failNextIptablesRestores(n: number): void;
  clear(): void;
}

export function recordingKernel(inner: KernelPort): RecordingKernel {
  const writes: WriteCall[] = [];
  let failing = 0;
  return {
    writes,
    failNextIptablesRestores: (n) => void (failing = n),
    clear: () => void writes.splice(0),
    supports: (family) => inner.supports(family),
    saveFilter: (family) => inner.saveFilter(family),
    ipsetSave: () => inner.ipsetSave(),
    async restoreFilter(family, text) {
      writes.push({ op: 'iptables-restore', family, text });
      if (failing > 0) {
        failing--;
        throw new Error('injected iptables-restore failure');
      }
      await inner.restoreFilter(family, text);
    },
    async ipsetRestore(text) {
      writes.push({ op: 'ipset-restore', text });
      await inner.ipsetRestore(text);
    },
  };
}

/** Chain names an iptables-restore payload (re)writes: its `:chain` declarations. */
export const declaredChains = (text: string): string[] =>
  text
    .split('\n')
    .flatMap((l) => /^:(\S+) /.exec(l)?.[1] ?? [])
    .sort();

/** The lines of an ipset restore payload that change members (`add`/`del`), without the priming `create`. */
export const memberLines = (text: string): string[] => text.split('\n').filter((l) => /^(add|del) /.test(l));

// --- time and logs ------------------------------------------------------------------------------------

export interface LogLine {
  readonly level: 'info' | 'warn' | 'error' | 'debug';
  readonly msg: string;
}

export function memoryLogger(): SyncLogger & { readonly lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (msg: string) => void lines.push({ level, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') };
}

/** Lets the promise chains a timer callback started run to their end (the runner re-arms after a run). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// --- the Reconciler under a fake clock ------------------------------------------------------------------

export interface SyncEvent {
  readonly kind: 'synced' | 'failed';
  readonly reason: RunReason;
  readonly drift?: boolean;
  readonly plans?: readonly FamilyPlan[];
  readonly error?: Error;
}

export interface ReconcilerHarnessOptions {
  readonly kernel: KernelPort;
  readonly snapshot: ClusterSnapshot;
  readonly settings: NodeSettings;
  readonly batchWindowMs?: number;
  readonly resyncIntervalMs?: number;
}

/** A Reconciler over a real kernel whose every run the test triggers by advancing time. */
export class ReconcilerHarness {
  readonly clock = new FakeClock();
  readonly logger = memoryLogger();
  readonly events: SyncEvent[] = [];
  readonly batchWindowMs: number;
  readonly resyncIntervalMs: number;
  private current: ClusterSnapshot;
  private readonly reconciler: Reconciler;
  private waiter: ((e: SyncEvent) => void) | undefined;

  constructor(opts: ReconcilerHarnessOptions) {
    this.current = opts.snapshot;
    this.batchWindowMs = opts.batchWindowMs ?? 50;
    this.resyncIntervalMs = opts.resyncIntervalMs ?? 30_000;
    const push = (e: SyncEvent) => {
      this.events.push(e);
      const w = this.waiter;
      this.waiter = undefined;
      w?.(e);
    };
    this.reconciler = new Reconciler({
      source: { snapshot: () => this.current, problems: () => [] },
      settings: () => opts.settings,
      syncer: new Syncer(opts.kernel, OWN, this.logger),
      logger: this.logger,
      clock: this.clock,
      batchWindowMs: this.batchWindowMs,
      resyncIntervalMs: this.resyncIntervalMs,
      observer: {
        synced: ({ reason, drift, plans }) => push({ kind: 'synced', reason, drift, plans }),
        failed: ({ reason, error }) => push({ kind: 'failed', reason, error }),
      },
    });
  }

  /** Starts the loop and lets the first (change) run happen. */
  start(): Promise<SyncEvent> {
    this.reconciler.start();
    return this.advance(this.batchWindowMs);
  }

  stop(): void {
    this.reconciler.stop();
  }

  /** The source changed: the batched change run. */
  change(snapshot: ClusterSnapshot): Promise<SyncEvent> {
    this.current = snapshot;
    this.reconciler.changed();
    return this.advance(this.batchWindowMs);
  }

  /** One periodic (drift check) run: time moves on by exactly the resync interval. */
  periodic(): Promise<SyncEvent> {
    return this.advance(this.resyncIntervalMs);
  }

  /** Moves time on by `ms`, firing what falls due, without waiting for a sync (a cleanup run reports none). */
  async passTime(ms: number): Promise<void> {
    this.clock.advance(ms);
    for (let i = 0; i < 5; i++) await settle();
  }

  /** Moves time to the next armed timer (a retry, after a failure) and waits for that run. */
  next(): Promise<SyncEvent> {
    const delay = this.clock.nextDelay();
    if (delay === undefined) throw new Error('no run is scheduled');
    return this.advance(delay);
  }

  private async advance(ms: number): Promise<SyncEvent> {
    const event = new Promise<SyncEvent>((resolve) => (this.waiter = resolve));
    this.clock.advance(ms);
    const e = await event;
    await settle();
    return e;
  }
}
