// Deletes conntrack entries, so that a flow a new policy denies cannot live on as ESTABLISHED
// traffic our chains accept before they look at policy (see DESIGN §5, optional conntrack flush).

import type { IpFamily } from '../model/cluster.js';
import { DataplaneCommandError } from './errors.js';
import { run } from './exec.js';

export interface FlowFilter {
  readonly family: IpFamily;
  /** Original-direction source / destination address. */
  readonly src?: string;
  readonly dst?: string;
  /** 'tcp' | 'udp' | 'sctp' | …, any case (the model's 'TCP' works). */
  readonly protocol?: string;
  /** Original-direction destination port; needs `protocol`. */
  readonly dport?: number;
  readonly netns?: string | undefined;
}

export function conntrackDeleteArgs(f: FlowFilter): string[] {
  if (f.dport !== undefined && f.protocol === undefined) throw new Error('conntrack: dport needs a protocol');
  return [
    '-D',
    '-f',
    f.family === 6 ? 'ipv6' : 'ipv4',
    ...(f.src !== undefined ? ['-s', f.src] : []),
    ...(f.dst !== undefined ? ['-d', f.dst] : []),
    ...(f.protocol !== undefined ? ['-p', f.protocol.toLowerCase()] : []),
    ...(f.dport !== undefined ? ['--dport', String(f.dport)] : []),
  ];
}

/** "conntrack v1.4.7 (conntrack-tools): 3 flow entries have been deleted." → 3. */
export function deletedCount(stderr: string): number | undefined {
  const m = /(\d+) flow entr(?:y|ies) ha(?:s|ve) been deleted/.exec(stderr);
  return m?.[1] !== undefined ? Number(m[1]) : undefined;
}

/**
 * Deletes the flows matching every given field (all flows of the family when none is given)
 * and returns how many went. Nothing to delete is not an error, though conntrack exits 1 for it.
 */
export async function flushFlows(f: FlowFilter): Promise<number> {
  try {
    const { stderr } = await run('conntrack', conntrackDeleteArgs(f), { netns: f.netns });
    return deletedCount(stderr) ?? 0;
  } catch (err) {
    if (err instanceof DataplaneCommandError && err.exitCode === 1 && deletedCount(err.stderr) === 0) return 0;
    throw err;
  }
}
