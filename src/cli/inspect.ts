// `netfence inspect`: what the live (or saved) ruleset does per local pod, mapped back to policy names.
// The reading and the choosing are commands/ruleset.ts and commands/inspect.ts; this parses and prints.
// Also home of the flag parsing and the error printing `trace` shares.

import { inspectNode } from '../commands/inspect.js';
import { RulesetReader } from '../commands/ruleset.js';
import type { DaemonConfig } from '../config/schema.js';
import { formatReport } from '../inspect/index.js';
import { formatHardening } from '../inspect/strict-antispoof.js';
import type { IpFamily } from '../model/index.js';
import { RulesetError } from '../trace/index.js';
import type { Io } from './command-specs.js';
import { configFrom, kernelOptions, parseCommand, savedPaths, UsageError, type Parsed } from './context.js';

/** The reader of the ruleset the flags name: `--saved FILE…`, else the live kernel (in `--netns`). */
export const rulesetReader = (parsed: Parsed, config: DaemonConfig): RulesetReader =>
  new RulesetReader({
    saved: savedPaths(parsed.values),
    kernel: kernelOptions(config, parsed),
    chainPrefix: config.chainPrefix,
    ipsetPrefix: config.ipsetPrefix,
    bridge: config.bridge,
  });

/** Runs a tool command body, turning "cannot read the ruleset" into a one-line error and exit 2. */
export async function withRulesetErrors(name: string, io: Io, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof RulesetError) {
      io.err(`netfence ${name}: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

/** `--family 4|6`, or undefined when not given (the command then chooses, see commands/inspect.ts and commands/trace.ts). */
export const familyFlag = (parsed: Parsed): IpFamily | undefined => {
  const raw = parsed.values['family'];
  if (raw === undefined) return undefined;
  if (raw === '4') return 4;
  if (raw === '6') return 6;
  throw new UsageError(`--family must be 4 or 6, not "${String(raw)}"`);
};

export async function inspectCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('inspect', argv);
  const config = configFrom(parsed, false);
  const family = familyFlag(parsed); // a bad --family is a usage error before anything is read
  const reader = rulesetReader(parsed, config);
  reader.startLive();
  return withRulesetErrors('inspect', io, async () => {
    const pod = parsed.values['pod'] as string | undefined;
    const policy = parsed.values['policy'] as string | undefined;
    const found = await inspectNode(reader, { chainPrefix: config.chainPrefix, family, pod, policy });
    if (found.kind === 'no-pod') {
      io.err(
        `netfence inspect: no local pod ${found.pod} in the IPv${found.family} ruleset (known: ${found.known.join(', ') || 'none'})\n`,
      );
      return 1;
    }
    if (found.kind === 'no-policy') {
      io.err(
        `netfence inspect: no policy ${found.policy} in the IPv${found.family} ruleset (a policy gets chains only while it selects a local pod)\n`,
      );
      return 1;
    }
    const { report, strictMode, antiSpoofing, alsoIn } = found;
    if (parsed.values['json'] === true)
      io.out(`${JSON.stringify({ family: found.family, ...report, strictMode, antiSpoofing }, null, 2)}\n`);
    else {
      const also = alsoIn !== undefined ? `\n${pod} also has IPv${alsoIn} rules: netfence inspect --family ${alsoIn} --pod ${pod}` : '';
      io.out(
        `ruleset ${found.loaded.source}\n${formatReport(report, { byPolicy: policy !== undefined && pod === undefined })}${formatHardening(strictMode, antiSpoofing).join('\n')}${also}\n`,
      );
    }
    return 0;
  });
}
