// Anti-spoofing on the pod bridge, as a value: which bridge port may send which source addresses.
// Built purely from what the kernel says the bridge's ports are and what the CNI result cache says each
// port's pod holds. A port with no binding is known to exist and refused everything (fail closed): its
// pod is not known yet, and letting it speak would let it claim any address until it is.

import type { CniBinding } from '../dataplane/cni-cache.js';
import { parseIp } from '../model/address.js';

export interface PortBinding {
  /** Host veth name: the bridge port the pod's frames enter through. */
  readonly port: string;
  /** The only IPv4 sources (and ARP sender addresses) this port may use. */
  readonly ipv4: readonly string[];
  /** The only IPv6 global sources; link-local (fe80::/10) and `::` (DAD) are allowed besides. */
  readonly ipv6: readonly string[];
  /** The CNI cache entry the binding came from (`cbr0-<containerID>-eth0`), for operators. */
  readonly source: string;
}

export interface AntiSpoofState {
  readonly bridge: string;
  /** Sorted by port name, so equal inputs give equal values (and an unchanged table is not rewritten). */
  readonly bindings: readonly PortBinding[];
  /** Ports of the bridge that no cache entry names: everything from them is dropped. */
  readonly unknownPorts: readonly string[];
  /** veth ports of other bridges on the node (not pods of ours): passed untouched. */
  readonly otherPorts: readonly string[];
  /** Addresses that cache entries of two or more live ports claim: bound to none of them. */
  readonly conflicts: readonly AddressConflict[];
}

/** One address claimed by cache entries naming different ports of the bridge (e.g. a stale sandbox and the pod that got its address). */
export interface AddressConflict {
  readonly address: string;
  /** Every claim, sorted by entry: the cache file and the port it names. */
  readonly claims: readonly { readonly entry: string; readonly port: string }[];
}

/** A link as the kernel lists it: its name and the bridge it is a port of, if any. */
export interface PortLink {
  readonly name: string;
  readonly master?: string;
}

/**
 * `links` are the node's links (from the kernel); the ports of `bridge` are the pods' host veths. A cache entry whose veth is not a port any
 * more is stale (the pod went, or its veth was renamed) and is ignored; two entries naming one port
 * keep the newer file's by name order only if they agree, otherwise the port is treated as unknown.
 * An address that entries of two different live ports claim is bound to neither: the cache cannot say
 * which is the pod that holds it now, and binding both would let a stale sandbox send as the new pod.
 * A port left with no address of its own is unknown (it sends nothing).
 */
export function antiSpoofState(bridge: string, links: readonly PortLink[], cache: readonly CniBinding[]): AntiSpoofState {
  const ports = [...new Set(links.filter((l) => l.master === bridge).map((l) => l.name))].sort();
  const otherPorts = [...new Set(links.filter((l) => l.master !== undefined && l.master !== bridge).map((l) => l.name))].sort();
  const live = new Set(ports);
  const byPort = new Map<string, CniBinding[]>();
  for (const b of cache) if (live.has(b.hostVeth)) byPort.set(b.hostVeth, [...(byPort.get(b.hostVeth) ?? []), b]);
  const conflicts = addressConflicts([...byPort.values()].flat());
  const contested = new Set(conflicts.map((c) => addressKey(c.address)));
  const bindings: PortBinding[] = [];
  const unknownPorts: string[] = [];
  for (const port of ports) {
    const entries = byPort.get(port) ?? [];
    const ipSets = new Set(entries.map((e) => [...e.ips].sort().join(',')));
    const entry = entries[0];
    const own = entry?.ips.filter((ip) => !contested.has(addressKey(ip))) ?? [];
    if (!entry || ipSets.size !== 1 || own.length === 0) {
      unknownPorts.push(port);
      continue;
    }
    const ipv4 = own.filter((ip) => !ip.includes(':')).sort();
    const ipv6 = own.filter((ip) => ip.includes(':')).sort();
    bindings.push({ port, ipv4, ipv6, source: entry.key });
  }
  return { bridge, bindings, unknownPorts, otherPorts, conflicts };
}

/** One spelling per address, so `fd00::a` and `fd00:0::0a` are seen as the same claim. */
export function addressKey(ip: string): string {
  const addr = parseIp(ip);
  return addr ? `${addr.family}/${addr.value.toString(16)}` : ip;
}

/** Addresses claimed by entries naming more than one port, in address order. */
function addressConflicts(entries: readonly CniBinding[]): AddressConflict[] {
  const claims = new Map<string, { address: string; claims: { entry: string; port: string }[] }>();
  for (const e of entries) {
    for (const ip of new Set(e.ips)) {
      const key = addressKey(ip);
      const seen = claims.get(key) ?? { address: ip, claims: [] };
      seen.claims.push({ entry: e.key, port: e.hostVeth });
      claims.set(key, seen);
    }
  }
  return [...claims.values()]
    .filter((c) => new Set(c.claims.map((x) => x.port)).size > 1)
    .map((c) => ({ address: c.address, claims: [...c.claims].sort((a, b) => a.entry.localeCompare(b.entry)) }))
    .sort((a, b) => a.address.localeCompare(b.address));
}

export type FrameKind = 'ipv4' | 'ipv6' | 'arp';

export interface Frame {
  /** The bridge port the frame entered through. */
  readonly inPort: string;
  readonly kind: FrameKind;
  /** IP source, or the ARP sender protocol address. */
  readonly src: string;
}

export interface SpoofVerdict {
  readonly verdict: 'accept' | 'drop';
  readonly why: string;
}

/** What the bridge table does with a frame: the same decisions render.ts writes as nft rules. */
export function judgeFrame(state: AntiSpoofState, frame: Frame): SpoofVerdict {
  const binding = state.bindings.find((b) => b.port === frame.inPort);
  if (!binding) {
    return { verdict: 'drop', why: `port ${frame.inPort} has no known pod (fail closed until the CNI result cache names it)` };
  }
  const allowed = allowedSources(binding, frame.kind);
  if (allowed.includes(frame.src) || (frame.kind === 'ipv6' && frame.src.toLowerCase().startsWith('fe80:'))) {
    return { verdict: 'accept', why: `${frame.src} is ${frame.inPort}'s own address (${binding.source})` };
  }
  const what = frame.kind === 'arp' ? 'ARP claiming' : `${frame.kind} from`;
  return {
    verdict: 'drop',
    why: `${what} ${frame.src} on ${frame.inPort}, whose pod holds ${[...binding.ipv4, ...binding.ipv6].join(', ') || 'no address'}`,
  };
}

/** ARP probes (RFC 5227) carry sender 0.0.0.0; IPv6 DAD sends from `::`. */
export function allowedSources(binding: PortBinding, kind: FrameKind): readonly string[] {
  switch (kind) {
    case 'ipv4':
      return binding.ipv4;
    case 'arp':
      return [...binding.ipv4, '0.0.0.0'];
    case 'ipv6':
      return [...binding.ipv6, '::'];
  }
}
