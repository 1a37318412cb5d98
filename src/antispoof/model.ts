// Anti-spoofing on the pod bridge, as a value: which bridge port may send which source addresses.
// Built purely from what the kernel says the bridge's ports are and what the CNI result cache says each
// port's pod holds. A port with no binding is known to exist and refused everything (fail closed): its
// pod is not known yet, and letting it speak would let it claim any address until it is.

import type { CniBinding } from '../dataplane/cni-cache.js';

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
 */
export function antiSpoofState(bridge: string, links: readonly PortLink[], cache: readonly CniBinding[]): AntiSpoofState {
  const ports = links.filter((l) => l.master === bridge).map((l) => l.name);
  const otherPorts = [...new Set(links.filter((l) => l.master !== undefined && l.master !== bridge).map((l) => l.name))].sort();
  const byPort = new Map<string, CniBinding[]>();
  for (const b of cache) byPort.set(b.hostVeth, [...(byPort.get(b.hostVeth) ?? []), b]);
  const bindings: PortBinding[] = [];
  const unknownPorts: string[] = [];
  for (const port of [...new Set(ports)].sort()) {
    const entries = byPort.get(port) ?? [];
    const ipSets = new Set(entries.map((e) => [...e.ips].sort().join(',')));
    const entry = entries[0];
    if (!entry || ipSets.size !== 1) {
      unknownPorts.push(port);
      continue;
    }
    const ipv4 = entry.ips.filter((ip) => !ip.includes(':')).sort();
    const ipv6 = entry.ips.filter((ip) => ip.includes(':')).sort();
    bindings.push({ port, ipv4, ipv6, source: entry.key });
  }
  return { bridge, bindings, unknownPorts, otherPorts };
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
