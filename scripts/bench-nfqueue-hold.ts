// The hold floor of an NFQUEUE: how long a UDP answer spends in the queue when its verdict is sent at once
// (no work). In a scratch network namespace, a UDP server on 127.0.0.1 answers a client N times, one
// exchange at a time; the answers (source port 53) go through `-j NFQUEUE` to a queue this process binds with
// the DNS agent's socket (src/dataplane/dns-socket.ts) and releases on arrival. The answer's way from the
// server's send to the client's receipt is timed with the queue rule and, as the baseline, without it; the floor
// is the difference. Prints p50/p99/max of both and the load average.
// With --capture FILE it instead writes one kernel NFQNL_MSG_PACKET message (hex) for the codec's unit test.
//
//   node --import ./scripts/register-ts.mjs scripts/bench-nfqueue-hold.ts [--count 2000]
//   node --import ./scripts/register-ts.mjs scripts/bench-nfqueue-hold.ts --capture test/unit/dataplane/fixtures/nfqueue-packet.json

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const QUEUE = 5;
const { values } = parseArgs({
  options: { count: { type: 'string', default: '2000' }, inside: { type: 'boolean', default: false }, capture: { type: 'string' } },
});
const count = Number(values.count);

const sh = (file: string, args: string[]): void => {
  const r = spawnSync(file, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr}`);
};
const RULE = ['OUTPUT', '-o', 'lo', '-p', 'udp', '--sport', '53', '-j', 'NFQUEUE', '--queue-num', String(QUEUE), '--queue-bypass'];

if (!values.inside) {
  // Outside: make the namespace, run this script inside it, remove the namespace whatever happens.
  const ns = `nfqbench-${randomBytes(3).toString('hex')}`;
  sh('ip', ['netns', 'add', ns]);
  try {
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    const self = fileURLToPath(import.meta.url);
    const loader = fileURLToPath(new URL('./register-ts.mjs', import.meta.url));
    const args = ['netns', 'exec', ns, process.execPath, '--import', loader, self, '--inside', '--count', String(count)];
    const r = spawnSync('ip', values.capture ? [...args, '--capture', values.capture] : args, { stdio: 'inherit' });
    process.exitCode = r.status ?? 1;
  } finally {
    sh('ip', ['netns', 'del', ns]);
  }
} else {
  await inside();
}

async function inside(): Promise<void> {
  const server = createSocket('udp4');
  const client = createSocket('udp4');
  await new Promise<void>((resolve) => server.bind(53, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => client.bind(0, '127.0.0.1', resolve));
  // Timed from the server's send of the answer to the client's receipt: the answer's own path, the queue's
  // hold included when the rule is there (the query's leg and the server's wake-up are left out).
  let answerSent = 0n;
  server.on('message', (msg, from) => {
    answerSent = process.hrtime.bigint();
    server.send(msg, from.port, from.address);
  });
  const once = (): Promise<number> =>
    new Promise((resolve) => {
      client.once('message', () => resolve(Number(process.hrtime.bigint() - answerSent) / 1e6));
      client.send(Buffer.from('netfence hold floor'), 53, '127.0.0.1');
    });
  const series = async (): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < 200; i++) await once(); // warm-up
    for (let i = 0; i < count; i++) out.push(await once());
    return out.sort((a, b) => a - b);
  };

  if (values.capture) {
    await capture(values.capture);
  } else {
    const baseline = await series();
    sh('iptables', ['-w', '-A', ...RULE]);
    const { openInProcess } = await import('../src/dataplane/dns-socket.js');
    const queue = await openInProcess({
      queue: QUEUE,
      nflogGroup: QUEUE + 1,
      onAnswer: (id) => queue.release(id),
      onQuery: () => undefined,
      onError: (message) => console.error(message),
    });
    const queued = await series();
    await queue.close();
    const pct = (xs: number[], p: number): string => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(3);
    console.log(`UDP answer on loopback, server send → client receipt, ${count} sequential exchanges each (ms)`);
    console.log(`  without the queue:            p50 ${pct(baseline, 50)}  p99 ${pct(baseline, 99)}  max ${pct(baseline, 100)}`);
    console.log(`  answer through NFQUEUE ${QUEUE}:     p50 ${pct(queued, 50)}  p99 ${pct(queued, 99)}  max ${pct(queued, 100)}`);
    console.log(
      `  hold floor (difference):      p50 ${(Number(pct(queued, 50)) - Number(pct(baseline, 50))).toFixed(3)}  p99 ${(Number(pct(queued, 99)) - Number(pct(baseline, 99))).toFixed(3)}`,
    );
    console.log(
      `  load average: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  }
  server.close();
  client.close();

  async function capture(file: string): Promise<void> {
    // The raw kernel message, read from a netlink socket of our own (the codec's fixture must be the kernel's bytes).
    const { createNetlink } = await import('netlink');
    const codec = await import('../src/dataplane/nfqueue-codec.js');
    sh('iptables', ['-w', '-A', ...RULE]);
    const socket = createNetlink(12, { ref: true, recvBufferSize: 1 << 20, sendBufferSize: 1 << 16 });
    await socket.request(codec.NFQNL_MSG_CONFIG, codec.bindRequest(QUEUE), { timeout: 5000 });
    await socket.request(
      codec.NFQNL_MSG_CONFIG,
      codec.configRequest(QUEUE, { copyRange: 4160, maxLen: 16, failOpen: true, conntrack: false }),
      {
        timeout: 5000,
      },
    );
    const message = new Promise<{ type: number; data: Buffer }>((resolve) => socket.once('message', (msgs) => resolve(msgs[0]!)));
    const answered = once();
    const m = await message;
    const packet = codec.parsePacketMessage(m.type, m.data);
    socket.send(codec.NFQNL_MSG_VERDICT, codec.verdictRequest(QUEUE, packet!.id, 'accept'), { flags: 1 });
    await answered;
    socket.close();
    const note =
      'scripts/bench-nfqueue-hold.ts --capture: a UDP answer from 127.0.0.1:53, queued at OUTPUT in a scratch netns, kernel ' +
      spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(file, `${JSON.stringify({ capturedWith: note, type: m.type, hex: m.data.toString('hex') }, null, 1)}\n`);
    console.log(`wrote ${file}`);
  }
}
