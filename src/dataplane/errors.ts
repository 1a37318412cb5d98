// Typed failure of a kernel tool: what ran, how it failed, and which input line it choked on.

export class DataplaneCommandError extends Error {
  override readonly name = 'DataplaneCommandError';
  constructor(
    readonly command: string,
    readonly exitCode: number | undefined,
    readonly stderr: string,
    /** 1-based line of the restore input the tool reported, when it did. */
    readonly line: number | undefined,
    /** The input lines around `line`, prefixed with their numbers. */
    readonly context: readonly string[],
  ) {
    super(
      `${command} failed (exit ${exitCode ?? 'signal'}): ${stderr.trim().split('\n').slice(-3).join(' | ')}` +
        (line !== undefined ? `\n  at input line ${line}:\n    ${context.join('\n    ')}` : ''),
    );
  }
}

/** The input lines around a failing one, numbered like an editor would (kube-proxy's ExtractLines). */
export function linesAround(input: string, line: number, radius = 3): string[] {
  const lines = input.split('\n');
  const from = Math.max(1, line - radius);
  const to = Math.min(lines.length, line + radius);
  const out: string[] = [];
  for (let n = from; n <= to; n++) out.push(`${n === line ? '>' : ' '}${String(n).padStart(5)}: ${lines[n - 1] ?? ''}`);
  return out;
}
