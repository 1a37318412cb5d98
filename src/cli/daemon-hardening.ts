// The daemon's wiring for the strict-mode and anti-spoofing metrics: the anti-spoofing drop series read from the bridge table
// at scrape time, each port named by the local pod its bound addresses belong to.

import type { AntiSpoofGuard } from '../antispoof/guard.js';
import { ANTISPOOF_TABLE } from '../antispoof/render.js';
import { readNftCounts } from '../dataplane/nft.js';
import type { DesiredState } from '../model/index.js';
import { spoofDropSamples, type PodRef, type SpoofDropSample } from '../observe/metrics-antispoof-revoke.js';

/** Reads the bridge table's drop counters at scrape time; a port's pod is found by the addresses bound to it. */
export function spoofDropSource(guard: AntiSpoofGuard, netns: string | undefined, pods: () => ReadonlyMap<string, PodRef>) {
  return async (): Promise<SpoofDropSample[]> => {
    const counts = await readNftCounts('bridge', ANTISPOOF_TABLE, netns);
    const byIp = pods();
    const podOfPort = (port: string): PodRef | undefined => {
      const binding = guard.state?.bindings.find((b) => b.port === port);
      return binding ? [...binding.ipv4, ...binding.ipv6].map((ip) => byIp.get(ip)).find((p) => p !== undefined) : undefined;
    };
    return spoofDropSamples(counts, podOfPort);
  };
}

/** Local pods by address, from the workload chains just programmed (both families). */
export function localPodsByIp(desired: DesiredState): Map<string, PodRef> {
  const out = new Map<string, PodRef>();
  for (const f of [desired.v4, desired.v6]) {
    for (const c of f.chains) {
      if (c.role.kind !== 'workload') continue;
      const slash = c.role.pod.indexOf('/');
      out.set(c.role.ip, { namespace: c.role.pod.slice(0, slash), pod: c.role.pod.slice(slash + 1) });
    }
  }
  return out;
}
