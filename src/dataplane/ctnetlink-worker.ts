// Runs inside another network namespace (`ip netns exec NAME node ctnetlink-worker.js`) and serves that
// namespace's conntrack table over JSON lines: `{ id, op: 'list', family }` → `{ id, entries }` (WireEntry arrays),
// `{ id, op: 'mark', updates }` → `{ id, updated, gone }`, errors as `{ id, error }`. The first line is
// `{ ready: true }`. It exits when stdin closes.

import { openInProcess } from './ctnetlink.js';
import { entryToWire, type MarkUpdate } from './ctnetlink-codec.js';
import { serveJsonLines, writeLine } from './json-line-worker.js';

const table = await openInProcess();
writeLine({ ready: true });
serveJsonLines(
  async (request) => {
    if (request.op === 'list') return { entries: (await table.list(request['family'] === 6 ? 6 : 4)).map(entryToWire) };
    if (request.op === 'mark') return { ...(await table.updateMarks((request['updates'] as MarkUpdate[] | undefined) ?? [])) };
    throw new Error(`unknown op ${String(request.op)}`);
  },
  () => table.close(),
);
