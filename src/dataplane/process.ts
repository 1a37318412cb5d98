// Long-lived helper processes (sandbox agents) that speak JSON lines over stdin/stdout.
// Besides exec.ts this is the only module that spawns: one-shot tools go through `run()`,
// processes that stay up and answer requests go through here.

import { spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export type JsonObject = { readonly [key: string]: unknown };

export interface JsonLineProcessOptions {
  readonly file: string;
  readonly args: readonly string[];
  /** Run inside this named network namespace (`ip netns exec NAME …`, which execs, so the pid is the tool's). */
  readonly netns?: string | undefined;
  /** How long to wait for the process's first line, which must be a JSON object with `ready: true`. */
  readonly readyTimeoutMs?: number;
  /** Receives every stderr line (diagnostics); dropped when absent. */
  readonly onStderr?: (line: string) => void;
  /** Receives stdout lines that answer no request (a process that reports events); dropped when absent. */
  readonly onMessage?: (message: JsonObject) => void;
}

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface JsonLineProcess {
  readonly pid: number;
  /** The `ready` line the process printed first. */
  readonly hello: JsonObject;
  /** Sends `{ ...message, id }` and resolves with the reply carrying the same `id`. */
  request(message: JsonObject, timeoutMs: number): Promise<JsonObject>;
  /** Resolves once the process has exited; never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** Closes stdin, sends SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<ProcessExit>;
}

export class ProcessProtocolError extends Error {
  override readonly name = 'ProcessProtocolError';
}

interface Pending {
  readonly resolve: (reply: JsonObject) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** Starts the process and waits for its `ready` line. On any failure the process is killed before the error is thrown. */
export async function startJsonLineProcess(opts: JsonLineProcessOptions): Promise<JsonLineProcess> {
  const [cmd, argv] = opts.netns ? ['ip', ['netns', 'exec', opts.netns, opts.file, ...opts.args]] : [opts.file, [...opts.args]];
  const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
  const describe = `${[opts.file, ...opts.args].join(' ')}${opts.netns ? ` (netns ${opts.netns})` : ''}`;

  const exited = new Promise<ProcessExit>((resolve) => {
    // 'close', not 'exit': it fires after stdout/stderr are drained, so the last stderr lines are in the error.
    child.once('close', (code, signal) => resolve({ code, signal }));
    // A spawn failure emits 'error' and never 'exit'. `on`, not `once`: a later 'error' (a failed kill)
    // would otherwise be unhandled and end the whole process.
    child.on('error', () => resolve({ code: null, signal: null }));
  });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let stderrTail: string[] = [];
  let onHello: ((hello: JsonObject) => void) | undefined;
  let closedReason: Error | undefined;

  const failAll = (err: Error): void => {
    closedReason = err;
    for (const [id, p] of pending) {
      clearTimeout(p.timer);
      pending.delete(id);
      p.reject(err);
    }
  };
  void exited.then((exit) =>
    failAll(new ProcessProtocolError(`${describe} exited (code ${exit.code}, signal ${exit.signal}): ${stderrTail.join(' | ')}`)),
  );
  child.stdin.on('error', () => undefined); // EPIPE after the process died surfaces through `exited`

  // readline re-emits stream errors; unheard, they would end the process (the exit still reaches `exited`).
  createInterface({ input: child.stderr })
    .on('error', () => undefined)
    .on('line', (line) => {
      stderrTail = [...stderrTail.slice(-4), line];
      opts.onStderr?.(line);
    });
  createInterface({ input: child.stdout })
    .on('error', () => undefined)
    .on('line', (line) => {
      let message: JsonObject;
      try {
        message = JSON.parse(line) as JsonObject;
      } catch {
        opts.onStderr?.(`unparsable stdout line: ${line}`);
        return;
      }
      if (onHello && message['ready'] === true) {
        onHello(message);
        onHello = undefined;
        return;
      }
      const id = message['id'];
      const p = typeof id === 'number' ? pending.get(id) : undefined;
      if (p && typeof id === 'number') {
        pending.delete(id);
        clearTimeout(p.timer);
        p.resolve(message);
      } else opts.onMessage?.(message);
    });

  const stop = async (graceMs = 1000): Promise<ProcessExit> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin.end();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    }
    return exited;
  };

  const readyTimeoutMs = opts.readyTimeoutMs ?? 10_000;
  let hello: JsonObject;
  try {
    hello = await new Promise<JsonObject>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ProcessProtocolError(`${describe}: no ready line within ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
      onHello = (h) => {
        clearTimeout(timer);
        resolve(h);
      };
      void exited.then(() => {
        clearTimeout(timer);
        reject(closedReason ?? new ProcessProtocolError(`${describe} exited before it was ready`));
      });
    });
  } catch (err) {
    await stop(200);
    throw err;
  }
  if (child.pid === undefined) throw new ProcessProtocolError(`${describe}: no pid`);

  return {
    pid: child.pid,
    hello,
    exited,
    stop,
    request(message, timeoutMs) {
      if (closedReason) return Promise.reject(closedReason);
      const id = nextId++;
      return new Promise<JsonObject>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new ProcessProtocolError(`${describe}: no reply to request ${id} within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, { resolve, reject, timer });
        child.stdin.write(`${JSON.stringify({ ...message, id })}\n`);
      });
    },
  };
}

/** Sends a signal to a process we started; a process that is already gone is not an error. */
export function killPid(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // ESRCH: already exited.
  }
}

/**
 * Runs a tool synchronously and ignores its outcome. Only for `process.on('exit')` and signal
 * handlers, where nothing asynchronous can run any more; everything else uses `run()`.
 */
export function runSyncBestEffort(file: string, args: readonly string[], input?: string): void {
  spawnSync(file, [...args], { input: input ?? '', stdio: ['pipe', 'ignore', 'ignore'], timeout: 10_000 });
}

/**
 * The command that runs one of this folder's modules as its own process (a worker inside another network
 * namespace, the NFLOG reader): `node <module>.js` beside this file when built, or under the TypeScript loader
 * (tests) the `.ts` source through the dev loader.
 */
export function dataplaneModuleCommand(module: string): { file: string; args: string[] } {
  if (!fileURLToPath(import.meta.url).endsWith('.ts'))
    return { file: process.execPath, args: [fileURLToPath(new URL(`./${module}.js`, import.meta.url))] };
  const loader = fileURLToPath(new URL('../../scripts/register-ts.mjs', import.meta.url));
  return { file: process.execPath, args: ['--import', loader, fileURLToPath(new URL(`./${module}.ts`, import.meta.url))] };
}
