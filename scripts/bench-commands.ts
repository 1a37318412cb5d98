// The commands as a user runs them: whole `netfence` processes (dist/cli/main.js, node start-up and
// module loading included) on a generated cluster written as one JSON dump (`kubectl get -o json`
// shape), each beside its floor where it has one.
//
// Usage: npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-commands.ts \
//          [--tier large] [--seed 1] [--runs 3] [--only help|compile|apply|diff|inspect|trace]
//
//   help     `netfence --help`                                      target ≤ 150 ms
//   compile  `netfence compile --resources DUMP`                      target ≤ 500 ms
//   apply    `netfence apply --resources DUMP` into a fresh netns, vs the floor: the same restore texts
//            (from `compile`) loaded with `ipset -exist restore` + `iptables-nft-restore --noflush` into
//            another fresh netns, as processes;                     target ≤ compile + 1.5 × floor
//   diff, inspect, trace on the node `apply` programmed            target ≤ 400 ms each
//
// Every netfence and floor process runs inside its namespace with `ip netns exec` (as on a node, where
// netfence runs in the host namespace; no `--netns`, which would wrap every tool call instead). Wall
// time is the median; CPU is user+sys of the child processes (getrusage of waited children), the
// figure that matters on a shared machine. Kernel rows need root; without it they are skipped.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCluster, type Tier } from './bench-lib/generator.js';
import { extractIpsets, extractIptables } from '../src/render/index.js';
import { run } from '../src/dataplane/exec.js';
import { snapshotObjects } from './bench-daemon.js';
import { parseBenchFlags } from './lib/bench-args.js';
import { createScratchNetns, destroyAllScratchNetns } from './lib/bench-netns.js';
import { fmtMs, sample, summarize, type Sample } from './lib/bench-stats.js';
import { atMost, failedRow, fmtRatio, renderTable, skippedRow, tsNode, type BenchRow } from './lib/bench-table.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

export const COMMAND_ROWS = ['help', 'compile', 'apply', 'diff', 'inspect', 'trace'] as const;

export interface CommandBenchOptions {
  readonly tier: Tier;
  readonly seed: number;
  readonly runs: number;
  readonly only?: string | undefined;
  readonly progress?: (message: string) => void;
}

/** One whole `netfence …` process, optionally inside a namespace; throws unless it exits with one of `ok`. */
async function netfence(args: readonly string[], netns?: string, ok: readonly number[] = [0]): Promise<string> {
  try {
    return (await run(process.execPath, [CLI, ...args], { netns, timeoutMs: 300_000 })).stdout;
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode;
    if (code !== undefined && ok.includes(code)) return '';
    throw err;
  }
}

const times = async (runs: number, fn: () => Promise<unknown>): Promise<Sample[]> => {
  const out: Sample[] = [];
  for (let i = 0; i < runs; i++) out.push(await sample(fn));
  return out;
};

const cpuOf = (s: readonly Sample[]) => summarize(s).childCpuMs;
const wallOf = (s: readonly Sample[]) => summarize(s).wallMs;

function row(id: string, what: string, samples: readonly Sample[], limitMs: number, command: string, detail = ''): BenchRow {
  const wall = wallOf(samples);
  return {
    id,
    what,
    value: `${fmtMs(wall)} ms`,
    target: `≤ ${fmtMs(limitMs)} ms`,
    verdict: atMost(wall, limitMs),
    detail: `CPU (user+sys) ${fmtMs(cpuOf(samples))} ms; median of ${samples.length}${detail ? `; ${detail}` : ''}`,
    command,
  };
}

export async function commandsBench(o: CommandBenchOptions): Promise<BenchRow[]> {
  const say = o.progress ?? (() => {});
  const wanted = (r: string) => o.only === undefined || o.only === r;
  const benchCommand = (r: string) =>
    tsNode('scripts/bench-commands.ts', ['--tier', o.tier, '--seed', String(o.seed), '--runs', String(o.runs), '--only', r]);
  const { snapshot } = generateCluster({ tier: o.tier, seed: o.seed, node: 'node-1' });
  const dir = mkdtempSync(join(tmpdir(), 'nft-bench-cmd-'));
  const dump = join(dir, `${o.tier}.json`);
  writeFileSync(dump, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: snapshotObjects(snapshot) }));
  const base = ['--node-name', 'node-1', '--resources', dump, '--log-level', 'error'];
  const shown = (args: readonly string[]) => `netfence ${args.join(' ').replace(dump, `<${o.tier} dump>`)}`;
  const rows: BenchRow[] = [];
  try {
    if (wanted('help')) {
      say('commands: --help');
      rows.push(
        row('cmd-help', '`netfence --help` as a process', await times(o.runs, () => netfence(['--help'])), 150, benchCommand('help')),
      );
    }
    say('commands: compile');
    const compileSamples = await times(o.runs, () => netfence(['compile', ...base]));
    const compiled = await netfence(['compile', ...base]);
    if (wanted('compile')) {
      rows.push(
        row(
          'cmd-compile',
          `\`${shown(['compile', ...base])}\` as a process (${o.tier} tier, ${snapshot.pods.length} pods, ${snapshot.policies.length} policies, JSON dump)`,
          compileSamples,
          500,
          benchCommand('compile'),
          `${compiled.length} B printed`,
        ),
      );
    }
    const kernelRows = ['apply', 'diff', 'inspect', 'trace'].filter(wanted);
    if (kernelRows.length === 0) return rows;
    if (process.getuid?.() !== 0) {
      for (const r of kernelRows)
        rows.push(skippedRow(`cmd-${r}`, `netfence ${r} as a process`, 'needs root (network namespaces)', benchCommand(r)));
      return rows;
    }
    say('commands: apply vs floor');
    const ipsets = `${extractIpsets(compiled)}\n`;
    const iptables = extractIptables(compiled);
    const ours: Sample[] = [];
    const floor: Sample[] = [];
    let live: string | undefined;
    for (let i = 0; i < o.runs; i++) {
      const a = await createScratchNetns('bc');
      const b = await createScratchNetns('bc');
      await run('sysctl', ['-q', '-w', 'net.bridge.bridge-nf-call-iptables=1'], { netns: a.name }).catch(() => undefined);
      const f = () =>
        sample(async () => {
          await run('ipset', ['-exist', 'restore'], { netns: b.name, input: ipsets });
          await run('iptables-nft-restore', ['--noflush'], { netns: b.name, input: iptables });
        });
      const us = () => sample(() => netfence(['apply', ...base], a.name));
      // Interleaved, alternating who goes first, so load on the shared machine hits both alike.
      if (i % 2 === 0) {
        ours.push(await us());
        floor.push(await f());
      } else {
        floor.push(await f());
        ours.push(await us());
      }
      await b.destroy();
      if (i === o.runs - 1) live = a.name;
      else await a.destroy();
    }
    if (wanted('apply')) {
      const limit = wallOf(compileSamples) + 1.5 * wallOf(floor);
      rows.push({
        id: 'cmd-apply',
        what: `\`${shown(['apply', ...base])}\` as a process into a fresh netns, vs the same restore texts loaded with ipset + iptables-nft-restore processes`,
        value: `${fmtMs(wallOf(ours))} ms`,
        floor: `${fmtMs(wallOf(floor))} ms`,
        ratio: fmtRatio(wallOf(ours) / wallOf(floor)),
        target: `≤ compile + 1.5 × floor = ${fmtMs(limit)} ms`,
        verdict: atMost(wallOf(ours), limit),
        detail: `CPU (user+sys): netfence ${fmtMs(cpuOf(ours))} ms (its tools included), floor ${fmtMs(cpuOf(floor))} ms; median of ${ours.length}`,
        command: benchCommand('apply'),
      });
    }
    const node = live!;
    const local = snapshot.pods.filter((p) => p.nodeName === 'node-1' && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
    const tools: Record<string, { args: string[]; ok: number[] }> = {
      diff: { args: ['diff', ...base], ok: [0] },
      inspect: { args: ['inspect', '--log-level', 'error'], ok: [0] },
      trace: {
        args: ['trace', '--src', local[0]!.ips[0]!, '--dst', local[1]!.ips[0]!, '--proto', 'tcp', '--port', '80', '--log-level', 'error'],
        ok: [0, 1],
      },
    };
    for (const name of ['diff', 'inspect', 'trace'].filter(wanted)) {
      say(`commands: ${name} on the live node`);
      const t = tools[name]!;
      const samples = await times(o.runs, () => netfence(t.args, node, t.ok)).catch((err: unknown) => err);
      if (!Array.isArray(samples)) rows.push(failedRow(`cmd-${name}`, `netfence ${name}`, samples, benchCommand(name)));
      else
        rows.push(
          row(
            `cmd-${name}`,
            `\`${shown(t.args)}\` as a process on the node apply programmed (${local.length} local pods)`,
            samples,
            400,
            benchCommand(name),
          ),
        );
    }
  } finally {
    destroyAllScratchNetns();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

const isEntry = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isEntry) {
  const { tier, seed, runs, only } = parseBenchFlags(process.argv.slice(2), { runs: 3 }, COMMAND_ROWS);
  const rows = await commandsBench({ tier, seed, runs, only, progress: (m) => console.error(`… ${m}`) });
  console.log(
    `## netfence commands as processes: tier ${tier}, seed ${seed}, ${runs} runs; load average ${(await run('cat', ['/proc/loadavg'])).stdout.trim()}`,
  );
  console.log('');
  console.log(renderTable(rows));
}
