// flannel's per-node lease file (/run/flannel/subnet.env), written by flanneld for its CNI plugin:
//   FLANNEL_NETWORK=10.244.0.0/16
//   FLANNEL_SUBNET=10.244.1.1/24        ← the bridge's address inside this node's pod CIDR
//   FLANNEL_IPV6_NETWORK=fd00:10:244::/56
//   FLANNEL_IPV6_SUBNET=fd00:10:244:1::1/64
//   FLANNEL_MTU=1450
//   FLANNEL_IPMASQ=true
// A pure parser plus a reader; the daemon uses it when neither config nor the Node names pod CIDRs.

import { readFile } from 'node:fs/promises';
import { canonicalCidr } from '../model/address.js';

export interface FlannelSubnet {
  /** The whole cluster's pod network (v4), canonical. */
  readonly network?: string;
  /** This node's v4 pod CIDR, canonical: FLANNEL_SUBNET=10.244.1.1/24 → 10.244.1.0/24. */
  readonly subnet?: string;
  readonly ipv6Network?: string;
  readonly ipv6Subnet?: string;
  readonly mtu?: number;
  readonly ipMasq?: boolean;
  /** This node's pod CIDRs, v4 first. */
  readonly podCidrs: readonly string[];
}

export class FlannelEnvError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`${source}: ${problems.join('; ')}`);
    this.name = 'FlannelEnvError';
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const CIDR_KEYS = {
  FLANNEL_NETWORK: { field: 'network', family: 4 },
  FLANNEL_SUBNET: { field: 'subnet', family: 4 },
  FLANNEL_IPV6_NETWORK: { field: 'ipv6Network', family: 6 },
  FLANNEL_IPV6_SUBNET: { field: 'ipv6Subnet', family: 6 },
} as const;

/** Parses subnet.env text. Unknown keys are ignored (flannel adds some over time); bad values throw, all listed. */
export function parseFlannelSubnetEnv(text: string, source = 'subnet.env'): FlannelSubnet {
  const out: Mutable<Omit<FlannelSubnet, 'podCidrs'>> = {};
  const problems: string[] = [];
  text.split('\n').forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    if (eq <= 0) {
      problems.push(`line ${index + 1}: expected KEY=VALUE`);
      return;
    }
    const key = line.slice(0, eq).trim();
    const value = unquote(line.slice(eq + 1).trim());
    if (key in CIDR_KEYS) {
      const { field, family } = CIDR_KEYS[key as keyof typeof CIDR_KEYS];
      const parsed = canonicalCidr(value);
      if (parsed?.family === family) out[field] = parsed.cidr;
      else problems.push(`line ${index + 1}: ${key}=${value} is not an IPv${family} CIDR`);
    } else if (key === 'FLANNEL_MTU') {
      if (/^\d+$/.test(value) && Number(value) >= 576) out.mtu = Number(value);
      else problems.push(`line ${index + 1}: FLANNEL_MTU=${value} is not a valid MTU`);
    } else if (key === 'FLANNEL_IPMASQ') {
      if (value === 'true' || value === 'false') out.ipMasq = value === 'true';
      else problems.push(`line ${index + 1}: FLANNEL_IPMASQ=${value} is not true or false`);
    }
  });
  if (problems.length > 0) throw new FlannelEnvError(source, problems);
  const podCidrs = [out.subnet, out.ipv6Subnet].filter((cidr): cidr is string => cidr !== undefined);
  return { ...out, podCidrs };
}

/** Reads and parses the file; undefined when it does not exist (flannel not running, or a sandbox without it). */
export async function readFlannelSubnetEnv(path: string): Promise<FlannelSubnet | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return parseFlannelSubnetEnv(text, path);
}

// flanneld writes bare values; tolerate a hand-written file that quotes them.
function unquote(value: string): string {
  const match = /^(["'])(.*)\1$/.exec(value);
  return match ? (match[2] ?? '') : value;
}
