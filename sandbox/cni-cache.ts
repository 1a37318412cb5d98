// What a libcni runtime would leave in /var/lib/cni/results for a sandbox pod (research upstream-behaviour §4.2):
// the bridge plugin's result, [bridge, host veth, pod veth] with the address on the pod veth. Sandbox
// nodes share one filesystem, so each node gets its own cache directory `<base>/<node>`.

import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CachedPod {
  readonly node: string;
  readonly netns: string;
  readonly hostVeth: string;
  readonly ips: readonly { readonly address: string; readonly prefix: number; readonly gateway?: string }[];
  /** Stands in for the sandbox (pause container) ID the runtime would use. */
  readonly containerId: string;
}

export const NETWORK_NAME = 'cbr0';

export const nodeCacheDir = (base: string, node: string): string => join(base, node);

const resultPath = (base: string, pod: CachedPod): string =>
  join(nodeCacheDir(base, pod.node), 'results', `${NETWORK_NAME}-${pod.containerId}-eth0`);

export function cniResult(pod: CachedPod, bridge = 'cni0'): object {
  return {
    kind: 'cniCacheV1',
    containerId: pod.containerId,
    ifName: 'eth0',
    networkName: NETWORK_NAME,
    netns: `/var/run/netns/${pod.netns}`,
    result: {
      cniVersion: '1.0.0',
      interfaces: [{ name: bridge }, { name: pod.hostVeth }, { name: 'eth0', sandbox: `/var/run/netns/${pod.netns}` }],
      ips: pod.ips.map((ip) => ({ interface: 2, address: `${ip.address}/${ip.prefix}`, ...(ip.gateway ? { gateway: ip.gateway } : {}) })),
    },
  };
}

/** Written like libcni: after ADD succeeded, before the pod's containers run. */
export function writeCniResult(base: string, pod: CachedPod): void {
  const path = resultPath(base, pod);
  mkdirSync(join(nodeCacheDir(base, pod.node), 'results'), { recursive: true, mode: 0o700 });
  writeFileSync(path, JSON.stringify(cniResult(pod)), { mode: 0o600 });
}

/** Removed like libcni on DEL. */
export function removeCniResult(base: string, pod: CachedPod): void {
  rmSync(resultPath(base, pod), { force: true });
}
