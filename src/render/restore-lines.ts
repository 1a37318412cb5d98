// Lines of a restore payload, read back to tell an operator which one a tool's failure is about.

/**
 * The first line (1-based) of the table block that ends at `reportedLine` whose rule jumps or goes to
 * `target`, undefined when none does.
 */
export function lineJumpingTo(lines: readonly string[], reportedLine: number, target: string): number | undefined {
  let start = reportedLine - 1;
  while (start > 0 && !(lines[start - 1] ?? '').startsWith('*')) start--;
  for (let n = Math.max(start, 1); n <= reportedLine; n++) {
    const words = (lines[n - 1] ?? '').trim().split(/\s+/);
    for (let i = 0; i + 1 < words.length; i++) {
      const flag = words[i];
      if ((flag === '-j' || flag === '--jump' || flag === '-g' || flag === '--goto') && words[i + 1] === target) return n;
    }
  }
  return undefined;
}
