// The ruleset `inspect` and `trace` read: the filter table of one family and the ipsets, from saved files
// (`--saved FILE…`: iptables-save / ip6tables-save + ipset save, or `netfence compile` output) or the live
// kernel, with clear errors; and, live only, the anti-spoofing table and the conntrack flows strict mode
// revoked. One reader per command: each source is read once, whichever families the command asks for.

import type { ProgrammedAntiSpoof } from '../antispoof/read.js';
import { readProgrammedAntiSpoof } from '../antispoof/read.js';
import { ANTISPOOF_FAMILY, ANTISPOOF_TABLE } from '../antispoof/render.js';
import type { Kernel, KernelOptions, KernelRead } from '../dataplane/kernel.js';
import { revokedFlows, type StrictModeView } from '../inspect/strict-antispoof.js';
import type { IpFamily } from '../model/index.js';
import { filterRuleset, loadSavedDump, requireOwnedChains, RulesetError, type IpSets, type Ruleset } from '../trace/index.js';
import { readSavedDumps, SavedDumpError, type SavedDumpFiles } from './saved-dump.js';

export interface LoadedRuleset {
  readonly ruleset: Ruleset;
  readonly ipsets: IpSets;
  /** `saved dump FILE` or `live kernel (IPv4)`, for messages. */
  readonly source: string;
}

export interface RulesetSource {
  /** `--saved` paths; none: the live kernel. */
  readonly saved: readonly string[];
  readonly kernel: KernelOptions;
  readonly chainPrefix: string;
  readonly ipsetPrefix: string;
  /** The bridge the anti-spoofing table guards. */
  readonly bridge: string;
}

export class RulesetReader {
  private kernelRead: Promise<{ kernel: Kernel; read: KernelRead }> | undefined;
  private dump: Promise<SavedDumpFiles> | undefined;
  private antiSpoofTable: Promise<ProgrammedAntiSpoof | undefined> | undefined;

  constructor(private readonly source: RulesetSource) {}

  /** Reading the live kernel (no `--saved` files). */
  get live(): boolean {
    return this.source.saved.length === 0;
  }

  /** Starts every live read now, side by side (the rulesets and the bridge table); their errors surface where awaited. */
  startLive(): void {
    if (!this.live) return;
    void this.kernel().catch(() => undefined);
    void this.antiSpoof();
  }

  /**
   * The filter table of one family and the ipsets. A family the dump or the node does not have is a
   * RulesetError saying so.
   */
  async read(family: IpFamily): Promise<LoadedRuleset> {
    const { chainPrefix } = this.source;
    let iptablesText: string;
    let ipsetText: string;
    let source: string;
    if (!this.live) {
      const dump = await this.savedDump();
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
      const { kernel, read } = await this.kernel();
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
    if (family === 6 && ![...ruleset.chains.keys()].some((name) => name.startsWith(chainPrefix))) {
      throw new RulesetError(
        `${source}: no netfence IPv6 chains (no pod of this node has an IPv6 address, or netfence does not program IPv6 here)`,
      );
    }
    requireOwnedChains(ruleset, chainPrefix);
    return { ruleset, ipsets, source };
  }

  /** Like read, but undefined when that family cannot be read (for choosing a family). */
  async readIfAny(family: IpFamily): Promise<LoadedRuleset | undefined> {
    try {
      return await this.read(family);
    } catch (err) {
      if (err instanceof RulesetError) return undefined;
      throw err;
    }
  }

  /** The live anti-spoofing table (none for a saved dump: it holds iptables and ipsets only). */
  antiSpoof(): Promise<ProgrammedAntiSpoof | undefined> {
    if (!this.antiSpoofTable) {
      this.antiSpoofTable = this.readAntiSpoof();
      // Its error, if any, is thrown where it is awaited.
      this.antiSpoofTable.catch(() => undefined);
    }
    return this.antiSpoofTable;
  }

  /** Strict mode on a live kernel: how many of the family's flows carry the revoke bit now, by pod. */
  async withRevokedFlows(
    strict: StrictModeView,
    family: IpFamily,
    pods: readonly { readonly pod?: string; readonly ip: string }[],
  ): Promise<StrictModeView> {
    if (!strict.on || strict.bit === undefined || !this.live) return strict;
    // Loaded here: reading a saved dump must not load the code that opens kernel sockets.
    const { openConntrackTable } = await import('../dataplane/ctnetlink.js');
    try {
      const table = await openConntrackTable({ netns: this.source.kernel.netns });
      try {
        return { ...strict, ...revokedFlows(await table.list(family), strict.bit, pods) };
      } finally {
        await table.close();
      }
    } catch (err) {
      return { ...strict, revokedUnreadable: (err as Error).message };
    }
  }

  // One read of the kernel, whichever families are asked for: every tool once and at the same time, the
  // backend detection's saves serving as the filter tables (openKernelAndRead). With counters: inspect
  // shows how many packets each policy rule allowed and each pod's drop rule dropped.
  private kernel(): Promise<{ kernel: Kernel; read: KernelRead }> {
    this.kernelRead ??= import('../dataplane/kernel.js').then(({ openKernelAndRead }) =>
      openKernelAndRead({ ...this.source.kernel, counters: true }),
    );
    return this.kernelRead;
  }

  private savedDump(): Promise<SavedDumpFiles> {
    this.dump ??= readSavedDumps(this.source.saved, this.source.ipsetPrefix).catch((err: unknown) => {
      throw err instanceof SavedDumpError ? new RulesetError(err.message) : err;
    });
    return this.dump;
  }

  private async readAntiSpoof(): Promise<ProgrammedAntiSpoof | undefined> {
    if (!this.live) return undefined;
    // Loaded here, not at the top: reading a saved dump must not load the code that runs tools.
    const { listNftTableJson } = await import('../dataplane/nft.js');
    const json = await listNftTableJson(ANTISPOOF_FAMILY, ANTISPOOF_TABLE, this.source.kernel.netns);
    return json === undefined ? undefined : readProgrammedAntiSpoof(json, this.source.bridge);
  }
}
