// `node dns-socket-worker.js QUEUE GROUP [MAXLEN]`, started by dns-socket.ts with `ip netns exec`: the DNS agent's socket
// inside that network namespace. Writes `{ ready: true }` (or `{ ready: true, error }`), then one line per held
// answer `{ answer: id, packet: base64 }` and per logged query `{ query: base64 }`, in the socket's order. Answers
// `{ id, op: 'grant', packetId, changes, deadlineMs }` with `{ id, outcome }` and `{ id, op: 'release', packetId }`
// with `{ id }`. When stdin closes or on SIGTERM it releases every held answer, unbinds and exits.

import { openInProcess, type DnsSocket, type GrantOutcome } from './dns-socket.js';
import type { SetMembersChange } from './ipset-netlink.js';
import { serveJsonLines, writeLine } from './json-line-worker.js';

const queue = Number(process.argv[2]);
const group = Number(process.argv[3]);
const maxLen = process.argv[4] !== undefined ? Number(process.argv[4]) : undefined;
let socket: DnsSocket | undefined;
try {
  socket = await openInProcess({
    queue,
    nflogGroup: group,
    ...(maxLen !== undefined ? { maxLen } : {}),
    onAnswer: (id, packet) => writeLine({ answer: id, packet: packet.toString('base64') }),
    onQuery: (packet) => writeLine({ query: packet.toString('base64') }),
    onError: (error) => writeLine({ error }),
  });
  writeLine({ ready: true });
} catch (err) {
  writeLine({ ready: true, error: (err as Error).message });
}

// Stdin closing and SIGTERM both end here (the parent sends both): one close, which the exit waits for.
let closing: Promise<void> | undefined;
const close = (): Promise<void> => (closing ??= socket?.close() ?? Promise.resolve());
process.once('SIGTERM', () => void close().finally(() => process.exit(0)));

serveJsonLines(async (request) => {
  if (!socket || closing) throw new Error('the socket is closed');
  const packetId = request['packetId'] as number;
  if (request.op === 'release') {
    socket.release(packetId);
    return {};
  }
  if (request.op !== 'grant') throw new Error(`unknown op ${String(request.op)}`);
  const outcome: GrantOutcome = await socket.grant(packetId, request['changes'] as SetMembersChange[], request['deadlineMs'] as number);
  return { outcome };
}, close);
