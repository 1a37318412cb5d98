// `netfence trace`: walk one new packet through the live (or saved) ruleset and say who decided it.
// Pod names resolve through --resources manifests or the API (--kubeconfig, in-cluster), or, for local
// pods, through our own rule comments. Exit 0 allowed, 1 dropped, 2 error.

import { loadManifests } from '../cluster/manifests.js';
import type { DaemonConfig } from '../config/schema.js';
import { podCidrsOf } from '../config/load.js';
import { inspectRuleset, type InspectReport } from '../inspect/index.js';
import { parseIp, podKey, type ClusterSnapshot, type IpFamily, type L4Protocol, type ManifestLimits } from '../model/index.js';
import {
  formatTrace,
  icmpPacketFor,
  isLocal,
  packetFor,
  RulesetError,
  tracePacket,
  wrap,
  type NodeLayout,
  type TraceResult,
} from '../trace/index.js';
import type { Io } from './command-specs.js';
import { createLogger } from '../log.js';
import { configFrom, loadCluster, manifestLimits, parseCommand, resourcePaths, UsageError, type Parsed } from './context.js';
import { familyFlag, readAntiSpoof, readRuleset, withRulesetErrors, type LoadedRuleset } from './inspect.js';
import { antiSpoofVerdict, establishedFate, strictModeOf } from '../inspect/strict-antispoof.js';

const PROTOCOLS: readonly L4Protocol[] = ['tcp', 'udp', 'sctp'];
/** ICMP protocols and the family each implies (`ipv6-icmp` is how iptables names ICMPv6). */
const ICMP_PROTOCOLS: Readonly<Record<string, IpFamily>> = { icmp: 4, icmpv6: 6, 'ipv6-icmp': 6 };

/** What the packet carries: a port for TCP/UDP/SCTP, a message type for ICMP/ICMPv6. */
type Payload =
  | { readonly kind: 'l4'; readonly proto: L4Protocol; readonly dport: number; readonly sport?: number }
  | { readonly kind: 'icmp'; readonly family: IpFamily; readonly type: number; readonly hopLimit?: number };

function payloadOf(parsed: Parsed, protoText: string): Payload {
  const text = (flag: string): string | undefined => parsed.values[flag] as string | undefined;
  const icmpFamily = ICMP_PROTOCOLS[protoText];
  if (icmpFamily !== undefined) {
    for (const flag of ['port', 'src-port'])
      if (text(flag) !== undefined) throw new UsageError(`--${flag} is for tcp, udp and sctp: ${protoText} has no ports (use --icmp-type)`);
    const typeText = text('icmp-type');
    if (typeText === undefined || typeText === '')
      throw new UsageError(
        `--proto ${protoText} needs --icmp-type N (e.g. ${icmpFamily === 6 ? '135, a neighbour solicitation' : '8, an echo request'})`,
      );
    const hopText = text('hop-limit');
    if (hopText !== undefined && icmpFamily === 4) throw new UsageError('--hop-limit is for icmpv6 (no netfence rule matches an IPv4 TTL)');
    return {
      kind: 'icmp',
      family: icmpFamily,
      type: byteValue('--icmp-type', typeText, 0),
      ...(hopText !== undefined ? { hopLimit: byteValue('--hop-limit', hopText, 1) } : {}),
    };
  }
  const proto = PROTOCOLS.find((p) => p === protoText);
  if (!proto) throw new UsageError(`--proto must be tcp, udp, sctp, icmp or icmpv6, not "${protoText}"`);
  for (const flag of ['icmp-type', 'hop-limit'])
    if (text(flag) !== undefined) throw new UsageError(`--${flag} is for icmp and icmpv6, not ${proto}`);
  const portText = text('port');
  if (portText === undefined || portText === '') throw new UsageError('--port is required');
  const sportText = text('src-port');
  return {
    kind: 'l4',
    proto,
    dport: portNumber('--port', portText),
    ...(sportText !== undefined ? { sport: portNumber('--src-port', sportText) } : {}),
  };
}

/** An ICMP type or hop limit: a whole number up to 255. */
function byteValue(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > 255) throw new UsageError(`${flag} must be a number ${min}-255, not "${text}"`);
  return n;
}

interface Endpoint {
  readonly ip: string;
  readonly pod?: string;
}

export async function traceCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('trace', argv);
  const config = configFrom(parsed, false);
  const want = (flag: string): string => {
    const v = parsed.values[flag];
    if (typeof v !== 'string' || v === '') throw new UsageError(`--${flag} is required`);
    return v;
  };
  const [srcRef, dstRef, protoText] = [want('src'), want('dst'), want('proto').toLowerCase()];
  const payload = payloadOf(parsed, protoText);
  const snapshot = await clusterFor(parsed, [srcRef, dstRef], manifestLimits(config));

  const given = familyFlag(parsed);
  // ICMP is IPv4's, ICMPv6 IPv6's: the protocol names the family.
  if (payload.kind === 'icmp' && given !== undefined && given !== payload.family)
    throw new UsageError(`--family ${given} contradicts --proto ${protoText} (IPv${payload.family})`);
  const flag = payload.kind === 'icmp' ? payload.family : given;
  // --in-iface: the bridge port (host veth) the packet enters from, checked by the anti-spoofing table.
  const inPort = parsed.values['in-iface'] as string | undefined;
  return withRulesetErrors('trace', io, async () => {
    let picked: Picked;
    try {
      picked = await pickFamily(parsed, config, snapshot, srcRef, dstRef, flag);
    } catch (err) {
      // No chains of the packet's family here (e.g. an IPv6 source on an IPv4-only node): the bridge
      // table still judges the frame, whatever FORWARD would do with it.
      const alone =
        inPort !== undefined && err instanceof RulesetError
          ? await antiSpoofAlone(parsed, config, io, inPort, srcRef, flag, err)
          : undefined;
      if (alone === undefined) throw err;
      return alone;
    }
    const { family, loaded, report, src, dst, otherToo } = picked;
    const { ruleset, ipsets, source } = loaded;
    const layout = nodeLayout(config, parsed, snapshot, report);
    // A local pod's packet to one of this node's own addresses is delivered through INPUT, not FORWARD.
    const toNode = parsed.values['to-node'] === true || nodeAddresses(snapshot, config.nodeName).includes(dst.ip);
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
    const programmed = inPort ? await readAntiSpoof(parsed, config) : undefined;
    const antiSpoof = inPort
      ? programmed
        ? antiSpoofVerdict(programmed, inPort, src.ip, family === 6 ? 'ipv6' : 'ipv4')
        : { verdict: 'unknown', why: 'no anti-spoofing table to check (saved dump, or not programmed on this node)' }
      : undefined;
    const label = (e: Endpoint) =>
      `${e.pod ? `${e.pod}, ` : ''}${e === dst && toNode ? 'this node (INPUT)' : isLocal(e.ip, layout) ? 'local' : 'remote'}`;
    if (parsed.values['json'] === true) {
      io.out(
        `${JSON.stringify({ family, source, packet, src, dst, podCidrs: layout.podCidrs, ...result, established, ...(antiSpoof ? { antiSpoof } : {}) }, null, 2)}\n`,
      );
    } else {
      const local = layout.podCidrs.join(', ') || 'as listed in the dispatch chains';
      io.out(`${wrap(`${source}; local pods: ${local}`, 'ruleset ', '        ').join('\n')}\n`);
      if (otherToo)
        io.out(
          `${wrap(`IPv${family}; both ends have IPv${otherToo} addresses too (--family ${otherToo} traces that packet)`, 'family  ', '        ').join('\n')}\n`,
        );
      if (antiSpoof) {
        const before = antiSpoof.verdict === 'drop' ? ' (the packet never reaches FORWARD)' : '';
        io.out(
          `${wrap(`${antiSpoof.verdict.toUpperCase()}${before}: ${antiSpoof.why}`, `anti-spoofing on ${inPort}: `, '  ').join('\n')}\n`,
        );
      }
      // A live read: a learned entry's remaining seconds count from now (a saved dump's from when it was taken).
      const now = parsed.values['saved'] === undefined ? { now: Date.now() } : {};
      io.out(formatTrace(result, packet, { ruleset, chainPrefix: config.chainPrefix, srcLabel: label(src), dstLabel: label(dst), ...now }));
      io.out(`${wrap(established, 'established: ', '  ').join('\n')}\n`);
    }
    return exitCodeOf(result);
  });
}

/**
 * The anti-spoofing verdict alone, for a source address of a family with no netfence chains to trace.
 * Exit 1 when the bridge table drops the frame (it never reaches FORWARD); otherwise the ruleset's
 * error stands (exit 2): what happens past the bridge table is not known.
 */
async function antiSpoofAlone(
  parsed: Parsed,
  config: DaemonConfig,
  io: Io,
  inPort: string,
  srcRef: string,
  flag: IpFamily | undefined,
  err: RulesetError,
): Promise<number | undefined> {
  const addr = parseIp(srcRef);
  if (!addr || (flag !== undefined && flag !== addr.family)) return undefined;
  const programmed = await readAntiSpoof(parsed, config);
  if (!programmed) return undefined;
  const family = addr.family;
  const antiSpoof = antiSpoofVerdict(programmed, inPort, srcRef, family === 6 ? 'ipv6' : 'ipv4');
  const ruleset = err.message;
  if (parsed.values['json'] === true) io.out(`${JSON.stringify({ family, src: { ip: srcRef }, antiSpoof, ruleset }, null, 2)}\n`);
  else {
    const before = antiSpoof.verdict === 'drop' ? ' (the packet never reaches FORWARD)' : '';
    io.out(`${wrap(`${antiSpoof.verdict.toUpperCase()}${before}: ${antiSpoof.why}`, `anti-spoofing on ${inPort}: `, '  ').join('\n')}\n`);
    io.out(
      `${wrap(`${ruleset}${antiSpoof.verdict === 'drop' ? '' : ' — the rest of the path is not traced'}`, 'ruleset ', '        ').join('\n')}\n`,
    );
  }
  if (antiSpoof.verdict === 'drop') return 1;
  io.err(`netfence trace: ${err.message}\n`);
  return 2;
}

/** For scripts: 0 the packet is allowed, 1 it is dropped (by netfence or, past it, by the rest of FORWARD); 2 is left for errors. */
export function exitCodeOf(result: Pick<TraceResult, 'verdict' | 'after'>): 0 | 1 {
  const verdict = result.verdict === 'NO-VERDICT' ? (result.after?.verdict ?? 'ACCEPT') : result.verdict;
  return verdict === 'ACCEPT' ? 0 : 1;
}

/** Time to list the cluster for pod names before giving up (exit 2). */
const API_TIMEOUT_MS = 15_000;

/**
 * Where `ns/pod` names come from: --resources manifests; else the API (--kubeconfig F, or the in-cluster
 * configuration when running in a pod), listed once, only when a name is asked for; else nothing (local
 * pods still resolve through the workload chains' comments).
 */
async function clusterFor(parsed: Parsed, refs: readonly string[], limits: ManifestLimits): Promise<ClusterSnapshot | undefined> {
  if (resourcePaths(parsed).length > 0) return loadManifests(resourcePaths(parsed), limits).snapshot;
  if (refs.every((r) => parseIp(r) !== undefined)) return undefined;
  const inCluster = process.env['KUBERNETES_SERVICE_HOST'] !== undefined && process.env['KUBERNETES_SERVICE_HOST'] !== '';
  if (parsed.values['kubeconfig'] === undefined && !inCluster) return undefined;
  const logger = createLogger({ level: 'error', format: 'text' });
  return (await loadCluster(parsed, logger, limits, API_TIMEOUT_MS)).snapshot;
}

function portNumber(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new UsageError(`${flag} must be a port number 1-65535, not "${text}"`);
  return n;
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
  /** Both ends have this family too: the trace chose IPv4 by default. */
  readonly otherToo?: IpFamily;
}

/**
 * The family of the traced packet: --family; else an address given; else the families both named pods
 * have (IPv4 when they share both: the default, and the output says so); pods known only from the
 * ruleset's comments decide by which family's ruleset names them.
 */
async function pickFamily(
  parsed: Parsed,
  config: DaemonConfig,
  snapshot: ClusterSnapshot | undefined,
  srcRef: string,
  dstRef: string,
  flag: IpFamily | undefined,
): Promise<Picked> {
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
      const loaded = await readRuleset(parsed, config, family);
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
function nodeLayout(config: DaemonConfig, parsed: Parsed, snapshot: ClusterSnapshot | undefined, report: InspectReport): NodeLayout {
  const podCidrs = podCidrsOf(config, snapshot, { programmed: report.failClosedCidrs });
  return {
    bridge: config.bridge,
    uplink: (parsed.values['uplink'] as string | undefined) ?? 'eth0',
    podCidrs,
    localIps: report.pods.map((p) => p.ip),
  };
}
