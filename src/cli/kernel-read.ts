// The kernel read of `diff`, `apply` and `cleanup`: every tool run once, all at the same time (the backend
// detection's own saves are the filter-table read, see openKernelAndRead), and for `diff` and `apply` on a
// worker thread. The main thread is busy for hundreds of milliseconds loading and compiling the cluster; on
// it, the tools' output would wait in full pipes and be parsed only afterwards. On the worker the tools run
// to the end and their output is parsed on the other core meanwhile; what crosses back is the parsed form
// (a few thousand rule texts and set members, ~1 MB at the large tier).

import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DataplaneCommandError } from '../dataplane/errors.js';
import type { BackendDecision } from '../dataplane/backend.js';
import type { Kernel, KernelOptions } from '../dataplane/kernel.js';
import type { IpFamily } from '../model/index.js';
import type { ObservedFamily, Ownership } from '../plan/observed.js';

export interface KernelReadRequest {
  readonly kernel: KernelOptions;
  readonly own: Ownership;
}

/** What the read sends back: the backend it chose and each supported family as the planner observes it. */
export interface ObservedKernel {
  readonly backend: BackendDecision;
  readonly observed: ReadonlyMap<IpFamily, ObservedFamily>;
}

/** The kernel (tools chosen by the read's backend) and the read, both still under way. */
export interface KernelReading {
  readonly kernel: Promise<Kernel>;
  readonly observed: Promise<ReadonlyMap<IpFamily, ObservedFamily>>;
}

/** Reads and parses the kernel in this thread (also what the worker runs). */
export async function observeKernel(request: KernelReadRequest): Promise<ObservedKernel> {
  const [{ openKernelAndRead }, { observeFamily }] = await Promise.all([import('../dataplane/kernel.js'), import('../plan/observed.js')]);
  const { kernel, read } = await openKernelAndRead(request.kernel);
  const observed = new Map<IpFamily, ObservedFamily>();
  for (const [family, text] of read.filters) observed.set(family, observeFamily(family, text, read.ipsets, request.own));
  return { backend: kernel.backend, observed };
}

/** Starts reading the kernel, on a worker thread (the default) or in this one. */
export function readKernel(request: KernelReadRequest, thread: 'worker' | 'here' = 'worker'): KernelReading {
  const result = thread === 'worker' ? onWorker(request) : observeKernel(request);
  const kernel = result.then(async ({ backend }) => (await import('../dataplane/kernel.js')).openDecidedKernel(backend, request.kernel));
  const observed = result.then((r) => r.observed);
  kernel.catch(() => undefined);
  observed.catch(() => undefined);
  return { kernel, observed };
}

/** The worker module beside this one: the built .js, or under the TypeScript loader (tests, scripts) the .ts. */
function workerModule(): { url: URL; execArgv?: string[] } {
  if (!import.meta.url.endsWith('.ts')) return { url: new URL('./kernel-read-worker.js', import.meta.url) };
  const loader = fileURLToPath(new URL('../../scripts/register-ts.mjs', import.meta.url));
  return { url: new URL('./kernel-read-worker.ts', import.meta.url), execArgv: ['--import', loader] };
}

/** An error as it crosses from the worker: DataplaneCommandError keeps its fields (main.ts words its remedy). */
export type WireError = { readonly message: string; readonly stack?: string | undefined } & (
  | {
      readonly kind: 'dataplane';
      readonly command: string;
      readonly exitCode: number | undefined;
      readonly stderr: string;
      readonly line: number | undefined;
      readonly context: readonly string[];
    }
  | { readonly kind: 'other' }
);

export function toWire(err: unknown): WireError {
  if (err instanceof DataplaneCommandError) {
    const { message, stack, command, exitCode, stderr, line, context } = err;
    return { kind: 'dataplane', message, stack, command, exitCode, stderr, line, context };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  return { kind: 'other', message: e.message, stack: e.stack };
}

function fromWire(w: WireError): Error {
  if (w.kind === 'dataplane') return new DataplaneCommandError(w.command, w.exitCode, w.stderr, w.line, w.context);
  const err = new Error(w.message);
  if (w.stack !== undefined) err.stack = w.stack;
  return err;
}

function onWorker(request: KernelReadRequest): Promise<ObservedKernel> {
  return new Promise((resolve, reject) => {
    const { url, execArgv } = workerModule();
    const worker = new Worker(url, { workerData: request, ...(execArgv ? { execArgv } : {}) });
    let settled = false;
    worker.once('message', (m: { ok: true; value: ObservedKernel } | { ok: false; error: WireError }) => {
      settled = true;
      if (m.ok) resolve(m.value);
      else reject(fromWire(m.error));
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the kernel read's worker thread exited (code ${code}) without an answer`));
    });
  });
}
