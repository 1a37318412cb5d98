// `netfence trace`: walk one new packet through the live (or saved) ruleset and say who decided it.
// Pod names resolve through --resources manifests or the API (--kubeconfig, in-cluster), or, for local
// pods, through our own rule comments. Exit 0 allowed, 1 dropped, 2 error.

import { loadManifests } from '../cluster/manifests.js';
import { antiSpoofAlone, traceNode, type Endpoint, type Payload, type Traced } from '../commands/trace.js';
import { createLogger } from '../log.js';
import { parseIp, type ClusterSnapshot, type IpFamily, type L4Protocol, type ManifestLimits } from '../model/index.js';
import { formatTrace, isLocal, RulesetError, wrap, type TraceResult } from '../trace/index.js';
import type { Io } from './command-specs.js';
import { configFrom, loadCluster, manifestLimits, parseCommand, resourcePaths, UsageError, type Parsed } from './context.js';
import { familyFlag, rulesetReader, withRulesetErrors } from './inspect.js';

const PROTOCOLS: readonly L4Protocol[] = ['tcp', 'udp', 'sctp'];
/** ICMP protocols and the family each implies (`ipv6-icmp` is how iptables names ICMPv6). */
const ICMP_PROTOCOLS: Readonly<Record<string, IpFamily>> = { icmp: 4, icmpv6: 6, 'ipv6-icmp': 6 };

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
  const inPort = parsed.values['in-iface'] as string | undefined;
  const reader = rulesetReader(parsed, config);
  return withRulesetErrors('trace', io, async () => {
    let traced: Traced;
    try {
      traced = await traceNode(reader, {
        config,
        snapshot,
        src: srcRef,
        dst: dstRef,
        payload,
        family: flag,
        uplink: parsed.values['uplink'] as string | undefined,
        toNode: parsed.values['to-node'] === true,
        inPort,
      });
    } catch (err) {
      // No chains of the packet's family here (e.g. an IPv6 source on an IPv4-only node): the bridge
      // table still judges the frame, whatever FORWARD would do with it.
      const alone = inPort !== undefined && err instanceof RulesetError ? await antiSpoofAlone(reader, inPort, srcRef, flag) : undefined;
      if (alone === undefined) throw err;
      return printAntiSpoofAlone(parsed, io, inPort!, srcRef, alone, err as RulesetError);
    }
    const { family, loaded, src, dst, otherToo, layout, toNode, packet, result, established, antiSpoof } = traced;
    const { ruleset, source } = loaded;
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
function printAntiSpoofAlone(
  parsed: Parsed,
  io: Io,
  inPort: string,
  srcRef: string,
  { family, antiSpoof }: NonNullable<Awaited<ReturnType<typeof antiSpoofAlone>>>,
  err: RulesetError,
): number {
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
