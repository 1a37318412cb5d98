// A command's output written as it is made, a chunk at a time, to a file or to stdout (`netfence map`: the large
// tier's map is 70-100 MB of text, and holding it whole, with the file write's copy of it, was most of the
// command's peak memory). A file is written beside itself and renamed into place only once the output is whole:
// should the rendering or a write fail partway, FILE is still what it was (or still absent), never a torn half.

import { closeSync, openSync, realpathSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Out } from '../map/index.js';
import type { Io } from './command-specs.js';
import { CommandFailure } from './options.js';

/**
 * Pieces of output are gathered to about this many characters before each write: few writes, and each chunk
 * small enough for V8's young generation (a string past ~128 KB is allocated among the large objects, which
 * only a full collection frees: 1 MiB chunks of a 100 MB page kept ~30 MiB more resident).
 */
const WRITE_CHUNK = 1 << 15;

/**
 * What `writer` makes, to `file` (replaced whole, on success only; `wrote FILE` said on stderr) or else to stdout.
 * A write error is a CommandFailure naming the file; an error of `writer` itself is thrown as it is.
 */
export function writeOutput(file: string | undefined, io: Io, writer: (out: Out) => void, command: string): void {
  if (file === undefined) return chunked(writer, (chunk) => io.out(chunk));
  const failed = (err: unknown) => new CommandFailure(`cannot write ${file}: ${(err as Error).message}`);
  // A symbolic link is written through, as a plain write of FILE would.
  const target = resolved(file);
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, 'wx');
  } catch (err) {
    throw failed(err);
  }
  try {
    try {
      chunked(writer, (chunk) => {
        try {
          writeAll(fd, chunk);
        } catch (err) {
          throw failed(err);
        }
      });
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(temp, target);
    } catch (err) {
      throw failed(err);
    }
  } catch (err) {
    try {
      unlinkSync(temp);
    } catch {
      // Already renamed, or never there: nothing to remove.
    }
    throw err;
  }
  io.err(`netfence ${command}: wrote ${file}\n`);
}

function resolved(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

function chunked(writer: (out: Out) => void, send: (chunk: string) => void): void {
  let parts: string[] = [];
  let size = 0;
  writer((piece) => {
    parts.push(piece);
    size += piece.length;
    if (size < WRITE_CHUNK) return;
    send(parts.join(''));
    parts = [];
    size = 0;
  });
  if (parts.length > 0) send(parts.join(''));
}

/** The string as it is (no Buffer made of it); the rest as bytes, should a write take only part. */
function writeAll(fd: number, chunk: string): void {
  const written = writeSync(fd, chunk);
  const bytes = Buffer.byteLength(chunk);
  if (written >= bytes) return;
  const rest = Buffer.from(chunk);
  for (let at = written; at < bytes;) at += writeSync(fd, rest, at);
}
