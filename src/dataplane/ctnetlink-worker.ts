// Runs inside another network namespace (`ip netns exec NAME node ctnetlink-worker.js`) and serves that
// namespace's conntrack table over JSON lines: `{ id, op: 'list', family }` → `{ id, entries }` (WireEntry arrays),
// `{ id, op: 'mark', updates }` → `{ id, updated, gone }`, errors as `{ id, error }`. The first line is
// `{ ready: true }`. It exits when stdin closes.

import { createInterface } from 'node:readline';
import type { IpFamily } from '../model/cluster.js';
import { openInProcess } from './ctnetlink.js';
import { entryToWire, type MarkUpdate } from './ctnetlink-codec.js';

const table = await openInProcess();
const write = (message: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(message)}\n`);
};

write({ ready: true });
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let request: { id?: number; op?: string; family?: IpFamily; updates?: MarkUpdate[] };
  try {
    request = JSON.parse(line) as typeof request;
  } catch {
    process.stderr.write(`unparsable request: ${line.slice(0, 200)}\n`);
    return;
  }
  const id = request.id;
  const answer = async (): Promise<Record<string, unknown>> => {
    if (request.op === 'list') return { entries: (await table.list(request.family === 6 ? 6 : 4)).map(entryToWire) };
    if (request.op === 'mark') return { ...(await table.updateMarks(request.updates ?? [])) };
    throw new Error(`unknown op ${String(request.op)}`);
  };
  answer().then(
    (reply) => write({ id, ...reply }),
    (err: Error) => write({ id, error: err.message }),
  );
});
lines.on('close', () => {
  void table.close().then(() => process.exit(0));
});
