// `netfence inspect`: what the live (or saved) ruleset does per local pod, mapped back to policy names.
// Also home of readRuleset, which `trace` shares: the live kernel or a saved dump, with clear errors.

import type { DaemonConfig } from '../config/schema.js';
import type { Kernel, KernelRead } from '../dataplane/kernel.js';
import type { IpFamily } from '../model/index.js';
import { filterReport, formatReport, inspectRuleset } from '../inspect/index.js';
import { antiSpoofView, formatHardening, revokedFlows, strictModeOf, type StrictModeView } from '../inspect/strict-antispoof.js';
import { readProgrammedAntiSpoof, type ProgrammedAntiSpoof } from '../antispoof/read.js';
import { ANTISPOOF_FAMILY, ANTISPOOF_TABLE } from '../antispoof/render.js';
import { parseIp } from '../model/address.js';
import { filterRuleset, loadSavedDump, requireOwnedChains, RulesetError, type IpSets, type Ruleset } from '../trace/index.js';
import type { Io } from './command-specs.js';
import { configFrom, kernelOptions, netnsOf, parseCommand, UsageError, type Parsed } from './context.js';
import { readSavedDumps, SavedDumpError, savedPaths, type SavedDumpFiles } from './saved-dump.js';

export interface LoadedRuleset {
  readonly ruleset: Ruleset;
  readonly ipsets: IpSets;
  /** `saved dump FILE` or `live kernel (IPv4)`, for messages. */
  readonly source: string;
}

/**
 * The filter table of one family and the ipsets, from `--saved FILE…` (iptables-save / ip6tables-save +
 * ipset save, or `netfence compile` output) or the kernel. A family the dump or the node does not have is
 * a RulesetError saying so.
 */
export async function readRuleset(parsed: Parsed, config: DaemonConfig, family: IpFamily): Promise<LoadedRuleset> {
  const saved = savedPaths(parsed.values);
  let iptablesText: string;
  let ipsetText: string;
  let source: string;
  if (saved.length > 0) {
    const dump = await savedDumpOf(parsed, saved, config.ipsetPrefix);
    const table = dump.filters.get(family);
    if (dump.filters.size === 0)
      throw new RulesetError(
        `${dump.label}: empty input: no *filter table (expected the output of iptables-save or ip6tables-save, and ipset save)`,
      );
    if (!table) {
      const present = [...dump.filters.keys()].map((f) => `IPv${f}`).join(', ') || 'none';
      throw new RulesetError(
        `${dump.label} has no IPv${family} *filter table (${family === 6 ? 'ip6tables-save' : 'iptables-save'} output; tables found: ${present})`,
      );
    }
    iptablesText = table.text;
    ipsetText = dump.ipsets;
    source = `${dump.label} (IPv${family} *filter at ${dump.files > 1 ? table.where : `line ${table.line}`})`;
  } else {
    const { kernel, read } = await kernelOf(parsed, config);
    const filter = read.filters.get(family);
    if (!kernel.supports(family) || filter === undefined)
      throw new RulesetError(
        `IPv${family} is not available here (ip${family === 6 ? '6' : ''}tables missing, or ipv6 turned off in the configuration)`,
      );
    iptablesText = filter;
    ipsetText = read.ipsets;
    source = `live kernel (IPv${family}${kernel.netns ? `, netns ${kernel.netns}` : ''})`;
  }
  const dump = loadSavedDump(family, iptablesText, ipsetText, source);
  const ruleset = filterRuleset(dump.tables);
  const ipsets: IpSets = dump.ipsets;
  if (family === 6 && ![...ruleset.chains.keys()].some((name) => name.startsWith(config.chainPrefix))) {
    throw new RulesetError(
      `${source}: no netfence IPv6 chains (no pod of this node has an IPv6 address, or netfence does not program IPv6 here)`,
    );
  }
  requireOwnedChains(ruleset, config.chainPrefix);
  return { ruleset, ipsets, source };
}

/** Like readRuleset, but undefined when that family cannot be read (for choosing a family). */
export async function readRulesetIfAny(parsed: Parsed, config: DaemonConfig, family: IpFamily): Promise<LoadedRuleset | undefined> {
  try {
    return await readRuleset(parsed, config, family);
  } catch (err) {
    if (err instanceof RulesetError) return undefined;
    throw err;
  }
}

// One read of the kernel per command, whichever families it asks for: every tool once and at the same
// time, the backend detection's saves serving as the filter tables (openKernelAndRead). With counters:
// inspect shows how many packets each policy rule allowed and each pod's drop rule dropped.
const kernels = new WeakMap<Parsed, Promise<{ kernel: Kernel; read: KernelRead }>>();
function kernelOf(parsed: Parsed, config: DaemonConfig): Promise<{ kernel: Kernel; read: KernelRead }> {
  let kernel = kernels.get(parsed);
  if (!kernel) {
    kernel = import('../dataplane/kernel.js').then(({ openKernelAndRead }) =>
      openKernelAndRead({ ...kernelOptions(config, parsed), counters: true }),
    );
    kernels.set(parsed, kernel);
  }
  return kernel;
}

// One read of the saved files per command, whichever families it asks for.
const dumps = new WeakMap<Parsed, Promise<SavedDumpFiles>>();
function savedDumpOf(parsed: Parsed, paths: readonly string[], ipsetPrefix: string): Promise<SavedDumpFiles> {
  let dump = dumps.get(parsed);
  if (!dump) {
    dump = readSavedDumps(paths, ipsetPrefix).catch((err: unknown) => {
      throw err instanceof SavedDumpError ? new RulesetError(err.message) : err;
    });
    dumps.set(parsed, dump);
  }
  return dump;
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

/** The live anti-spoofing table (none for a saved dump: it holds iptables and ipsets only); read once per command. */
export function readAntiSpoof(parsed: Parsed, config: DaemonConfig): Promise<ProgrammedAntiSpoof | undefined> {
  let table = antiSpoofTables.get(parsed);
  if (!table) {
    table = readAntiSpoofOnce(parsed, config);
    // Its error, if any, is thrown where it is awaited.
    table.catch(() => undefined);
    antiSpoofTables.set(parsed, table);
  }
  return table;
}

const antiSpoofTables = new WeakMap<Parsed, Promise<ProgrammedAntiSpoof | undefined>>();

async function readAntiSpoofOnce(parsed: Parsed, config: DaemonConfig): Promise<ProgrammedAntiSpoof | undefined> {
  if (savedPaths(parsed.values).length > 0) return undefined;
  // Loaded here, not at the top: reading a saved dump must not load the code that runs tools.
  const { listNftTableJson } = await import('../dataplane/nft.js');
  const json = await listNftTableJson(ANTISPOOF_FAMILY, ANTISPOOF_TABLE, netnsOf(parsed));
  return json === undefined ? undefined : readProgrammedAntiSpoof(json, config.bridge);
}

/** Strict mode on a live kernel: how many of the family's flows carry the revoke bit now, by pod. */
async function withRevokedFlows(
  parsed: Parsed,
  strict: StrictModeView,
  family: IpFamily,
  pods: readonly { readonly pod?: string; readonly ip: string }[],
): Promise<StrictModeView> {
  if (!strict.on || strict.bit === undefined || savedPaths(parsed.values).length > 0) return strict;
  // Loaded here: reading a saved dump must not load the code that opens kernel sockets.
  const { openConntrackTable } = await import('../dataplane/ctnetlink.js');
  try {
    const table = await openConntrackTable({ netns: netnsOf(parsed) });
    try {
      return { ...strict, ...revokedFlows(await table.list(family), strict.bit, pods) };
    } finally {
      await table.close();
    }
  } catch (err) {
    return { ...strict, revokedUnreadable: (err as Error).message };
  }
}

/** `--family 4|6`, or undefined when not given (the command then chooses, see inspectCommand / trace). */
export const familyFlag = (parsed: Parsed): IpFamily | undefined => {
  const raw = parsed.values['family'];
  if (raw === undefined) return undefined;
  if (raw === '4') return 4;
  if (raw === '6') return 6;
  throw new UsageError(`--family must be 4 or 6, not "${String(raw)}"`);
};

interface Chosen {
  readonly family: IpFamily;
  readonly loaded: LoadedRuleset;
  /** The other family also has this pod: say how to see it. */
  readonly alsoIn?: IpFamily;
}

/**
 * The family inspect shows: --family; else the family of a `--pod` address; else, for `--pod ns/name`, the
 * family that has the pod (IPv4 when both do: the hint names the other); else IPv4, or IPv6 on a node
 * whose ruleset has IPv6 chains only.
 */
async function chooseFamily(parsed: Parsed, config: DaemonConfig, pod: string | undefined): Promise<Chosen> {
  const given = familyFlag(parsed) ?? (pod !== undefined ? parseIp(pod)?.family : undefined);
  if (given !== undefined) return { family: given, loaded: await readRuleset(parsed, config, given) };
  const v4 = await readRulesetIfAny(parsed, config, 4);
  const has = (loaded: LoadedRuleset | undefined) =>
    loaded !== undefined &&
    pod !== undefined &&
    inspectRuleset(loaded.ruleset, loaded.ipsets, { chainPrefix: config.chainPrefix }).pods.some((p) => p.pod === pod);
  if (v4 && (pod === undefined || has(v4))) {
    const v6 = pod !== undefined ? await readRulesetIfAny(parsed, config, 6) : undefined;
    return { family: 4, loaded: v4, ...(has(v6) ? { alsoIn: 6 as const } : {}) };
  }
  const v6 = await readRulesetIfAny(parsed, config, 6);
  if (v6 && (pod === undefined || has(v6))) return { family: 6, loaded: v6 };
  // Neither shows the pod (or neither family reads): report against IPv4 as before, with its own error.
  return { family: 4, loaded: v4 ?? (await readRuleset(parsed, config, 4)) };
}

export async function inspectCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('inspect', argv);
  const config = configFrom(parsed, false);
  familyFlag(parsed); // a bad --family is a usage error before anything is read
  // Every live read starts now and runs side by side: the rulesets (chooseFamily) and the bridge table.
  if (savedPaths(parsed.values).length === 0) {
    void kernelOf(parsed, config).catch(() => undefined);
    void readAntiSpoof(parsed, config);
  }
  return withRulesetErrors('inspect', io, async () => {
    const pod = parsed.values['pod'] as string | undefined;
    const policy = parsed.values['policy'] as string | undefined;
    const { family, loaded, alsoIn } = await chooseFamily(parsed, config, pod);
    const { ruleset, ipsets } = loaded;
    const full = inspectRuleset(ruleset, ipsets, { chainPrefix: config.chainPrefix });
    const report = filterReport(full, { ...(pod !== undefined ? { pod } : {}), ...(policy !== undefined ? { policy } : {}) });
    if (pod !== undefined && report.pods.length === 0) {
      io.err(
        `netfence inspect: no local pod ${pod} in the IPv${family} ruleset (known: ${full.pods.map((p) => p.pod ?? p.ip).join(', ') || 'none'})\n`,
      );
      return 1;
    }
    if (policy !== undefined && report.policies.length === 0) {
      io.err(
        `netfence inspect: no policy ${policy} in the IPv${family} ruleset (a policy gets chains only while it selects a local pod)\n`,
      );
      return 1;
    }
    const strictMode = await withRevokedFlows(parsed, strictModeOf(ruleset, config.chainPrefix), family, report.pods);
    const antiSpoofing = savedPaths(parsed.values).length === 0 ? antiSpoofView(await readAntiSpoof(parsed, config)) : undefined;
    if (parsed.values['json'] === true) io.out(`${JSON.stringify({ family, ...report, strictMode, antiSpoofing }, null, 2)}\n`);
    else {
      const also = alsoIn !== undefined ? `\n${pod} also has IPv${alsoIn} rules: netfence inspect --family ${alsoIn} --pod ${pod}` : '';
      io.out(
        `ruleset ${loaded.source}\n${formatReport(report, { byPolicy: policy !== undefined && pod === undefined })}${formatHardening(strictMode, antiSpoofing).join('\n')}${also}\n`,
      );
    }
    return 0;
  });
}
