// The worker side of startJsonLineProcess (process.ts) for a process that answers requests: one JSON object per
// line in, `{ id, ...answer }` or `{ id, error, code? }` out, in the order the answers are ready. The ctnetlink
// worker and the netlink relay each run one inside another network namespace.

import { createInterface } from 'node:readline';

export type Request = Readonly<Record<string, unknown>> & { readonly id?: number; readonly op?: string };

export const writeLine = (message: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

/** Answers each request line with `answer`; when stdin closes, runs `close` and exits. */
export function serveJsonLines(answer: (request: Request) => Promise<Record<string, unknown>>, close: () => Promise<void>): void {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    let request: Request;
    try {
      request = JSON.parse(line) as Request;
    } catch {
      process.stderr.write(`unparsable request: ${line.slice(0, 200)}\n`);
      return;
    }
    const { id } = request;
    answer(request).then(
      (reply) => writeLine({ id, ...reply }),
      (err: Error & { code?: string }) => writeLine({ id, error: err.message, ...(err.code ? { code: err.code } : {}) }),
    );
  });
  lines.on('close', () => {
    void close().then(() => process.exit(0));
  });
}
