// Reachability probing over a sandbox: every ordered (from, to) pair in parallel with bounded
// concurrency, and a converge loop that re-probes until the observed matrix matches expectations.
// Like the e2e netpol suite, one matrix is one protocol and one port.

import type { Protocol } from '../src/model/index.js';
import { matrixOf, matricesEqual, type Matrix } from './matrix.js';
import { podKey } from './names.js';
import type { Sandbox, SandboxFamily } from './topology.js';

/**
 * Probe endpoints: pod keys (`x/a`), pod references, or node keys (`node:n1`); 'all' is every pod,
 * in creation order. Matrix rows and columns are always the keys.
 */
export type Endpoints = readonly (string | { readonly namespace: string; readonly name: string })[] | 'all';

/** Only what the prober needs of a sandbox, so it can be driven by a fake in unit tests. */
export type ProbeTarget = Pick<Sandbox, 'pods' | 'addressOf' | 'probe'>;

export interface ProbeMatrixOptions {
  readonly from?: Endpoints;
  readonly to?: Endpoints;
  readonly protocol: Protocol;
  readonly port: number;
  /** Per probe; a blocked pair costs this long. Default 400 ms. */
  readonly timeoutMs?: number;
  /** Probes in flight at once. Default 128. */
  readonly concurrency?: number;
  /** Probe this family's address of each destination (a dual-stack sandbox); default each one's first address. */
  readonly family?: SandboxFamily;
}

export interface ObservedMatrix extends Matrix {
  /** Why each failed probe failed (`timeout`, `ConnectionRefusedError…`), keyed `from -> to`. */
  readonly errors: Readonly<Record<string, string>>;
}

const DEFAULT_TIMEOUT_MS = 400;
const DEFAULT_CONCURRENCY = 128;

const resolve = (sandbox: ProbeTarget, endpoints: Endpoints | undefined): readonly string[] =>
  endpoints === undefined || endpoints === 'all'
    ? sandbox.pods().map((p) => p.key)
    : endpoints.map((e) => (typeof e === 'string' ? e : podKey(e.namespace, e.name)));

export async function probeMatrix(sandbox: ProbeTarget, opts: ProbeMatrixOptions): Promise<ObservedMatrix> {
  const froms = resolve(sandbox, opts.from);
  const tos = resolve(sandbox, opts.to);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const addresses = new Map(tos.map((to) => [to, sandbox.addressOf(to, opts.family)]));
  const results = new Map<string, boolean>();
  const errors: Record<string, string> = {};
  const jobs = froms.flatMap((from) => tos.map((to) => ({ from, to })));

  await forEachBounded(jobs, opts.concurrency ?? DEFAULT_CONCURRENCY, async ({ from, to }) => {
    const ip = addresses.get(to) ?? '';
    const result = await sandbox.probe(from, { protocol: opts.protocol, ip, port: opts.port, timeoutMs });
    results.set(`${from}\n${to}`, result.ok);
    if (!result.ok) errors[`${from} -> ${to}`] = result.error ?? 'failed';
  });
  return { ...matrixOf(froms, tos, (from, to) => results.get(`${from}\n${to}`) ?? false), errors };
}

export interface WaitForMatrixOptions {
  readonly protocol: Protocol;
  readonly port: number;
  /** Give up re-probing after this long (from the call). */
  readonly deadlineMs: number;
  readonly timeoutMs?: number;
  readonly concurrency?: number;
  /** Pause between rounds. Default 100 ms. */
  readonly intervalMs?: number;
  readonly family?: SandboxFamily;
  /** Runs before every round (e.g. flush neighbour caches, so every round resolves its peers afresh). */
  readonly beforeRound?: () => Promise<void>;
}

export interface WaitForMatrixResult {
  readonly ok: boolean;
  readonly expected: Matrix;
  /** The last round's observation: always one complete round, never cells stitched from several. */
  readonly observed: ObservedMatrix;
  readonly rounds: number;
}

/**
 * Probes `expected`'s rows and columns until what is observed equals it, or the deadline passes.
 * The dataplane converges asynchronously (a daemon applying a policy), so a single probe round
 * right after a change would flake; re-probing whole rounds keeps the final matrix consistent.
 */
export async function waitForMatrix(sandbox: ProbeTarget, expected: Matrix, opts: WaitForMatrixOptions): Promise<WaitForMatrixResult> {
  const deadline = Date.now() + opts.deadlineMs;
  const probeOpts: ProbeMatrixOptions = {
    from: expected.froms,
    to: expected.tos,
    protocol: opts.protocol,
    port: opts.port,
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.family !== undefined ? { family: opts.family } : {}),
  };
  for (let rounds = 1; ; rounds++) {
    await opts.beforeRound?.();
    const observed = await probeMatrix(sandbox, probeOpts);
    const ok = matricesEqual(expected, observed);
    if (ok || Date.now() >= deadline) return { ok, expected, observed, rounds };
    await new Promise((r) => setTimeout(r, Math.min(opts.intervalMs ?? 100, Math.max(0, deadline - Date.now()))));
  }
}

/** Runs `work` over `items` with at most `limit` running at once. */
export async function forEachBounded<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
