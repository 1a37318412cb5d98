// `npm run bench`: every benchmark row in one markdown table, each beside the kernel floor measured in
// the same run, with its target, met/missed, and the command that reproduces it alone.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/bench-all.ts [--tier large] [--quick] [--xl] [--curve] [--seed 1]
//   --quick  fewer runs and events (a smoke run, about a minute)
//   --xl     also measure the daemon's memory at the xl tier (50k pods; slow)
//   --curve  instead of the table: the cost curve at 1k, 10k, 50k and 100k pods (scripts/bench-curve.ts; slow)
// Kernel, daemon and data-plane rows need root; without it they are listed as skipped, with the reason.

import { availableParallelism } from 'node:os';
import { TIERS, type Tier } from './bench-lib/generator.js';
import { run } from '../src/dataplane/exec.js';
import { commandsBench } from './bench-commands.js';
import { curve } from './bench-curve.js';
import { dataplaneBench } from './bench-dataplane.js';
import { kernelBench, KERNEL_ROWS } from './bench-kernel.js';
import { compileRows, daemonFigures, daemonLatencyRow, daemonRssRow, type DaemonFigures } from './lib/bench-children.js';
import { failedRow, renderTable, skippedRow, tsNode, type BenchRow } from './lib/bench-table.js';

interface Args {
  tier: Tier;
  quick: boolean;
  xl: boolean;
  curve: boolean;
  seed: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { tier: 'large', quick: false, xl: false, curve: false, seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--quick') args.quick = true;
    else if (flag === '--xl') args.xl = true;
    else if (flag === '--curve') args.curve = true;
    else if (flag === '--tier' || flag === '--seed') {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
      if (flag === '--seed') args.seed = Number(value);
      else if ((TIERS as readonly string[]).includes(value)) args.tier = value as Tier;
      else throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
    } else throw new Error(`unknown flag ${flag} (flags: --tier T, --quick, --xl, --curve, --seed N)`);
  }
  return args;
}

const say = (msg: string): void => {
  process.stderr.write(`… ${msg}\n`);
};

async function firstLine(file: string, args: readonly string[]): Promise<string> {
  try {
    const r = await run(file, args);
    return (
      (r.stdout || r.stderr)
        .split('\n')
        .find((l) => l.trim() !== '')
        ?.trim() ?? '?'
    );
  } catch {
    return 'not available';
  }
}

async function machine(): Promise<string[]> {
  const mem =
    (await run('free', ['-h']).catch(() => ({ stdout: '' }))).stdout
      .split('\n')
      .find((l) => l.startsWith('Mem:'))
      ?.split(/\s+/) ?? [];
  return [
    `- CPUs: ${availableParallelism()} (\`nproc\`: ${await firstLine('nproc', [])}); memory (\`free -h\`): total ${mem[1] ?? '?'}, used ${mem[2] ?? '?'}, available ${mem[6] ?? '?'}`,
    `- kernel \`uname -r\`: ${await firstLine('uname', ['-r'])}; load average: ${await firstLine('cat', ['/proc/loadavg'])}`,
    `- ${await firstLine('iptables-nft-restore', ['--version'])}; ${await firstLine('ipset', ['version'])}; node ${process.version}`,
  ];
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const root = process.getuid?.() === 0;
  const runs = { compile: args.quick ? 3 : 20, kernel: args.quick ? 2 : 9, dataplane: args.quick ? 1 : 5 };
  const seconds = args.quick ? 1 : 2;
  // p99 of the large tier over 200 events (the second-slowest), not 60 (where p99 is the maximum).
  const events = args.quick ? 10 : 200;
  const rssEvents = args.quick ? 2 : 6;
  // The xl targets are stated after 1,000 events (RSS and p99 alike).
  const xlEvents = args.quick ? 10 : 1000;
  if (args.curve) {
    if (!root) throw new Error('--curve needs root (kernel and daemon rows); run `sudo npm run bench -- --curve`');
    console.log(
      `## netfence cost curve\n\n${(await machine()).join('\n')}\n\nCommand: node --import ./scripts/register-ts.mjs scripts/bench-curve.ts --seed ${args.seed} --runs ${args.quick ? 1 : 2}\n`,
    );
    console.log(await curve({ seed: args.seed, runs: args.quick ? 1 : 2, progress: say }));
    return;
  }
  const rows: BenchRow[] = [];
  const noRoot = 'needs root (network namespaces); run `sudo npm run bench`';

  // 1. compile and incremental recompute
  say(`compile: bench-compile.ts --tier ${args.tier} --runs ${runs.compile}`);
  rows.push(...(await compileRows({ tier: args.tier, runs: runs.compile, seed: args.seed })));

  // 1b. the commands as whole processes (start-up and module loading included), apply beside its floor
  say(`commands: bench-commands.ts --tier ${args.tier} --runs ${args.quick ? 1 : 3}`);
  rows.push(...(await commandsBench({ tier: args.tier, seed: args.seed, runs: args.quick ? 1 : 3, progress: say })));

  // 2–4. kernel: first apply, one-pod changes, drift check, each against its floor
  const kernelCmd = (row: string) =>
    tsNode('scripts/bench-kernel.ts', ['--tier', args.tier, '--runs', String(runs.kernel), '--seed', String(args.seed), '--only', row]);
  if (root) {
    rows.push(...(await kernelBench({ tier: args.tier, seed: args.seed, runs: runs.kernel, node: 'node-1', progress: say })));
    // The same rows on iptables-legacy, each beside its own legacy floor.
    rows.push(
      ...(await kernelBench({
        tier: args.tier,
        seed: args.seed,
        runs: runs.kernel,
        node: 'node-1',
        backend: 'legacy',
        progress: (m) => say(`${m} (legacy)`),
      })),
    );
  } else rows.push(...KERNEL_ROWS.map((id) => skippedRow(id, 'kernel row', noRoot, kernelCmd(id))));

  // 5–6. daemon latency and memory per tier
  const memoryTiers: Tier[] = ['small', 'medium', 'large', ...(args.xl ? (['xl'] as const) : [])];
  const daemonCmd = (tier: Tier, n: number) =>
    tsNode('scripts/bench-daemon.ts', ['--tier', tier, '--seed', String(args.seed), '--events', String(n)]);
  if (root) {
    say(`daemon: bench-daemon.ts --tier ${args.tier} --events ${events}`);
    let main: DaemonFigures | undefined;
    try {
      main = await daemonFigures({ tier: args.tier, seed: args.seed, events });
      rows.push(daemonLatencyRow(main, args.tier));
    } catch (err) {
      rows.push(failedRow('event-to-programmed', 'daemon benchmark', err, daemonCmd(args.tier, events)));
    }
    for (const tier of memoryTiers) {
      if (tier === args.tier) {
        if (main) rows.push(daemonRssRow(main, tier));
        continue;
      }
      const n = tier === 'xl' ? xlEvents : rssEvents;
      say(`daemon memory: bench-daemon.ts --tier ${tier} --events ${n}`);
      try {
        const figures = await daemonFigures({ tier, seed: args.seed, events: n });
        rows.push(daemonRssRow(figures, tier));
        // The latency target holds at xl too (p99 ≤ 100 ms).
        if (tier === 'xl') rows.push(daemonLatencyRow(figures, tier, 'event-to-programmed-xl'));
      } catch (err) {
        rows.push(failedRow(`rss-${tier}`, 'daemon memory', err, daemonCmd(tier, n)));
      }
    }
  } else {
    rows.push(skippedRow('event-to-programmed', 'daemon API event → programmed', noRoot, daemonCmd(args.tier, events)));
    for (const tier of memoryTiers)
      rows.push(skippedRow(`rss-${tier}`, `daemon memory, ${tier} tier`, noRoot, daemonCmd(tier, tier === args.tier ? events : rssEvents)));
  }
  if (!args.xl) {
    rows.push(skippedRow('rss-xl', 'daemon memory, xl tier', 'only with --xl', daemonCmd('xl', xlEvents)));
    rows.push(skippedRow('event-to-programmed-xl', 'daemon API event → programmed, xl tier', 'only with --xl', daemonCmd('xl', xlEvents)));
  }

  // 7. data plane
  const dpCmd = (row: string) =>
    tsNode('scripts/bench-dataplane.ts', [
      '--tier',
      args.tier,
      '--runs',
      String(runs.dataplane),
      '--seconds',
      String(seconds),
      '--seed',
      String(args.seed),
      '--only',
      row,
    ]);
  if (root) rows.push(...(await dataplaneBench({ tier: args.tier, seed: args.seed, runs: runs.dataplane, seconds, progress: say })));
  else rows.push(...['crr-x1', 'crr-x4', 'first-packet', 'crr-flowlog'].map((id) => skippedRow(id, 'data plane', noRoot, dpCmd(id))));

  const missed = rows.filter((r) => r.verdict === 'missed' || r.verdict === 'failed');
  const met = rows.filter((r) => r.verdict === 'met');
  console.log(`## netfence benchmarks: tier ${args.tier}, seed ${args.seed}${args.quick ? ' (--quick: fewer runs, a smoke run)' : ''}`);
  console.log('');
  console.log((await machine()).join('\n'));
  console.log(
    `Medians: compile ${runs.compile} runs (after 10 warm-up runs), kernel ${runs.kernel} runs (after one warm-up, netfence and floor interleaved), data plane ${runs.dataplane} × ${seconds} s per mode. Floors are measured in this run, in scratch namespaces, with the same restore texts.`,
  );
  if (!root) console.log('\n**Not root: kernel, daemon and data-plane rows were skipped.** Run `sudo npm run bench` for them.');
  console.log('');
  console.log(renderTable(rows));
  console.log('');
  console.log(
    `${met.length} met, ${missed.length} missed or failed${missed.length ? ` (${missed.map((r) => r.id).join(', ')})` : ''}, ${rows.length - met.length - missed.length} informational or skipped. Took ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  );
}

await main();
