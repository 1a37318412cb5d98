// `trace`'s work: which family the packet is, who its two ends are (an address, `ns/pod` from the cluster,
// or a local pod named in our workload chains' comments), the packet as the node routes it, and its walk
// through the ruleset; with `--in-iface`, the anti-spoofing table's verdict on the frame too.

import type { SpoofVerdict } from '../antispoof/model.js';
import { podCidrsOf } from '../config/load.js';
import type { DaemonConfig } from '../config/schema.js';
import { inspectRuleset, type InspectReport } from '../inspect/index.js';
import { antiSpoofVerdict, establishedFate, strictModeOf } from '../inspect/strict-antispoof.js';
import { parseIp, podKey, type ClusterSnapshot, type IpFamily, type L4Protocol } from '../model/index.js';
import { icmpPacketFor, packetFor, RulesetError, tracePacket, type NodeLayout, type Packet, type TraceResult } from '../trace/index.js';
import { UsageError } from './errors.js';
import type { LoadedRuleset, RulesetReader } from './ruleset.js';

/** What the packet carries: a port for TCP/UDP/SCTP, a message type for ICMP/ICMPv6. */
export type Payload =
  | { readonly kind: 'l4'; readonly proto: L4Protocol; readonly dport: number; readonly sport?: number }
  | { readonly kind: 'icmp'; readonly family: IpFamily; readonly type: number; readonly hopLimit?: number };

export interface Endpoint {
  readonly ip: string;
  readonly pod?: string;
}

export interface TraceRequest {
  readonly config: Pick<DaemonConfig, 'chainPrefix' | 'nodeName' | 'podCidrs' | 'bridge'>;
  /** The cluster, when manifests or the API were read (for pod names and the node's addresses). */
  readonly snapshot: ClusterSnapshot | undefined;
  readonly src: string;
  readonly dst: string;
  readonly payload: Payload;
  /** `--family`, or the family the protocol names (ICMP is IPv4's, ICMPv6 IPv6's). */
  readonly family: IpFamily | undefined;
  /** `--uplink`: where traffic to other nodes leaves (default eth0). */
  readonly uplink: string | undefined;
  /** `--to-node`: the packet is for this node itself (INPUT). */
  readonly toNode: boolean;
  /** `--in-iface`: the bridge port (host veth) the packet enters from, checked by the anti-spoofing table. */
  readonly inPort: string | undefined;
}

export interface Traced {
  readonly family: IpFamily;
  readonly loaded: LoadedRuleset;
  readonly src: Endpoint;
  readonly dst: Endpoint;
  /** Both ends have this family too: the trace chose IPv4 by default. */
  readonly otherToo?: IpFamily;
  readonly layout: NodeLayout;
  /** Delivered through INPUT: to one of this node's own addresses (or `--to-node`). */
  readonly toNode: boolean;
  readonly packet: Packet;
  readonly result: TraceResult;
  /** What strict mode does to an established flow with this tuple. */
  readonly established: string;
  /** With `--in-iface`: the bridge table's verdict, or why there is none. */
  readonly antiSpoof?: SpoofVerdict | { readonly verdict: 'unknown'; readonly why: string };
}

/** A RulesetError when no candidate family's ruleset reads, a UsageError for ends that do not fit it. */
export async function traceNode(reader: RulesetReader, request: TraceRequest): Promise<Traced> {
  const { config, snapshot, payload, inPort } = request;
  const { family, loaded, report, src, dst, otherToo } = await pickFamily(reader, request);
  const { ruleset, ipsets } = loaded;
  const layout = nodeLayout(config, request.uplink, snapshot, report);
  // A local pod's packet to one of this node's own addresses is delivered through INPUT, not FORWARD.
  const toNode = request.toNode || nodeAddresses(snapshot, config.nodeName).includes(dst.ip);
  const routed =
    payload.kind === 'icmp'
      ? icmpPacketFor(
          {
            src: src.ip,
            dst: dst.ip,
            family: payload.family,
            type: payload.type,
            ...(payload.hopLimit !== undefined ? { hopLimit: payload.hopLimit } : {}),
            toNode,
          },
          layout,
        )
      : packetFor(
          {
            src: src.ip,
            dst: dst.ip,
            proto: payload.proto,
            dport: payload.dport,
            ...(payload.sport !== undefined ? { sport: payload.sport } : {}),
          },
          layout,
        );
  const packet = { ...routed, ...(toNode ? { outIface: '' } : {}), ...(inPort ? { physIn: inPort } : {}) };
  const result = tracePacket(ruleset, ipsets, packet, { chainPrefix: config.chainPrefix, ...(toNode ? { startChain: 'INPUT' } : {}) });
  const established = establishedFate(strictModeOf(ruleset, config.chainPrefix), result);
  const programmed = inPort ? await reader.antiSpoof() : undefined;
  const antiSpoof = inPort
    ? programmed
      ? antiSpoofVerdict(programmed, inPort, src.ip, family === 6 ? 'ipv6' : 'ipv4')
      : { verdict: 'unknown' as const, why: 'no anti-spoofing table to check (saved dump, or not programmed on this node)' }
    : undefined;
  return {
    family,
    loaded,
    src,
    dst,
    ...(otherToo !== undefined ? { otherToo } : {}),
    layout,
    toNode,
    packet,
    result,
    established,
    ...(antiSpoof ? { antiSpoof } : {}),
  };
}

/**
 * The anti-spoofing verdict alone, for a source address of a family with no netfence chains to trace;
 * undefined when there is none to give (the source is a name, of another family, or no table is programmed).
 */
export async function antiSpoofAlone(
  reader: RulesetReader,
  inPort: string,
  srcRef: string,
  flag: IpFamily | undefined,
): Promise<{ readonly family: IpFamily; readonly antiSpoof: SpoofVerdict } | undefined> {
  const addr = parseIp(srcRef);
  if (!addr || (flag !== undefined && flag !== addr.family)) return undefined;
  const programmed = await reader.antiSpoof();
  if (!programmed) return undefined;
  const family = addr.family;
  return { family, antiSpoof: antiSpoofVerdict(programmed, inPort, srcRef, family === 6 ? 'ipv6' : 'ipv4') };
}

/** `10.0.0.1`, or `ns/pod` from the manifests, or a local pod named in our workload chains' comments. */
function resolve(ref: string, snapshot: ClusterSnapshot | undefined, report: InspectReport, family: IpFamily): Endpoint {
  const literal = parseIp(ref);
  if (literal) {
    if (literal.family !== family)
      throw new UsageError(`${ref} is an IPv${literal.family} address, and this trace is IPv${family} (--family)`);
    return { ip: ref };
  }
  if (!/^[^/\s]+\/[^/\s]+$/.test(ref)) throw new UsageError(`"${ref}" is neither an IP address nor namespace/pod`);
  const fromManifest = snapshot?.pods.find((p) => podKey(p) === ref);
  if (fromManifest && fromManifest.ips.length > 0) {
    const ip = fromManifest.ips.find((i) => parseIp(i)?.family === family);
    if (ip) return { ip, pod: ref };
    throw new UsageError(`pod ${ref} has no IPv${family} address (it has ${fromManifest.ips.join(', ')})`);
  }
  const local = report.pods.find((p) => p.pod === ref);
  if (local) return { ip: local.ip, pod: ref };
  const hint = snapshot
    ? 'not in the cluster (--resources manifests or the API), or it has no IP yet'
    : `not a local pod in the ruleset; pass --kubeconfig F (or run in the cluster) or --resources PATH (one per file or directory) to name remote pods`;
  throw new UsageError(`pod ${ref}: ${hint}`);
}

/** The IP families a named pod has, from the manifests or the API; undefined when they do not know it. */
function podFamilies(snapshot: ClusterSnapshot | undefined, ref: string): Set<IpFamily> | undefined {
  const pod = snapshot?.pods.find((p) => podKey(p) === ref);
  if (!pod || pod.ips.length === 0) return undefined;
  return new Set(pod.ips.flatMap((i) => parseIp(i)?.family ?? []));
}

interface Picked {
  readonly family: IpFamily;
  readonly loaded: LoadedRuleset;
  readonly report: InspectReport;
  readonly src: Endpoint;
  readonly dst: Endpoint;
  readonly otherToo?: IpFamily;
}

/**
 * The family of the traced packet: --family; else an address given; else the families both named pods
 * have (IPv4 when they share both: the default, and the output says so); pods known only from the
 * ruleset's comments decide by which family's ruleset names them.
 */
async function pickFamily(reader: RulesetReader, request: TraceRequest): Promise<Picked> {
  const { snapshot, src: srcRef, dst: dstRef, family: flag, config } = request;
  const literals = [srcRef, dstRef].flatMap((r) => {
    const a = parseIp(r);
    return a ? [{ ref: r, family: a.family }] : [];
  });
  if (literals.length === 2 && literals[0]!.family !== literals[1]!.family)
    throw new UsageError(`--src ${srcRef} and --dst ${dstRef} are of different IP families`);
  const literal = literals[0];
  if (flag !== undefined && literal && literal.family !== flag)
    throw new UsageError(`--family ${flag}, but ${literal.ref} is an IPv${literal.family} address`);
  let candidates: IpFamily[];
  if (flag !== undefined) candidates = [flag];
  else if (literal) candidates = [literal.family];
  else {
    candidates = [4, 6];
    for (const ref of [srcRef, dstRef]) {
      const has = podFamilies(snapshot, ref);
      if (has) candidates = candidates.filter((f) => has.has(f));
    }
    if (candidates.length === 0) {
      const says = (ref: string) => `${ref} has only IPv${[...(podFamilies(snapshot, ref) ?? [])].join('/IPv')}`;
      throw new UsageError(`${says(srcRef)} and ${says(dstRef)}: no packet between them`);
    }
  }
  let firstError: unknown;
  for (const family of candidates) {
    try {
      const loaded = await reader.read(family);
      const report = inspectRuleset(loaded.ruleset, loaded.ipsets, { chainPrefix: config.chainPrefix });
      const src = resolve(srcRef, snapshot, report, family);
      const dst = resolve(dstRef, snapshot, report, family);
      const otherToo =
        candidates.length === 2 &&
        family === 4 &&
        literal === undefined &&
        flag === undefined &&
        [srcRef, dstRef].every((r) => podFamilies(snapshot, r)?.has(6))
          ? 6
          : undefined;
      return { family, loaded, report, src, dst, ...(otherToo !== undefined ? { otherToo } : {}) };
    } catch (err) {
      // Only when the family was not chosen for us: try the next one, and report the first failure if none works.
      if (!(err instanceof UsageError || err instanceof RulesetError)) throw err;
      firstError ??= err;
    }
  }
  throw firstError;
}

/** The InternalIP/ExternalIP addresses of this node, when the manifests or the API list it. */
function nodeAddresses(snapshot: ClusterSnapshot | undefined, nodeName: string): readonly string[] {
  return snapshot?.nodes.find((n) => n.name === nodeName)?.addresses ?? [];
}

/**
 * Which addresses are local pods: the pod CIDRs (podCidrsOf: configuration, the Node's podCIDRs, else the
 * fail-closed ranges of the dispatch chains; no flannel lease is read here) and the dispatch chains' pod IPs.
 */
function nodeLayout(
  config: TraceRequest['config'],
  uplink: string | undefined,
  snapshot: ClusterSnapshot | undefined,
  report: InspectReport,
): NodeLayout {
  const podCidrs = podCidrsOf(config, snapshot, { programmed: report.failClosedCidrs });
  return { bridge: config.bridge, uplink: uplink ?? 'eth0', podCidrs, localIps: report.pods.map((p) => p.ip) };
}
