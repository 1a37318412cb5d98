// `netfence inspect`: what the live (or saved) ruleset does per local pod, mapped back to policy names.
// Also home of readRuleset, which `trace` shares: the live kernel or a saved dump, with clear errors.

import { readFileSync } from 'node:fs';
import type { DaemonConfig } from '../config/schema.js';
import type { IpFamily } from '../model/index.js';
import { IpsetParseError, parseIpsetSave } from '../render/index.js';
import { filterReport, formatReport, inspectRuleset } from '../inspect/index.js';
import { antiSpoofView, formatHardening, strictModeOf } from '../inspect/hardening.js';
import { readProgrammedAntiSpoof, type ProgrammedAntiSpoof } from '../antispoof/read.js';
import { ANTISPOOF_TABLE } from '../antispoof/render.js';
import { loadRuleset, requireOwnedChains, RulesetError, type IpSets, type Ruleset } from '../trace/index.js';
import type { Io } from './commands.js';
import { configFrom, kernelFor, netnsOf, parseCommand, UsageError, type Parsed } from './context.js';
import { extractIpsets, extractIptables } from './saved-dump.js';

export interface LoadedRuleset {
  readonly ruleset: Ruleset;
  readonly ipsets: IpSets;
  /** `saved dump FILE` or `live kernel (IPv4)`, for messages. */
  readonly source: string;
}

/** The filter table and ipsets from `--saved FILE` (iptables-save + ipset save, or `netfence compile` output) or the kernel. */
export async function readRuleset(parsed: Parsed, config: DaemonConfig, family: IpFamily): Promise<LoadedRuleset> {
  const savedPath = parsed.values['saved'] as string | undefined;
  let iptablesText: string;
  let ipsetText: string;
  let source: string;
  if (savedPath !== undefined) {
    let text: string;
    try {
      text = readFileSync(savedPath, 'utf8');
    } catch (err) {
      throw new RulesetError(`cannot read ${savedPath}: ${(err as Error).message}`);
    }
    iptablesText = extractIptables(text);
    ipsetText = extractIpsets(text);
    source = `saved dump ${savedPath}`;
  } else {
    const kernel = await kernelFor(config, parsed);
    // With counters: inspect shows how many packets each policy rule allowed and each pod's drop rule dropped.
    iptablesText = await kernel.saveFilter(family, { counters: true });
    ipsetText = await kernel.ipsetSave();
    source = `live kernel (IPv${family}${kernel.netns ? `, netns ${kernel.netns}` : ''})`;
  }
  const ruleset = loadRuleset(iptablesText);
  let ipsets: IpSets;
  try {
    ipsets = parseIpsetSave(ipsetText);
  } catch (err) {
    if (err instanceof IpsetParseError) throw new RulesetError(`${source}: ${err.message}`);
    throw err;
  }
  requireOwnedChains(ruleset, config.chainPrefix);
  return { ruleset, ipsets, source };
}

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

/** The live anti-spoofing table (none for a saved dump: it holds iptables and ipsets only). */
export async function readAntiSpoof(parsed: Parsed, config: DaemonConfig): Promise<ProgrammedAntiSpoof | undefined> {
  if (parsed.values['saved'] !== undefined) return undefined;
  // Loaded here, not at the top: reading a saved dump must not load the code that runs tools.
  const { listNftTableJson } = await import('../dataplane/nft.js');
  const json = await listNftTableJson('bridge', ANTISPOOF_TABLE, netnsOf(parsed));
  return json === undefined ? undefined : readProgrammedAntiSpoof(json, config.bridge);
}

export const familyFlag = (parsed: Parsed): IpFamily => {
  const raw = parsed.values['family'];
  if (raw === undefined || raw === '4') return 4;
  if (raw === '6') return 6;
  throw new UsageError(`--family must be 4 or 6, not "${String(raw)}"`);
};

export async function inspectCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('inspect', argv);
  const config = configFrom(parsed, false);
  const family = familyFlag(parsed);
  return withRulesetErrors('inspect', io, async () => {
    const { ruleset, ipsets } = await readRuleset(parsed, config, family);
    const pod = parsed.values['pod'] as string | undefined;
    const policy = parsed.values['policy'] as string | undefined;
    const full = inspectRuleset(ruleset, ipsets, { chainPrefix: config.chainPrefix });
    const report = filterReport(full, { ...(pod !== undefined ? { pod } : {}), ...(policy !== undefined ? { policy } : {}) });
    if (pod !== undefined && report.pods.length === 0) {
      io.err(`netfence inspect: no local pod ${pod} in the ruleset (known: ${full.pods.map((p) => p.pod ?? p.ip).join(', ') || 'none'})\n`);
      return 1;
    }
    if (policy !== undefined && report.policies.length === 0) {
      io.err(`netfence inspect: no policy ${policy} in the ruleset (a policy gets chains only while it selects a local pod)\n`);
      return 1;
    }
    const strictMode = strictModeOf(ruleset, config.chainPrefix);
    const antiSpoofing = parsed.values['saved'] === undefined ? antiSpoofView(await readAntiSpoof(parsed, config)) : undefined;
    if (parsed.values['json'] === true) io.out(`${JSON.stringify({ ...report, strictMode, antiSpoofing }, null, 2)}\n`);
    else io.out(`${formatReport(report, { byPolicy: policy !== undefined && pod === undefined })}${formatHardening(strictMode, antiSpoofing).join('\n')}\n`);
    return 0;
  });
}
