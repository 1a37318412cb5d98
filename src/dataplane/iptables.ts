// Runs iptables-save / iptables-restore for one address family and one backend (nft or legacy).
//
// Every write is a single `*-restore` transaction: the tool commits each table block atomically,
// so a failure leaves the previously programmed ruleset in place (kube-proxy's RestoreAll,
// Felix's Table.applyUpdates).

import type { IpFamily } from '../model/cluster.js';
import { lineJumpingTo, ListingMismatchError, revealHiddenInterfaces } from '../render/index.js';
import { run } from './exec.js';

export type IptablesBackend = 'nft' | 'legacy';
export type IptablesTable = 'filter' | 'nat' | 'mangle' | 'raw' | 'security';

export interface RestoreOptions {
  /** Keep chains and rules the input does not mention (we never own a whole table). */
  readonly noflush: boolean;
  /**
   * Parse and validate only, write nothing. Beware: on the nft backend this is a userspace check
   * only; errors the kernel finds at commit (jump to a missing chain, -D of a missing rule, loops)
   * pass `--test` and fail only the real restore. Legacy checks more, but not loops either.
   */
  readonly test?: boolean;
}

export interface IptablesRunner {
  readonly family: IpFamily;
  readonly backend: IptablesBackend;
  /**
   * `iptables-save -t <table>` output; `counters`: `iptables-save -c`, each rule prefixed with
   * `[packets:bytes]` (inspect). Verbatim on nft; on legacy with what the save hides of our rules put back
   * from the listing (render/legacy-listing.ts), so every reader sees a rule switched off by `! -i +`.
   */
  save(table: IptablesTable, opts?: { readonly counters?: boolean }): Promise<string>;
  /** Throws DataplaneCommandError with `.line` set to the input line the tool rejected, when it said. */
  restore(text: string, opts: RestoreOptions): Promise<void>;
  /**
   * The first rule of a filter-table chain as iptables-save prints it (`-A FORWARD …`), or undefined when
   * the chain is empty: `iptables -S CHAIN 1` reads one chain, not the table, so it is cheap enough to poll.
   */
  firstRule(chain: string): Promise<string | undefined>;
}

export interface IptablesRunnerOptions {
  readonly family: IpFamily;
  readonly backend: IptablesBackend;
  /** Named network namespace to act in; the current one when absent. */
  readonly netns?: string | undefined;
  readonly timeoutMs?: number;
}

/** `iptables-nft-restore`, `ip6tables-legacy-save`, …: the backend-specific binary, never the alternatives symlink. */
export function iptablesTool(family: IpFamily, backend: IptablesBackend, tool: 'save' | 'restore'): string {
  return `${family === 6 ? 'ip6tables' : 'iptables'}-${backend}-${tool}`;
}

export function createIptablesRunner(opts: IptablesRunnerOptions): IptablesRunner {
  const { family, backend, netns } = opts;
  const timing = opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {};
  return {
    family,
    backend,
    async save(table, saveOpts) {
      const save = async (): Promise<string> =>
        (await run(iptablesTool(family, backend, 'save'), [...(saveOpts?.counters ? ['-c'] : []), '-t', table], { netns, ...timing }))
          .stdout;
      if (backend !== 'legacy') return save();
      return revealHidden((listing) => Promise.all([save(), listing]), listLegacy(family, table, netns, timing));
    },
    async firstRule(chain) {
      const tool = `${family === 6 ? 'ip6tables' : 'iptables'}-${backend}`;
      const { stdout } = await run(tool, ['-w', '-t', 'filter', '-S', chain, '1'], { netns, ...timing });
      const line = stdout.trim();
      return line === '' ? undefined : line;
    },
    async restore(text, { noflush, test = false }) {
      // --wait: take the xtables lock like every other well-behaved writer (kube-proxy, flannel, kubelet)
      // instead of failing when one of them holds it. The lock file is host-wide, not per netns.
      const args = ['--wait', ...(noflush ? ['--noflush'] : []), ...(test ? ['--test'] : [])];
      await run(iptablesTool(family, backend, 'restore'), args, {
        netns,
        input: text,
        lineOf: (stderr) => restoreErrorLine(stderr, text),
        ...timing,
      });
    },
  };
}

/**
 * `iptables-legacy -L -v -n -x` of one table: the listing prints the interface columns the save leaves out.
 * Returned as a function so each attempt of revealHidden lists afresh.
 */
export function listLegacy(
  family: IpFamily,
  table: IptablesTable,
  netns: string | undefined,
  timing: { readonly timeoutMs?: number },
): () => Promise<string> {
  const tool = `${family === 6 ? 'ip6tables' : 'iptables'}-legacy`;
  return async () => (await run(tool, ['-w', '-t', table, '-L', '-v', '-n', '-x'], { netns, ...timing })).stdout;
}

/** Both reads are taken at once; a write between them shifts rows, so they are taken again, up to this often. */
const LISTING_ATTEMPTS = 3;

/**
 * A legacy save with what it hides put back: `read` takes the save beside the listing it is given (started at
 * the same moment, so a write rarely falls between them); a mismatch means one did, and both are read again.
 */
async function revealHidden(
  read: (listing: Promise<string>) => Promise<readonly [string, string]>,
  list: () => Promise<string>,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const [save, listing] = await read(list());
    try {
      return revealHiddenInterfaces(save, listing);
    } catch (err) {
      if (!(err instanceof ListingMismatchError) || attempt >= LISTING_ATTEMPTS) throw err;
    }
  }
}

// The shapes the tools print (iptables 1.8.x), most specific first:
//   legacy + nft, parse errors:      "...: unknown option \"--bogus\"\nError occurred at line: 4"
//   legacy + nft, kernel rejects:    "iptables-restore: line 4 failed" / "iptables-nft-restore: line 4 failed: No chain/target/match by that name."
//   nft, rule rejected at commit:    "line 7: RULE_APPEND failed (Too many links): rule in chain nf-lb"
//   both, truncated input:           "iptables-restore: COMMIT expected at line 4"
//   nft, bad table name:             "line 1 table name 'filtre' invalid"
const LINE_PATTERNS: readonly RegExp[] = [
  /^Error occurred at line: (\d+)\s*$/m,
  /\bline (\d+): [A-Z_]+ failed\b/,
  /\bline (\d+) failed\b/,
  /\bCOMMIT expected at line (\d+)/,
  /\bline (\d+)\b/,
];

/**
 * The 1-based input line an iptables-restore failure is about, or undefined when the tool did not say.
 * With `input`, a failure the nft backend pins on the COMMIT line because a jump target does not
 * exist ("Chain 'X' does not exist") is moved to the first rule of that table block that jumps to X:
 * that is the line a human has to fix.
 */
export function restoreErrorLine(stderr: string, input?: string): number | undefined {
  const reported = firstLineMatch(stderr);
  if (reported === undefined || input === undefined) return reported;
  const missing = /Chain '([^']+)' does not exist/.exec(stderr)?.[1];
  if (missing === undefined) return reported;
  return lineJumpingTo(input.split('\n'), reported, missing) ?? reported;
}

function firstLineMatch(stderr: string): number | undefined {
  for (const pattern of LINE_PATTERNS) {
    const m = pattern.exec(stderr);
    if (m?.[1] !== undefined) return Number(m[1]);
  }
  return undefined;
}
