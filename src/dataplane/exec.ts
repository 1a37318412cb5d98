// The one place a tool is run and waited for: everything that runs one goes through `run`. Processes that
// stay up and answer requests (the NFLOG reader, the netns workers) start in process.ts, the only other
// module that spawns.
//
// node:child_process directly rather than execa: when the process is out of file descriptors, execa 9
// fails inside its own setup ("subprocess.stdio is not iterable") before it listens for the child's
// 'error' event, and Node then kills the daemon with an unhandled 'error' (spawn EMFILE). Here every
// failure to start a tool, to feed it or to finish in time becomes a DataplaneCommandError, which the sync
// loop logs, counts and retries like any failed apply.

import { spawn, type ChildProcess } from 'node:child_process';
import { DataplaneCommandError, linesAround } from './errors.js';

export interface RunOptions {
  /** Run inside this named network namespace (`ip netns exec NAME …`). */
  readonly netns?: string | undefined;
  /** Written to the tool's stdin. */
  readonly input?: string;
  readonly timeoutMs?: number;
  /** Extracts the failing input line from stderr, for restore-style tools. */
  readonly lineOf?: (stderr: string) => number | undefined;
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
}

/** Told of every tool run (the tool's own name, not `ip netns exec`) and whether it succeeded. */
export type ToolRunListener = (tool: string, ok: boolean) => void;
const listeners = new Set<ToolRunListener>();

/** Counts tool runs for metrics; returns the unsubscribe function. Every run in this process is reported. */
export function onToolRun(listener: ToolRunListener): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

const notify = (file: string, ok: boolean): void => {
  const tool = file.slice(file.lastIndexOf('/') + 1);
  for (const l of listeners) l(tool, ok);
};

export async function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const [cmd, argv] = opts.netns ? ['ip', ['netns', 'exec', opts.netns, file, ...args]] : [file, [...args]];
  const result = await collect(cmd, argv, opts.input ?? '', opts.timeoutMs ?? 60_000);
  notify(file, result.exitCode === 0 && !result.error);
  if (result.exitCode !== 0 || result.error) {
    const stderr = result.stderr || result.error?.message || `exited with code ${String(result.exitCode)}`;
    const line = opts.lineOf?.(stderr);
    const context = line !== undefined && opts.input !== undefined ? linesAround(opts.input, line) : [];
    throw new DataplaneCommandError([file, ...args].join(' '), result.exitCode, stderr, line, context);
  }
  return { stdout: result.stdout, stderr: result.stderr };
}

interface Collected {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
  /** Why the tool could not start, be fed or finish in time; undefined when it ran and exited. */
  readonly error: Error | undefined;
}

/** Runs the tool to completion with `input` on stdin; never rejects and never leaves an 'error' event unheard. */
function collect(cmd: string, argv: readonly string[], input: string, timeoutMs: number): Promise<Collected> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let error: Error | undefined;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (exitCode: number | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), error });
    };
    let child: ChildProcess;
    try {
      // env passed explicitly: this module's process.env (a test runner may give it its own copy, which the
      // core child_process module would not see).
      child = spawn(cmd, [...argv], { stdio: ['pipe', 'pipe', 'pipe'], env: process.env });
    } catch (e) {
      error = e instanceof Error ? e : new Error(String(e));
      finish(undefined);
      return;
    }
    child.on('error', (e) => {
      error ??= e;
      // A child that never started (EMFILE, ENOENT) has no pid and will not emit 'close'.
      if (child.pid === undefined) finish(undefined);
    });
    child.stdout?.on('data', (d: Buffer) => out.push(d));
    child.stderr?.on('data', (d: Buffer) => err.push(d));
    child.stdout?.on('error', () => undefined);
    child.stderr?.on('error', () => undefined);
    // EPIPE when the tool exits without reading all of its input: its exit status tells what happened.
    child.stdin?.on('error', () => undefined);
    child.on('close', (code, signal) => {
      if (code === null && !error) error = new Error(`killed by ${String(signal)}`);
      finish(code ?? undefined);
    });
    timer = setTimeout(() => {
      error ??= new Error(`timed out after ${timeoutMs} ms`);
      child.kill('SIGKILL');
    }, timeoutMs);
    if (child.stdin) child.stdin.end(input);
    else if (!error) error = new Error("could not open the tool's stdin");
  });
}
