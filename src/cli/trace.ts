// `netfence trace`: walk one new packet through the live (or saved) ruleset and say who decided it.
// Pod names resolve through --resources manifests, or, for local pods, through our own rule comments.

import { loadManifests } from '../cluster/manifests.js';
import type { DaemonConfig } from '../config/schema.js';
import { inspectRuleset, type InspectReport } from '../inspect/index.js';
import { podKey, type ClusterSnapshot, type L4Protocol } from '../model/index.js';
import { formatTrace, isLocal, packetFor, parseAddr, tracePacket, wrap, type NodeLayout } from '../trace/index.js';
import type { Io } from './commands.js';
import { configFrom, parseCommand, resourcePaths, UsageError, type Parsed } from './context.js';
import { readRuleset, withRulesetErrors } from './inspect.js';

const PROTOCOLS: readonly L4Protocol[] = ['tcp', 'udp', 'sctp'];

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
  const [srcRef, dstRef, protoText, portText] = [want('src'), want('dst'), want('proto').toLowerCase(), want('port')];
  const proto = PROTOCOLS.find((p) => p === protoText);
  if (!proto) throw new UsageError(`--proto must be tcp, udp or sctp, not "${protoText}"`);
  const dport = portNumber('--port', portText);
  const sportText = parsed.values['src-port'] as string | undefined;
  if (parsed.values['kubeconfig'] !== undefined) {
    throw new UsageError('resolving pod names through the API is not supported yet: pass --resources PATH… or use IP addresses');
  }
  const snapshot = resourcePaths(parsed).length > 0 ? loadManifests(resourcePaths(parsed)).snapshot : undefined;

  return withRulesetErrors('trace', io, async () => {
    // The family follows the addresses: an IP literal decides it before any rules are read.
    const literal = [srcRef, dstRef].map(parseAddr).find((a) => a !== undefined);
    const familyGuess = literal?.family ?? (snapshot ? familyOfPods(snapshot, [srcRef, dstRef]) : 4);
    const { ruleset, ipsets, source } = await readRuleset(parsed, config, familyGuess);
    const report = inspectRuleset(ruleset, ipsets, { chainPrefix: config.chainPrefix });
    const src = resolve(srcRef, snapshot, report, familyGuess);
    const dst = resolve(dstRef, snapshot, report, familyGuess);
    if (parseAddr(src.ip)?.family !== parseAddr(dst.ip)?.family) throw new UsageError(`--src ${src.ip} and --dst ${dst.ip} are of different IP families`);
    const layout = nodeLayout(config, parsed, snapshot, report);
    const sport = sportText !== undefined ? { sport: portNumber('--src-port', sportText) } : {};
    const packet = packetFor({ src: src.ip, dst: dst.ip, proto, dport, ...sport }, layout);
    const result = tracePacket(ruleset, ipsets, packet, { chainPrefix: config.chainPrefix });
    const label = (e: Endpoint) => `${e.pod ? `${e.pod}, ` : ''}${isLocal(e.ip, layout) ? 'local' : 'remote'}`;
    if (parsed.values['json'] === true) {
      io.out(`${JSON.stringify({ source, packet, src, dst, podCidrs: layout.podCidrs, ...result }, null, 2)}\n`);
    } else {
      const local = layout.podCidrs.join(', ') || 'as listed in the dispatch chains';
      io.out(`${wrap(`${source}; local pods: ${local}`, 'ruleset ', '        ').join('\n')}\n`);
      io.out(formatTrace(result, packet, { ruleset, chainPrefix: config.chainPrefix, srcLabel: label(src), dstLabel: label(dst) }));
    }
    return 0;
  });
}

function portNumber(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new UsageError(`${flag} must be a port number 1-65535, not "${text}"`);
  return n;
}

/** `10.0.0.1`, or `ns/pod` from the manifests, or a local pod named in our workload chains' comments. */
function resolve(ref: string, snapshot: ClusterSnapshot | undefined, report: InspectReport, family: 4 | 6): Endpoint {
  if (parseAddr(ref)) return { ip: ref };
  if (!/^[^/\s]+\/[^/\s]+$/.test(ref)) throw new UsageError(`"${ref}" is neither an IP address nor namespace/pod`);
  const fromManifest = snapshot?.pods.find((p) => podKey(p) === ref);
  const ip = fromManifest?.ips.find((i) => parseAddr(i)?.family === family) ?? fromManifest?.ips[0];
  if (ip) return { ip, pod: ref };
  const local = report.pods.find((p) => p.pod === ref);
  if (local) return { ip: local.ip, pod: ref };
  const hint = snapshot ? 'not in the --resources manifests (or it has no IP yet)' : 'not a local pod in the ruleset; pass --resources PATH… to name remote pods';
  throw new UsageError(`pod ${ref}: ${hint}`);
}

function familyOfPods(snapshot: ClusterSnapshot, refs: readonly string[]): 4 | 6 {
  const pod = snapshot.pods.find((p) => refs.includes(podKey(p)));
  return pod?.ips[0] !== undefined && parseAddr(pod.ips[0])?.family === 6 ? 6 : 4;
}

/**
 * Which addresses are local pods: configured --pod-cidr first, then the Node's podCIDRs from the manifests,
 * then the fail-closed ranges of the dispatch chains; the dispatch chains' pod IPs always count.
 */
function nodeLayout(config: DaemonConfig, parsed: Parsed, snapshot: ClusterSnapshot | undefined, report: InspectReport): NodeLayout {
  const fromNode = snapshot?.nodes.find((n) => n.name === config.nodeName)?.podCidrs ?? [];
  const podCidrs = config.podCidrs.length > 0 ? config.podCidrs : fromNode.length > 0 ? fromNode : report.failClosedCidrs;
  return {
    bridge: config.bridge,
    uplink: (parsed.values['uplink'] as string | undefined) ?? 'eth0',
    podCidrs,
    localIps: report.pods.map((p) => p.ip),
  };
}
