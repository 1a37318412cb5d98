// What to do about a kernel tool that failed for a reason the operator can fix: the tool is not
// installed, or netfence runs without the privilege to change the firewall.

import type { DataplaneCommandError } from '../commands/errors.js';

/** The Debian package of each tool netfence runs (the image and scripts/lib/prereqs.sh install these). */
const PACKAGE_OF: Readonly<Record<string, string>> = {
  iptables: 'iptables',
  ip6tables: 'iptables',
  ipset: 'ipset',
  ip: 'iproute2',
  conntrack: 'conntrack',
  sysctl: 'procps',
  modprobe: 'kmod',
};

/** `iptables-nft-restore` → `iptables`, `/usr/sbin/ip6tables-legacy-save` → `ip6tables`. */
export function toolFamily(command: string): string {
  const file = command.split(' ')[0]?.split('/').pop() ?? '';
  return file.split('-')[0] ?? file;
}

const MISSING = /ENOENT|No such file or directory|command not found/;
const DENIED = /Permission denied|Operation not permitted|you must be root|EACCES|EPERM/i;

/**
 * One sentence saying what to do, or undefined when the failure is not one of these. `ip netns exec`
 * reports a missing tool as `exec of "TOOL" failed: No such file or directory`; a spawn without a
 * namespace as `spawn TOOL ENOENT`.
 */
export function remedyFor(err: Pick<DataplaneCommandError, 'command' | 'stderr'>): string | undefined {
  const tool = err.command.split(' ')[0]?.split('/').pop() ?? '';
  const stderr = err.stderr;
  const netns = /Cannot open network namespace "([^"]+)"/.exec(stderr);
  if (netns) return `network namespace ${netns[1]} does not exist (see \`ip netns list\`)`;
  if (MISSING.test(stderr) && (stderr.includes(`spawn ${tool}`) || stderr.includes(`"${tool}"`) || stderr.includes(`${tool}:`))) {
    const pkg = PACKAGE_OF[toolFamily(tool)] ?? toolFamily(tool);
    return `${tool} not found: install ${pkg} (Debian/Ubuntu: apt-get install ${pkg})`;
  }
  if (DENIED.test(stderr))
    return `${tool} needs root or CAP_NET_ADMIN: run netfence as root (sudo), or in the DaemonSet, which grants NET_ADMIN`;
  return undefined;
}
