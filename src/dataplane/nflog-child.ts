// `node nflog-child.js GROUP`, started by nflog.ts with `ip netns exec`: reads the NFLOG group inside
// that network namespace and writes `{"ready":true}`, then one `{"packet":…}` line per logged packet.
// Ends when its stdin closes (the daemon went away) or on SIGTERM.

import { startNflogReader } from './nflog.js';

const group = Number(process.argv[2]);
const write = (obj: unknown): void => void process.stdout.write(`${JSON.stringify(obj)}\n`);

if (!Number.isInteger(group) || group < 0 || group > 65535) {
  process.stderr.write(`usage: nflog-child GROUP (0-65535), got ${process.argv[2]}\n`);
  process.exit(2);
}
try {
  const reader = await startNflogReader({ group, onPacket: (packet) => write({ packet }), onError: (error) => write({ error }) });
  const stop = (): void => void reader.stop().finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.stdin.on('end', stop).resume();
  write({ ready: true, group });
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}
