// The kernel as the reconciler uses it: filter-table save/restore per family plus ipset save/restore,
// all inside one network namespace (the current one, or a named one for tests and the sandbox).

import { existsSync } from 'node:fs';
import type { IpFamily } from '../model/index.js';
import { EMPTY_FILTER_SAVE, filterIncompatible, filterTableOf, ListingMismatchError, revealHiddenInterfaces } from '../render/index.js';
import { detectBackend, detectBackendWithSaves, type BackendDecision } from './backend.js';
import { createIpsetRunner } from './ipset.js';
import { createIptablesRunner, iptablesTool, listLegacy, type IptablesBackend, type IptablesRunner } from './iptables.js';

export interface KernelOptions {
  readonly netns?: string | undefined;
  /** Undefined: detect like kube-proxy's iptables-wrappers. */
  readonly backend?: IptablesBackend | undefined;
  readonly ipv6?: boolean;
  /**
   * Each iptables/ipset command is killed after this long (default 60 s, exec.ts) and the sync fails; the
   * reconciler retries with backoff. A hung tool or an xtables lock held forever cannot wedge the loop.
   */
  readonly commandTimeoutMs?: number;
}

export interface Kernel {
  readonly backend: BackendDecision;
  readonly netns: string | undefined;
  supports(family: IpFamily): boolean;
  saveFilter(family: IpFamily, opts?: { readonly counters?: boolean }): Promise<string>;
  restoreFilter(family: IpFamily, text: string): Promise<void>;
  /** Validate only (`--test`): nothing is written. */
  testFilter(family: IpFamily, text: string): Promise<void>;
  ipsetSave(): Promise<string>;
  ipsetRestore(text: string): Promise<void>;
  ipsetListNames(): Promise<string[]>;
  /** First rule of a filter chain (`-A FORWARD …`), undefined when empty: the cheap hook-position read. */
  firstRule(family: IpFamily, chain: string): Promise<string | undefined>;
}

const onPath = (tool: string): boolean => ['/usr/sbin', '/sbin', '/usr/bin', '/bin'].some((dir) => existsSync(`${dir}/${tool}`));

export async function openKernel(opts: KernelOptions = {}): Promise<Kernel> {
  return kernelWith(await detectBackend({ netns: opts.netns, override: opts.backend }), opts);
}

/** One read of the kernel: the filter table of each family it supports, and `ipset save`. */
export interface KernelRead {
  readonly filters: ReadonlyMap<IpFamily, string>;
  readonly ipsets: string;
}

/**
 * Opens the kernel and reads it, for a one-shot command: `ipset save` runs beside the backend detection's
 * whole-ruleset saves, and the chosen backend's filter tables are taken from those saves, so every tool
 * runs once and all at the same time. Only a family whose save failed (or could not show its filter table)
 * is read again with `-t filter`, whose output or error the command then sees; `counters` as in
 * `iptables-save -c`.
 */
export async function openKernelAndRead(
  opts: KernelOptions & { readonly counters?: boolean },
): Promise<{ kernel: Kernel; read: KernelRead }> {
  const timing = opts.commandTimeoutMs !== undefined ? { timeoutMs: opts.commandTimeoutMs } : {};
  const ipsets = createIpsetRunner({ netns: opts.netns, ...timing }).save();
  ipsets.catch(() => undefined);
  const { decision, saves } = await detectBackendWithSaves({ netns: opts.netns, override: opts.backend, counters: opts.counters === true });
  const kernel = kernelWith(decision, opts);
  const families = ([4, 6] as const).filter((f) => kernel.supports(f));
  const texts = await Promise.all(
    families.map(async (f) => {
      const save = saves[f];
      const table = save === undefined ? undefined : filterTableOf(save);
      if (table !== undefined && decision.backend === 'legacy') {
        // What the save hides, from the listing (iptables.ts save); taken later than the detection's save, so
        // a write in between is told by a mismatch, and then both are read again together.
        const listing = await listLegacy(f, 'filter', opts.netns, timing)();
        try {
          return revealHiddenInterfaces(table, listing);
        } catch (err) {
          if (!(err instanceof ListingMismatchError)) throw err;
          return kernel.saveFilter(f, { counters: opts.counters === true });
        }
      }
      if (table !== undefined) return table;
      // A failed save, or a filter table iptables-nft cannot show ("# Table `filter' is incompatible, use
      // 'nft' tool."): read it as before, so the command sees what `-t filter` says.
      if (save === undefined || filterIncompatible(save)) return kernel.saveFilter(f, { counters: opts.counters === true });
      // No filter table at all (yet): `-t filter` would print it empty, as here.
      return EMPTY_FILTER_SAVE;
    }),
  );
  return { kernel, read: { filters: new Map(families.map((f, i) => [f, texts[i]!])), ipsets: await ipsets } };
}

/** The kernel with a backend already decided (by openKernelAndRead): no tool runs. */
export const openDecidedKernel = (backend: BackendDecision, opts: KernelOptions = {}): Kernel => kernelWith(backend, opts);

function kernelWith(backend: BackendDecision, opts: KernelOptions): Kernel {
  const timing = opts.commandTimeoutMs !== undefined ? { timeoutMs: opts.commandTimeoutMs } : {};
  const runners = new Map<IpFamily, IptablesRunner>();
  for (const family of [4, 6] as const) {
    if (family === 6 && (opts.ipv6 === false || !onPath(iptablesTool(6, backend.backend, 'restore')))) continue;
    runners.set(family, createIptablesRunner({ family, backend: backend.backend, netns: opts.netns, ...timing }));
  }
  const ipset = createIpsetRunner({ netns: opts.netns, ...timing });
  const runner = (family: IpFamily): IptablesRunner => {
    const r = runners.get(family);
    if (!r) throw new Error(`IPv${family} is not available (ip6tables missing or disabled)`);
    return r;
  };
  return {
    backend,
    netns: opts.netns,
    supports: (family) => runners.has(family),
    saveFilter: (family, opts) => runner(family).save('filter', opts),
    restoreFilter: (family, text) => runner(family).restore(text, { noflush: true }),
    testFilter: (family, text) => runner(family).restore(text, { noflush: true, test: true }),
    ipsetSave: () => ipset.save(),
    ipsetRestore: (text) => ipset.restore(text),
    ipsetListNames: () => ipset.listNames(),
    firstRule: (family, chain) => runner(family).firstRule(chain),
  };
}
