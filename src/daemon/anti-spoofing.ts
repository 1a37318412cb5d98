// The daemon's bridge anti-spoofing: the guard that binds each bridge port to its pod's addresses, and
// its drop series, read from the bridge table at scrape time with each port named by the local pod its
// bound addresses belong to.

import { AntiSpoofGuard } from '../antispoof/guard.js';
import { ANTISPOOF_TABLE } from '../antispoof/render.js';
import type { DaemonConfig } from '../config/schema.js';
import { readCniCache, watchCniCache } from '../dataplane/cni-cache.js';
import { listLinks } from '../dataplane/links.js';
import { applyNftScript, readNftCounts } from '../dataplane/nft.js';
import type { Logger } from '../log.js';
import type { SyncReport, SyncSubscriber } from '../reconcile/sync-reports.js';
import type { DesiredState } from '../model/index.js';
import { spoofDropSamples, type PodRef, type SpoofDropSample } from '../observe/metrics-antispoof-revoke.js';

/** The anti-spoofing table is independent of the cluster state: it starts at once, before the first sync. */
export function startAntiSpoof(config: DaemonConfig, netns: string | undefined, logger: Logger): AntiSpoofGuard {
  const guard = new AntiSpoofGuard({
    bridge: config.bridge,
    readLinks: () => listLinks({ netns }),
    readCache: () => readCniCache(config.cniCacheDir, config.bridge),
    apply: (script) => applyNftScript(script, netns),
    readCounts: () => readNftCounts('bridge', ANTISPOOF_TABLE, netns),
    watch: (onChange) => watchCniCache(config.cniCacheDir, onChange),
    logger: logger.child({ component: 'anti-spoofing' }),
  });
  guard.start();
  return guard;
}

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

/** A sync subscriber: local pods by address as last programmed, which the drop series name a port by. */
export class LocalPods implements SyncSubscriber {
  private byIp: ReadonlyMap<string, PodRef> = new Map();

  synced(result: Pick<SyncReport, 'desired'>): void {
    this.byIp = localPodsByIp(result.desired);
  }

  get(): ReadonlyMap<string, PodRef> {
    return this.byIp;
  }
}

/** Local pods by address, from the workload chains just programmed (both families). */
function localPodsByIp(desired: DesiredState): Map<string, PodRef> {
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
