// The errors a command's work throws for cli/ to print: a usage error (exit 2 with the command's usage) or a
// failure its message explains in full, or a kernel tool's failure (cli/hints.ts says what to do about it).
// Plain classes: `netfence --help` loads this module.

export { DataplaneCommandError } from '../dataplane/errors.js';

/** A command line that cannot be run as written: exit 2 with the command's usage. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A failure its message explains in full (what and where): exit 2 with the message alone, no usage or stack. */
export class CommandFailure extends Error {
  override readonly name: string = 'CommandFailure';
}
