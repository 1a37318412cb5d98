// What a /metrics scrape costs once anti-spoofing is on: the drop series are read from the kernel at
// each scrape (`nft -j list table bridge netfence`, parsed, ports resolved to pods). A scratch netns gets
// the table netfence renders for N dual-stack pod ports; each scrape is one render() of the metrics
// facade with the daemon's source. Printed per N: wall time per scrape (median and worst), CPU per
// scrape (this process's user+sys plus its children's, the nft runs, from /proc/self/stat) and how many
// table reads the scrapes cost (scrapes within SPOOF_READ_INTERVAL_MS of a read share it).
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-spoof-scrape.ts [--ports 10,110,500] [--scrapes 20] [--rate 0]
// --rate N starts a scrape every 1/N s (a sustained flood) instead of back to back.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AntiSpoofState } from '../src/antispoof/model.js';
import { ANTISPOOF_TABLE, renderAntiSpoof } from '../src/antispoof/render.js';
import { applyNftScript, readNftCounts } from '../src/dataplane/nft.js';
import { SPOOF_READ_INTERVAL_MS, spoofDropSamples } from '../src/observe/metrics-antispoof-revoke.js';
import { createMetrics } from '../src/observe/metrics.js';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';

const { values } = parseArgs({
  options: {
    ports: { type: 'string', default: '10,110,500' },
    scrapes: { type: 'string', default: '20' },
    rate: { type: 'string', default: '0' },
  },
});
const SCRAPES = Number(values.scrapes);
const RATE = Number(values.rate);

/** user+sys of this process and its waited-for children, in seconds (clock ticks of 1/100 s). */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // After "pid (comm) " the list starts at field 3 (state): utime, stime, cutime, cstime (fields 14-17) are at 11-14.
  return [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0) / 100;
}

function stateOf(ports: number): AntiSpoofState {
  const bindings = Array.from({ length: ports }, (_, i) => ({
    port: `veth${i.toString(16).padStart(8, '0')}`,
    ipv4: [`10.244.${1 + (i >> 8)}.${i & 255}`],
    ipv6: [`fd00:10:244:1::${(i + 2).toString(16)}`],
    source: `cbr0-${i}-eth0`,
  }));
  return { bridge: 'cni0', bindings, unknownPorts: [], otherPorts: [], conflicts: [] };
}

async function main(): Promise<void> {
  console.log(
    `# node --import ./scripts/register-ts.mjs scripts/bench-spoof-scrape.ts --ports ${values.ports} --scrapes ${SCRAPES} --rate ${RATE}`,
  );
  console.log('| pod ports | table rules | scrape wall median | scrape wall worst | CPU per scrape (incl. nft) | table reads | elapsed |');
  console.log('|---|---|---|---|---|---|---|');
  try {
    for (const ports of values.ports!.split(',').map(Number)) {
      const ns = await createScratchNetns('sp');
      const state = stateOf(ports);
      const script = renderAntiSpoof(state);
      await applyNftScript(script, ns.name);
      const rules = (script.match(/ drop comment /g) ?? []).length;
      const metrics = createMetrics();
      const byIp = new Map(state.bindings.map((b, i) => [b.ipv4[0]!, { namespace: 'x', pod: `p${i}` }]));
      let reads = 0;
      metrics.setSpoofDropSource(async () => {
        reads++;
        return spoofDropSamples(await readNftCounts('bridge', ANTISPOOF_TABLE, ns.name), (port) =>
          byIp.get(state.bindings.find((b) => b.port === port)?.ipv4[0] ?? ''),
        );
      });
      await metrics.render(); // warm-up (module loads, first process spawn)
      await new Promise((r) => setTimeout(r, SPOOF_READ_INTERVAL_MS)); // so the first timed scrape reads
      reads = 0;
      const walls: number[] = [];
      const t0All = performance.now();
      const cpu0 = cpuSeconds();
      for (let i = 0; i < SCRAPES; i++) {
        const due = t0All + (RATE > 0 ? (i * 1000) / RATE : 0);
        if (performance.now() < due) await new Promise((r) => setTimeout(r, due - performance.now()));
        const t0 = performance.now();
        await metrics.render();
        walls.push(performance.now() - t0);
      }
      const cpu = (cpuSeconds() - cpu0) / SCRAPES;
      const elapsed = (performance.now() - t0All) / 1000;
      walls.sort((a, b) => a - b);
      console.log(
        `| ${ports} | ${rules} drop rules | ${walls[Math.floor(walls.length / 2)]!.toFixed(1)} ms | ${walls.at(-1)!.toFixed(1)} ms | ${(cpu * 1000).toFixed(1)} ms | ${reads} | ${elapsed.toFixed(1)} s |`,
      );
      await ns.destroy();
    }
  } finally {
    destroyAllScratchNetns();
  }
}

await main();
