// Finding (and, on request, removing) what a sandbox run left behind. A run killed with SIGKILL
// cannot clean up after itself: its agents exit when their stdin closes, but its namespaces stay.

import { readdir, readFile } from 'node:fs/promises';
import { run } from '../src/dataplane/exec.js';
import { killPid } from '../src/dataplane/process.js';

export interface Leftovers {
  readonly netns: readonly string[];
  /** Agents carry the run prefix in their command line (`--name nfs1a2b-x/a`). */
  readonly pids: readonly number[];
}

/** Namespaces and processes whose names start with / mention `prefix` (e.g. `nfs1a2b-`, or `nfs` for every run). */
export async function findLeftovers(prefix: string): Promise<Leftovers> {
  const netns = (await run('ip', ['netns', 'list'])).stdout
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(prefix));
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const argv = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    // Match the agent's `--name <prefix>…` argument, not any process that merely mentions the prefix.
    if (argv.split('\0').some((arg) => arg.startsWith(prefix)) && argv.includes('sandbox-agent')) pids.push(Number(entry));
  }
  return { netns, pids };
}

/** Kills leftover agents and deletes leftover namespaces of one run. Only for runs known to be dead. */
export async function removeLeftovers(prefix: string): Promise<Leftovers> {
  if (!/^nfs[0-9a-z]{1,8}-$/.test(prefix)) throw new Error(`"${prefix}" is not one sandbox run's prefix (nfs<id>-)`);
  const found = await findLeftovers(prefix);
  for (const pid of found.pids) killPid(pid, 'SIGKILL');
  if (found.netns.length > 0) {
    await run('ip', ['-force', '-batch', '-'], { input: found.netns.map((n) => `netns del ${n}\n`).join('') }).catch(() => undefined);
  }
  return found;
}
