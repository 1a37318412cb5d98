// Flags shared by the benchmark scripts (node:util parseArgs: unknown flags and missing values are errors).

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { TIERS, type Tier } from '../bench-lib/generator.js';

export interface BenchFlags {
  readonly tier: Tier;
  readonly seed: number;
  readonly runs: number;
  readonly seconds: number;
  /** One row only; all when absent. */
  readonly only?: string | undefined;
}

/** `--tier T --seed N --runs N [--seconds S] [--only ROW]`; `rows` lists what --only may name. */
export function parseBenchFlags(
  argv: readonly string[],
  defaults: { runs: number; seconds?: number },
  rows: readonly string[],
): BenchFlags {
  const names = ['tier', 'seed', 'runs', 'only', ...(defaults.seconds !== undefined ? ['seconds'] : [])];
  const options: ParseArgsConfig['options'] = Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));
  const { values } = parseArgs({ args: [...argv], options, strict: true });
  const flags = values as Partial<Record<'tier' | 'seed' | 'runs' | 'only' | 'seconds', string>>;
  const tier = flags.tier ?? 'large';
  if (!(TIERS as readonly string[]).includes(tier)) throw new Error(`--tier must be one of ${TIERS.join(', ')}`);
  if (flags.only !== undefined && !rows.includes(flags.only)) throw new Error(`--only must be one of ${rows.join(', ')}`);
  return {
    tier: tier as Tier,
    seed: Number(flags.seed ?? 1),
    runs: Math.max(1, Number(flags.runs ?? defaults.runs)),
    seconds: Math.max(0.2, Number(flags.seconds ?? defaults.seconds ?? 0)),
    only: flags.only,
  };
}

/** Runs `main` when this module is the script node was started with; `needsRoot` says why root is required. */
export async function runAsScript(moduleUrl: string, needsRoot: string, main: () => Promise<void>): Promise<void> {
  if (process.argv[1] === undefined || moduleUrl !== new URL(`file://${process.argv[1]}`).href) return;
  if (process.getuid?.() !== 0) {
    console.error(`${needsRoot}; run it with sudo.`);
    process.exit(2);
  }
  await main();
}
