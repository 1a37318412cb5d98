// The daemon's bridge table: the guard that binds each bridge port to its pod's addresses (anti-spoofing)
// and judges bridged pod-to-pod frames no pod address explains (antispoof/bridged.ts), and the
// anti-spoofing drop series, read from the table at scrape time with each port named by the local pod its
// bound addresses belong to.

import { UNKNOWN_POLICING, type BridgedPolicing, type PodOpenness } from '../antispoof/bridged.js';
import { AntiSpoofGuard } from '../antispoof/guard.js';
import { ANTISPOOF_TABLE } from '../antispoof/render.js';
import type { DaemonConfig } from '../config/schema.js';
import { readCniCache, watchCniCache } from '../dataplane/cni-cache.js';
import { listLinks } from '../dataplane/links.js';
import { applyNftScript, readNftCounts } from '../dataplane/nft.js';
import type { Logger } from '../log.js';
import type { SyncReport, SyncSubscriber } from '../reconcile/sync-reports.js';
import { ruleComment, type Chain, type DesiredState } from '../model/index.js';
import { spoofDropSamples, type PodRef, type SpoofDropSample } from '../observe/metrics-antispoof-revoke.js';

/**
 * The bridge table starts at once, before the first sync (judging every port until then); `policing`
 * follows each sync and rewrites the table when which pods are isolated changed.
 */
export function startAntiSpoof(
  config: DaemonConfig,
  netns: string | undefined,
  logger: Logger,
  policing: BridgedPolicingSource,
): AntiSpoofGuard {
  const guard = new AntiSpoofGuard({
    bridge: config.bridge,
    readLinks: () => listLinks({ netns }),
    readCache: () => readCniCache(config.cniCacheDir, config.bridge),
    apply: (script) => applyNftScript(script, netns),
    antiSpoofing: config.antiSpoofing,
    policing: () => policing.get(),
    readCounts: () => readNftCounts('bridge', ANTISPOOF_TABLE, netns),
    watch: (onChange) => watchCniCache(config.cniCacheDir, onChange),
    logger: logger.child({ component: 'anti-spoofing' }),
  });
  policing.onChange(() => void guard.refresh());
  guard.start();
  return guard;
}

/**
 * A sync subscriber: which local pods the rules just programmed isolate, per direction, and the families
 * they were programmed for. A pod is open in a direction when its workload chain ends in the plain "not
 * isolated" accept (no NetworkPolicy enforced, no ClusterNetworkPolicy tier); any other chain may drop,
 * so bridged frames its policies cannot judge are dropped for it (bridged.ts).
 */
export class BridgedPolicingSource implements SyncSubscriber {
  private current: BridgedPolicing = UNKNOWN_POLICING;
  /** Whether the listener heard of a sync yet (the first one is always told). */
  private told = false;
  /** The workload chains and families (familiesOf) `current` was worked out from. */
  private workloads: readonly Chain[] = [];
  private families = 0;
  private listener: (() => void) | undefined;

  /** `programs`: whether the kernel is programmed for a family at all (`ipv6: false`, or no ip6tables). */
  constructor(private readonly programs: (family: 4 | 6) => boolean) {}

  synced(result: Pick<SyncReport, 'desired'>): void {
    // The same workload chain objects as last time (a change that moved no local pod's chains): the same answer.
    const families = familiesOf(result.desired, this.programs);
    if (this.told && families === this.families && sameWorkloadChains(result.desired, this.workloads)) return;
    this.families = families;
    this.workloads = workloadChains(result.desired);
    const next = bridgedPolicing(result.desired, this.programs);
    if (this.told && samePolicing(next, this.current)) return;
    this.told = true;
    this.current = next;
    this.listener?.();
  }

  get(): BridgedPolicing {
    return this.current;
  }

  onChange(listener: () => void): void {
    this.listener = listener;
  }
}

/** The families programmed (bit 1: IPv4, bit 2: IPv6), as bridgedPolicing counts them. */
const familiesOf = (desired: DesiredState, programs: (family: 4 | 6) => boolean): number =>
  (desired.v4.chains.length > 0 && programs(4) ? 1 : 0) | (desired.v6.chains.length > 0 && programs(6) ? 2 : 0);

function workloadChains(desired: DesiredState): Chain[] {
  const out: Chain[] = [];
  for (const f of [desired.v4, desired.v6]) for (const c of f.chains) if (c.role.kind === 'workload') out.push(c);
  return out;
}

/** Whether the state's workload chains are exactly these objects, in this order (no list built to tell). */
function sameWorkloadChains(desired: DesiredState, chains: readonly Chain[]): boolean {
  let i = 0;
  for (const c of desired.v4.chains) if (c.role.kind === 'workload' && chains[i++] !== c) return false;
  for (const c of desired.v6.chains) if (c.role.kind === 'workload' && chains[i++] !== c) return false;
  return i === chains.length;
}

function bridgedPolicing(desired: DesiredState, programs: (family: 4 | 6) => boolean): BridgedPolicing {
  const pods = new Map<string, { ingress: boolean; egress: boolean }>();
  const families = new Set<4 | 6>();
  for (const f of [desired.v4, desired.v6]) {
    if (f.chains.length > 0 && programs(f.family)) families.add(f.family);
    for (const c of f.chains) {
      if (c.role.kind !== 'workload') continue;
      const pod = pods.get(c.role.ip) ?? { ingress: false, egress: false };
      pod[c.role.direction] = isOpen(c, c.role.pod, c.role.direction);
      pods.set(c.role.ip, pod);
    }
  }
  return { pods: pods as ReadonlyMap<string, PodOpenness>, families };
}

/**
 * Whether a workload chain ends open, once per chain object: every sync hands over every chain, and the
 * compiler returns the same object for a chain that did not change.
 */
const openness = new WeakMap<Chain, boolean>();
function isOpen(chain: Chain, pod: string, direction: 'ingress' | 'egress'): boolean {
  let open = openness.get(chain);
  if (open === undefined) {
    const comment = ruleComment.workloadOpen(pod, direction);
    openness.set(chain, (open = chain.rules.some((r) => r.comment === comment)));
  }
  return open;
}

/** Same pods with the same openness, same families (in the order they were found). */
function samePolicing(a: BridgedPolicing, b: BridgedPolicing): boolean {
  if (a.pods.size !== b.pods.size || a.families.size !== b.families.size) return false;
  const otherIps = b.pods.keys();
  for (const ip of a.pods.keys()) {
    if (otherIps.next().value !== ip) return false;
    const x = a.pods.get(ip)!;
    const y = b.pods.get(ip)!;
    if (x.ingress !== y.ingress || x.egress !== y.egress) return false;
  }
  const families = b.families.values();
  for (const f of a.families) if (families.next().value !== f) return false;
  return true;
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
  private desired: DesiredState | undefined;
  private byIp: ReadonlyMap<string, PodRef> | undefined;

  /** Only remembered: the map is made when a scrape asks for it, not on every sync. */
  synced(result: Pick<SyncReport, 'desired'>): void {
    if (result.desired === this.desired) return;
    this.desired = result.desired;
    this.byIp = undefined;
  }

  get(): ReadonlyMap<string, PodRef> {
    return (this.byIp ??= this.desired ? localPodsByIp(this.desired) : new Map());
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
