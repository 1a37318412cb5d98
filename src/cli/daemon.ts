// Placeholder until the daemon lands: says so plainly instead of pretending.
import type { Io } from './commands-oneshot.js';
export async function daemonCommand(_argv: readonly string[], io: Io): Promise<number> {
  io.err('netfence daemon: not implemented yet\n');
  return 2;
}
