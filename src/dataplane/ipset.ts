// Runs `ipset` for the sets of one network namespace (ipsets are per netns, like iptables tables).

import { parseIpsetNames } from '../render/index.js';
import { run } from './exec.js';

export interface IpsetRunner {
  /** `ipset save`: every set of the namespace with its members, as restore-format text. */
  save(): Promise<string>;
  /** `ipset list -n`: set names only, cheap even with millions of members. */
  listNames(): Promise<string[]>;
  /**
   * `ipset -exist restore` with `text` on stdin. -exist makes re-creating an identical set and
   * re-adding/deleting a present/absent member no-ops, so a delta can be replayed safely.
   * NOT transactional: sets created before the failing line stay (seen with 7.17: the `create`
   * stayed, the adds batched with the bad line did not), so plan for it with temp sets + swap (Felix). Throws DataplaneCommandError with `.line` from "Error in line N".
   */
  restore(text: string): Promise<void>;
}

export interface IpsetRunnerOptions {
  readonly netns?: string | undefined;
  readonly timeoutMs?: number;
}

export function createIpsetRunner(opts: IpsetRunnerOptions = {}): IpsetRunner {
  const base = { netns: opts.netns, ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}) };
  return {
    async save() {
      return (await run('ipset', ['save'], base)).stdout;
    },
    async listNames() {
      return parseIpsetNames((await run('ipset', ['list', '-n'], base)).stdout);
    },
    async restore(text) {
      await run('ipset', ['-exist', 'restore'], { ...base, input: text, lineOf: ipsetErrorLine });
    },
  };
}

/** "ipset v7.17: Error in line 3: Syntax error: '33' is out of range 0-32" → 3. */
export function ipsetErrorLine(stderr: string): number | undefined {
  const m = /\bError in line (\d+)/.exec(stderr);
  return m?.[1] !== undefined ? Number(m[1]) : undefined;
}

/** `ipset save NAME`: one set and its members (a learned set's timeouts and comments), as restore-format text. */
export async function saveIpset(name: string, opts: IpsetRunnerOptions = {}): Promise<string> {
  const base = { netns: opts.netns, timeoutMs: opts.timeoutMs ?? 10_000 };
  return (await run('ipset', ['save', name], base)).stdout;
}
