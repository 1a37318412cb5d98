// `netfence daemon` as a real process inside a sandbox node's network namespace, for the demo and the
// daemon benchmark. Started through `run()` (scripts spawn nothing themselves): a shell inside the
// namespace puts the daemon in the background with its output in a log file and prints its pid, so
// the daemon outlives that shell and is stopped later by pid (SIGTERM, then SIGKILL).

import { readFileSync } from 'node:fs';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { run } from '../../src/dataplane/exec.js';

export interface DaemonProcess {
  readonly pid: number;
  readonly netns: string | undefined;
  readonly logFile: string;
  /** True while the process exists. */
  alive(): boolean;
  /** SIGTERM, wait up to `graceMs` for it to exit, then SIGKILL. Resolves to how it ended. */
  stop(graceMs?: number): Promise<'exited' | 'killed' | 'gone'>;
  /** The last `n` lines of its log. */
  tail(n: number): string[];
}

const quote = (arg: string): string => `'${arg.replaceAll("'", `'\\''`)}'`;

/** Starts `node <cli> daemon <args>` in `netns` (or here, when undefined); resolves once it has a pid. */
export async function startDaemonProcess(
  cli: string,
  args: readonly string[],
  opts: { netns: string | undefined; logFile: string; extraNodeFlags?: readonly string[] | undefined },
): Promise<DaemonProcess> {
  const node = [process.execPath, ...DAEMON_NODE_FLAGS, ...(opts.extraNodeFlags ?? [])];
  const env = Object.entries(DAEMON_ENV).map(([k, v]) => `${k}=${quote(v)}`);
  const command = [...env, ...[...node, cli, 'daemon', ...args].map(quote)].join(' ');
  const { stdout } = await run('sh', ['-c', `${command} >${quote(opts.logFile)} 2>&1 </dev/null & echo $!`], { netns: opts.netns });
  const pid = Number(stdout.trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`could not start the daemon: sh printed "${stdout.trim()}"`);
  const alive = (): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  return {
    pid,
    netns: opts.netns,
    logFile: opts.logFile,
    alive,
    async stop(graceMs = 5000) {
      if (!alive()) return 'gone';
      process.kill(pid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (alive() && Date.now() < deadline) await sleep(20);
      if (!alive()) return 'exited';
      process.kill(pid, 'SIGKILL');
      return 'killed';
    },
    tail(n) {
      try {
        return readFileSync(opts.logFile, 'utf8').trimEnd().split('\n').slice(-n);
      } catch {
        return [];
      }
    },
  };
}

/** SIGTERM without waiting, for signal and exit handlers (which cannot wait). */
export function terminateNow(daemon: DaemonProcess): void {
  if (daemon.alive()) process.kill(daemon.pid, 'SIGTERM');
}

/** GET `url` from inside `netns` (the daemon listens on that namespace's loopback); the HTTP status, 0 if unreachable. */
export async function httpStatusIn(netns: string | undefined, url: string): Promise<number> {
  const script = [
    'import sys, urllib.request, urllib.error',
    'try:',
    '    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)',
    'except urllib.error.HTTPError as e:',
    '    print(e.code)',
    'except Exception:',
    '    print(0)',
  ].join('\n');
  const { stdout } = await run('python3', ['-c', script, url], { netns });
  return Number(stdout.trim()) || 0;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
