// Detects kube-proxy's IPVS mode on this node. With IPVS, a Service VIP is a local address (bound to the
// `kube-ipvs0` dummy device), so pod → ClusterIP → pod on the same node is delivered by IPVS from
// LOCAL_IN and re-sent through LOCAL_OUT ("all transmitters are called from LOCAL_IN (remote clients)
// and LOCAL_OUT (local clients)", ip_vs_xmit.c): it never crosses FORWARD, where netfence enforces.

import { readFile } from 'node:fs/promises';
import { run } from './exec.js';
import { listLinks, type LinkInfo } from './links.js';

/** The dummy device kube-proxy's IPVS proxier binds every Service address to. */
export const KUBE_IPVS_DEVICE = 'kube-ipvs0';

export interface IpvsDetection {
  /** True when kube-proxy runs in IPVS mode here (its kube-ipvs0 device exists). */
  readonly detected: boolean;
  /** What was found, for the log line: the device and its addresses, IPVS virtual servers. */
  readonly evidence: readonly string[];
}

/**
 * Pure: the verdict from the links and `/proc/net/ip_vs` (undefined when the file is absent: no ip_vs
 * module). Only kube-ipvs0 decides; virtual servers alone may be someone else's load balancer (keepalived).
 */
export function ipvsFrom(links: readonly LinkInfo[], procIpVs: string | undefined): IpvsDetection {
  const evidence: string[] = [];
  const device = links.find((l) => l.name === KUBE_IPVS_DEVICE);
  if (device)
    evidence.push(`${KUBE_IPVS_DEVICE} device (${device.kind ?? 'unknown kind'}) with ${device.addresses.length} service address(es)`);
  const servers = (procIpVs ?? '').split('\n').filter((l) => /^(TCP|UDP|SCTP|FWM)\s/.test(l)).length;
  if (servers > 0) evidence.push(`${servers} IPVS virtual server(s) in /proc/net/ip_vs`);
  return { detected: device !== undefined, evidence };
}

export async function detectIpvs(opts: { readonly netns?: string | undefined } = {}): Promise<IpvsDetection> {
  const [links, proc] = await Promise.all([
    listLinks({ netns: opts.netns }),
    // /proc/net follows the reader's network namespace: another namespace needs a process inside it.
    (opts.netns === undefined
      ? readFile('/proc/net/ip_vs', 'utf8')
      : run('cat', ['/proc/net/ip_vs'], { netns: opts.netns }).then((r) => r.stdout)
    ).catch(() => undefined),
  ]);
  return ipvsFrom(links, proc);
}
