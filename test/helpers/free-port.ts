// A TCP port on 127.0.0.1 that nothing listens on right now: for a daemon's --listen-address in tests and
// benchmarks (the kernel may hand it to someone else before the daemon binds it; on a test machine it does not).

import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
