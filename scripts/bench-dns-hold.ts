// Time a DNS answer is held by the DNS agent of egress by DNS name, beside its floor. In a scratch network
// namespace a UDP server on 127.0.0.2:53 answers a client on 127.0.0.1, paced at --rate answers a second (one
// query every 1/rate s, not one after another), each answer a new name and a new address. Three series, timed
// from the server's send of the answer to the client's receipt (the answer's own path):
//   without the queue   no rule: the loopback's own time;
//   floor               the answer queued (the agent's rules: NFQUEUE on answers, NFLOG on queries) and released
//                       on arrival by the same socket (src/dataplane/dns-socket.ts), no work;
//   agent               the daemon's agent (src/daemon/dns-egress.ts): query matched, answer parsed, the address
//                       written to the pod's learned set over netlink (timeout + comment) and acknowledged, then
//                       released; its plan holds --sets learned sets (the other subject pods of a large node).
// Then the memory one learned entry costs: the agent's count (V8 heap per entry) and the kernel's (the set's
// "Size in memory" per member). Prints the load average: p99 on a loaded machine is scheduling.
//
//   sudo node --import ./scripts/register-ts.mjs scripts/bench-dns-hold.ts [--rate 200] [--count 2000] [--sets 1000]

import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';

const QUEUE = 4100;
const GROUP = 4101;
const SET = 'bench-learned';
const CLIENT = '127.0.0.1';
const SERVER = '127.0.0.2';
const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    count: { type: 'string', default: '2000' },
    sets: { type: 'string', default: '1000' },
    inside: { type: 'boolean', default: false },
  },
});
const rate = Number(values.rate);
const count = Number(values.count);

const sh = (file: string, args: string[]): string => {
  const r = spawnSync(file, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

if (!values.inside) {
  // The benchmarks' scratch namespace: deleted even when this run is interrupted.
  const { name: ns } = await createScratchNetns('dns');
  try {
    const self = fileURLToPath(import.meta.url);
    const loader = fileURLToPath(new URL('./register-ts.mjs', import.meta.url));
    const args = ['netns', 'exec', ns, process.execPath, '--expose-gc', '--import', loader, self, '--inside'];
    const r = spawnSync('ip', [...args, '--rate', String(rate), '--count', String(count), '--sets', values.sets], { stdio: 'inherit' });
    process.exitCode = r.status ?? 1;
  } finally {
    destroyAllScratchNetns();
  }
} else {
  await inside();
}

function query(id: number, name: string): Buffer {
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const h = Buffer.alloc(12);
  h.writeUInt16BE(id, 0);
  h.writeUInt16BE(0x0100, 2);
  h.writeUInt16BE(1, 4);
  return Buffer.concat([h, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}

/** The answer: the query's header and question, QR set, one A record (a pointer to the question's name). */
function answer(q: Buffer, address: number): Buffer {
  const a = Buffer.from(q);
  a.writeUInt16BE(0x8180, 2);
  a.writeUInt16BE(1, 6);
  const rr = Buffer.alloc(16);
  rr.writeUInt16BE(0xc00c, 0);
  rr.writeUInt16BE(1, 2);
  rr.writeUInt16BE(1, 4);
  rr.writeUInt32BE(300, 6);
  rr.writeUInt16BE(4, 10);
  rr.writeUInt32BE(address >>> 0, 12);
  return Buffer.concat([a, rr]);
}

async function inside(): Promise<void> {
  const { createDnsEgress } = await import('../src/daemon/dns-egress.js');
  const { openInProcess } = await import('../src/dataplane/dns-socket.js');
  const { LearnedEntries } = await import('../src/dns/learned.js');
  const { defaultDnsLearningSettings } = await import('../src/model/dns-egress.js');
  const { nullLogger } = await import('../src/log.js');
  const { createMetrics } = await import('../src/observe/metrics.js');

  const server = createSocket('udp4');
  const client = createSocket('udp4');
  await new Promise<void>((resolve) => server.bind(53, SERVER, resolve));
  await new Promise<void>((resolve) => client.bind(0, CLIENT, resolve));
  const sent = new Map<number, bigint>();
  let nextAddress = (10 << 24) + 1;
  server.on('message', (msg, from) => {
    const reply = answer(msg, nextAddress++);
    sent.set(msg.readUInt16BE(0), process.hrtime.bigint());
    server.send(reply, from.port, from.address);
  });
  let run = 0;
  const series = async (n: number): Promise<number[]> => {
    run++;
    const out: number[] = [];
    let received = 0;
    const done = new Promise<void>((resolve) => {
      client.on('message', function onAnswer(msg) {
        const t = sent.get(msg.readUInt16BE(0));
        if (t !== undefined) out.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (++received === n) {
          client.off('message', onAnswer);
          resolve();
        }
      });
    });
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      // Paced from the start, so a late tick does not push every later query back.
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      client.send(query(i & 0xffff, `n${i}.r${run}.bench.example`), 53, SERVER);
    }
    await Promise.race([done, new Promise((r) => setTimeout(r, 10_000))]);
    if (out.length < n) throw new Error(`only ${out.length} of ${n} answers arrived`);
    return out.sort((a, b) => a - b);
  };
  const warm = Math.min(200, count);

  const baseline = (await series(warm), await series(count));

  // The agent's rules, as the compiler renders them for a pod on this node (here in OUTPUT: both ends are local).
  for (const args of [
    ['-A', 'OUTPUT', '-o', 'lo', '-p', 'udp', '--sport', '53', '-d', CLIENT, '-m', 'conntrack', '--ctstate', 'ESTABLISHED', '--ctdir', 'REPLY', '-j', 'NFQUEUE', '--queue-num', String(QUEUE), '--queue-bypass'],
    ['-A', 'OUTPUT', '-o', 'lo', '-p', 'udp', '--dport', '53', '-s', CLIENT, '-m', 'conntrack', '--ctdir', 'ORIGINAL', '-j', 'NFLOG', '--nflog-group', String(GROUP)],
  ]) sh('iptables', ['-w', ...args]); // prettier-ignore

  const floorSocket = await openInProcess({
    queue: QUEUE,
    nflogGroup: GROUP,
    onAnswer: (id) => floorSocket.release(id),
    onQuery: () => undefined,
    onError: (e) => console.error(e),
  });
  const floor = (await series(warm), await series(count));
  await floorSocket.close();

  sh('ipset', ['create', SET, 'hash:ip', 'family', 'inet', 'timeout', '30', 'maxelem', '65536', 'comment']);
  const others = Array.from({ length: Number(values.sets) }, (_, i) => ({
    setName: `other-${i}`,
    family: 4 as const,
    pod: `x/p${i}`,
    podAddress: `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
    policy: 'bench',
    ruleIndex: 0,
    domainNames: ['*.example.org'],
  }));
  const metrics = createMetrics();
  const agent = createDnsEgress({ netns: undefined, logger: nullLogger, metrics });
  await agent.follow({
    settings: { ...defaultDnsLearningSettings, queueNum: QUEUE, nflogGroup: GROUP, holdDeadlineMs: 1000 },
    sets: [
      { setName: SET, family: 4, pod: 'x/client', podAddress: CLIENT, policy: 'bench', ruleIndex: 0, domainNames: ['*.bench.example'] },
      ...others,
    ],
  });
  const learnedBefore = Number(/Number of entries: (\d+)/.exec(sh('ipset', ['list', '-t', SET]))![1]);
  const agentSeries = (await series(warm), await series(count));
  await agent.stop();
  const listing = sh('ipset', ['list', '-t', SET]);
  const learned = Number(/Number of entries: (\d+)/.exec(listing)![1]) - learnedBefore;
  const exposition = await metrics.render();
  const errors = /netfence_dns_released_on_error_total\{[^}]*\} (\d+)/.exec(exposition)?.[1] ?? '0';

  // Memory per learned entry: the kernel's (the set's size in memory over its members) and the agent's count.
  const kernelBytes = Number(/Size in memory: (\d+)/.exec(listing)![1]);
  const members = Number(/Number of entries: (\d+)/.exec(listing)![1]);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const entries = new LearnedEntries(1 << 20);
  const N = 100_000;
  for (let i = 0; i < N; i++)
    entries.learn(`nf4d:abcdefghij${i % 50}klmnopqrst`, `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, Date.now() + 60_000, Date.now());
  gc?.();
  // Read while `entries` is still used below (after its last use the collector may take it back).
  const agentBytes = (process.memoryUsage().heapUsed - heap0) / entries.size;

  const pct = (xs: number[], p: number): number => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
  const row = (label: string, xs: number[]): string =>
    `  ${label.padEnd(34)} p50 ${pct(xs, 50).toFixed(3)}  p99 ${pct(xs, 99).toFixed(3)}  max ${pct(xs, 100).toFixed(3)}`;
  console.log(`DNS answer on loopback at ${rate} answers/s, server send → client receipt, ${count} answers per series (ms)`);
  console.log(row('without the queue', baseline));
  console.log(row('floor: queued, released at once', floor));
  console.log(row(`agent: learned (+${Number(values.sets)} other sets)`, agentSeries));
  console.log(
    `  added by the agent over the floor: p50 ${(pct(agentSeries, 50) - pct(floor, 50)).toFixed(3)}  p99 ${(pct(agentSeries, 99) - pct(floor, 99)).toFixed(3)}`,
  );
  console.log(`  addresses learned in the agent series: ${learned} of ${count + warm}; released on error: ${errors}`);
  console.log(
    `  memory per learned entry: kernel ${(kernelBytes / members).toFixed(0)} B (set of ${members}), agent ${agentBytes.toFixed(0)} B (count of ${entries.size})`,
  );
  console.log(
    `  load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  server.close();
  client.close();
}
