// Splits a byte stream into lines with a bound on each line's length. readline has none: a server (or a
// proxy) that sends one line that never ends grows its buffer until V8 refuses the string ("RangeError:
// Invalid string length", thrown where nothing catches it) and the daemon dies.

/**
 * The longest watch or WatchList line read, in bytes: 4 MiB. etcd refuses a request over 1.5 MiB
 * (`--max-request-bytes`, which the API server's own object size check follows), so no stored object is
 * larger than that. Built-in kinds are stored as protobuf, and their JSON is larger (field names, base64,
 * escapes): up to about twice. Twice that again leaves room for the event's envelope and for a server
 * whose etcd allows a little more, while still refusing a line that never ends before it costs memory.
 */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** A line longer than the bound: the stream is not a Kubernetes watch stream (or is broken). */
export class LineTooLongError extends Error {
  override readonly name = 'LineTooLongError';
  constructor(
    readonly maxBytes: number,
    readonly start: string,
  ) {
    super(`a line of the stream is longer than ${maxBytes} bytes (it starts: ${start})`);
  }
}

const NEWLINE = 0x0a;

/** Feed it chunks; it returns the complete lines so far, and throws LineTooLongError once the open line passes the bound. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer | string): string[] {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const lines: string[] = [];
    let from = 0;
    for (let nl = buf.indexOf(NEWLINE, from); nl !== -1; nl = buf.indexOf(NEWLINE, from)) {
      if (this.partBytes === 0 && nl - from <= this.maxBytes) lines.push(trimCr(buf.toString('utf8', from, nl)));
      else {
        this.keep(buf.subarray(from, nl));
        lines.push(this.take());
      }
      from = nl + 1;
    }
    if (from < buf.length) this.keep(buf.subarray(from));
    return lines;
  }

  /** What is left when the stream ends (a last line without a newline), if anything. */
  end(): string | undefined {
    return this.partBytes > 0 ? this.take() : undefined;
  }

  private keep(part: Buffer): void {
    if (part.length === 0) return;
    if (this.partBytes + part.length > this.maxBytes) {
      const start = Buffer.concat([...this.parts, part].slice(0, 2))
        .subarray(0, 100)
        .toString('utf8');
      this.parts = [];
      this.partBytes = 0;
      throw new LineTooLongError(this.maxBytes, start);
    }
    // Copied: the chunk's buffer may be a slice of a pooled one, which would be kept alive with it.
    this.parts.push(Buffer.from(part));
    this.partBytes += part.length;
  }

  private take(): string {
    const line = Buffer.concat(this.parts, this.partBytes).toString('utf8');
    this.parts = [];
    this.partBytes = 0;
    return trimCr(line);
  }
}

const trimCr = (line: string): string => (line.endsWith('\r') ? line.slice(0, -1) : line);
