// Placeholder until the daemon lands: says so plainly instead of pretending.
import type { Io } from './commands-oneshot.js';
export async function inspectCommand(_argv: readonly string[], io: Io): Promise<number> {
  io.err('netfence inspect: not implemented yet\n');
  return 2;
}
