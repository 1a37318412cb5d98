// Reads and writes sysctls of one network namespace. Most net.* sysctls are per netns
// (net.ipv4.ip_forward, and net.bridge.bridge-nf-call-iptables since br_netfilter went netns-aware),
// so in a netns we must go through `ip netns exec`, which enters it and remounts /proc/sys for it.

import { readFile, writeFile } from 'node:fs/promises';
import { DataplaneCommandError } from './errors.js';
import { run } from './exec.js';

export interface SysctlOptions {
  readonly netns?: string | undefined;
}

// Dotted (net.ipv4.ip_forward) or slashed (net/ipv4/conf/eth0.100/rp_filter) like sysctl(8) accepts;
// nothing that could walk out of /proc/sys.
const KEY = /^[A-Za-z0-9_-]+([./][A-Za-z0-9_.-]+)*$/;

/** `net.ipv4.ip_forward` → `/proc/sys/net/ipv4/ip_forward`; a slashed key keeps its dots. */
export function sysctlPath(key: string): string {
  if (!KEY.test(key) || key.includes('..')) throw new Error(`invalid sysctl key: ${JSON.stringify(key)}`);
  return `/proc/sys/${key.includes('/') ? key : key.replaceAll('.', '/')}`;
}

/** The value, trimmed (`"1"`). */
export async function readSysctl(key: string, opts: SysctlOptions = {}): Promise<string> {
  const path = sysctlPath(key);
  if (opts.netns === undefined) return (await direct(`read ${path}`, () => readFile(path, 'utf8'))).trim();
  const { stdout } = await run('cat', [path], { netns: opts.netns });
  return stdout.trim();
}

export async function writeSysctl(key: string, value: string | number, opts: SysctlOptions = {}): Promise<void> {
  const path = sysctlPath(key);
  const text = String(value);
  if (opts.netns === undefined) {
    await direct(`write ${path}`, () => writeFile(path, text));
    return;
  }
  // sysctl -w rather than a shell redirect: no shell, and the key is already validated.
  await run('sysctl', ['-q', '-w', `${key}=${text}`], { netns: opts.netns });
}

/** fs failures in the same typed error the tool runners throw, so callers handle one kind. */
async function direct<T>(command: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw new DataplaneCommandError(command, undefined, err instanceof Error ? err.message : String(err), undefined, []);
  }
}
