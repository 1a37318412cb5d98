// What a command-line entry does when the other end of its stdout or stderr has gone.

/**
 * `netfence compile | head` closes stdout early: that is the reader's choice, not an error, so the command
 * ends with status 0. A closed stderr (`2>&1 | head` after the reader left, a log collector gone) loses the
 * messages, not the command: its output and exit status still stand, where an uncaught EPIPE would end it
 * with status 1.
 */
export function tolerateClosedPipes(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  process.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}
