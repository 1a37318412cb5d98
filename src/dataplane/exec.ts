// The one place processes are spawned. Everything that runs a tool goes through `run`.

import { execa } from 'execa';
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
  const result = await execa(cmd, argv, {
    input: opts.input ?? '',
    reject: false,
    timeout: opts.timeoutMs ?? 60_000,
    stripFinalNewline: false,
    maxBuffer: 1024 * 1024 * 1024,
  });
  notify(file, result.exitCode === 0 && !result.failed);
  if (result.exitCode !== 0 || result.failed) {
    const stderr = String(result.stderr ?? '') || String(result.message ?? '');
    const line = opts.lineOf?.(stderr);
    const context = line !== undefined && opts.input !== undefined ? linesAround(opts.input, line) : [];
    throw new DataplaneCommandError([file, ...args].join(' '), result.exitCode, stderr, line, context);
  }
  return { stdout: String(result.stdout), stderr: String(result.stderr) };
}
