// The daemon's kernel preconditions: the bridge-netfilter sysctls without which same-node pod traffic is
// bridged past iptables (IPv4) or ip6tables (IPv6), so no policy applies to it. Both are per network
// namespace and anyone with root may switch them off at runtime, so they are read at start and on every
// resync; readiness, `netfence_kernel_precondition` and the log follow them (the log on changes only).

import { readSysctl } from '../dataplane/sysctl.js';
import type { Logger } from '../log.js';
import type { DesiredState, NodeSettings } from '../model/index.js';
import type { HealthState } from '../observe/health.js';
import type { Metrics, PreconditionName } from '../observe/metrics.js';
import type { SyncReport } from '../reconcile/sync-reports.js';

interface BridgeSysctl {
  readonly check: PreconditionName;
  readonly key: string;
  /** What bypasses policy while it is 0. */
  readonly bypass: string;
  readonly report: (health: HealthState, on: boolean | undefined) => void;
}

const BRIDGE_SYSCTLS: readonly BridgeSysctl[] = [
  {
    check: 'bridge-nf-call-iptables',
    key: 'net.bridge.bridge-nf-call-iptables',
    bypass: 'bridged pod-to-pod traffic bypasses iptables',
    report: (health, on) => health.bridgeNfCallIptables(on ?? true),
  },
  {
    check: 'bridge-nf-call-ip6tables',
    key: 'net.bridge.bridge-nf-call-ip6tables',
    bypass: 'bridged IPv6 pod-to-pod traffic bypasses ip6tables',
    report: (health, on) => health.bridgeNfCallIp6tables(on),
  },
];

export interface PreconditionInputs {
  readonly health: HealthState;
  readonly metrics: Metrics;
  readonly netns: string | undefined;
  readonly logger: Logger;
  /** Whether netfence programs IPv6 at all. */
  readonly ipv6: boolean;
  /** The node settings of the last compile (its pod CIDRs); none before the first. */
  readonly settings: () => NodeSettings | undefined;
}

/** Also a sync subscriber: the first IPv6 pod (or pod CIDR) makes the IPv6 sysctl matter now, not at the next resync. */
export interface PreconditionChecker {
  /** Reads each sysctl that applies to the node and reports it; the IPv4 one always applies. */
  check(): Promise<void>;
  synced(result: Pick<SyncReport, 'desired'>): void;
}

export function preconditionChecker(inputs: PreconditionInputs): PreconditionChecker {
  const { health, metrics, netns, logger } = inputs;
  const last = new Map<PreconditionName, boolean | undefined>();
  let desired: DesiredState | undefined;
  let checkedIpv6: boolean | undefined;
  // Only when the node has IPv6 pods does the IPv6 sysctl matter.
  const ipv6Pods = (): boolean => hasIpv6Pods(inputs.ipv6, inputs.settings(), desired);
  const check = async () => {
    const ipv6 = ipv6Pods();
    checkedIpv6 = ipv6;
    for (const sysctl of BRIDGE_SYSCTLS) {
      const applies = sysctl.check === 'bridge-nf-call-iptables' || ipv6;
      const value = applies ? await readSysctl(sysctl.key, { netns }).catch(() => 'unreadable') : undefined;
      const on = value === undefined ? undefined : value.trim() === '1';
      sysctl.report(health, on);
      metrics.setPrecondition(sysctl.check, on);
      const before = last.get(sysctl.check);
      last.set(sysctl.check, on);
      if (on === before) continue;
      if (on === false) logger.error(`${sysctl.key} is not 1: ${sysctl.bypass}; not ready until it is`, { value });
      else if (on === true && before === false) logger.info(`${sysctl.key} is 1 again: policy applies to bridged pod traffic`);
    }
  };
  return {
    check,
    synced(result) {
      desired = result.desired;
      // The node gained or lost IPv6 pods since the last check: check again now.
      if (checkedIpv6 !== undefined && checkedIpv6 !== ipv6Pods()) void check();
    },
  };
}

/**
 * A node has IPv6 pods when netfence programs IPv6 (`ipv6`) and either one of the node's pod CIDRs is
 * IPv6 (configuration, the Node's spec.podCIDRs or flannel's lease: pods may get such addresses at any
 * moment) or a pod of this node was compiled with an IPv6 address (a pod CIDR nobody told us about).
 */
export function hasIpv6Pods(ipv6: boolean, settings: NodeSettings | undefined, desired: DesiredState | undefined): boolean {
  if (!ipv6) return false;
  if (settings?.podCidrs.some((cidr) => cidr.includes(':'))) return true;
  return desired?.v6.chains.some((c) => c.role.kind === 'workload') ?? false;
}
