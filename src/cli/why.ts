// `netfence why`: one answer for a connection across the whole cluster. Reads the cluster (--resources,
// or the API through --kubeconfig/--context or the in-cluster configuration), compiles the ruleset of
// each node the packet crosses, in-process (no root, no kernel), and prints who decided on each side.
// With --live, each of those nodes' daemons is asked whether its kernel agrees. Exit 0 allowed, 1
// dropped, 2 error (a node --live cannot reach is an error, after the desired answer is printed).

import { incompleteRead } from '../cluster/manifests.js';
import { settingsPerNode } from '../config/node-settings.js';
import { createLogger } from '../log.js';
import type { IpFamily, L4Protocol } from '../model/index.js';
import { formatProblem } from '../model/index.js';
import { parseIp } from '../model/address.js';
import { EndpointError, formatAnswer, whyConnection, type Answer } from '../why/index.js';
import type { Io } from './command-specs.js';
import { configFrom, loadCluster, manifestLimits, parseCommand, UsageError, type Parsed } from './context.js';
import { terminalSafeJson } from '../commands/terminal-text.js';
import { formatLive, liveReport, reachFor } from './why-live.js';

const PROTOCOLS: readonly L4Protocol[] = ['tcp', 'udp', 'sctp'];
/** Time to list the cluster before giving up (exit 2). */
const API_TIMEOUT_MS = 15_000;

export async function whyCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('why', argv);
  const config = configFrom(parsed, false);
  const query = queryOf(parsed);
  const logger = createLogger({ level: 'error', format: 'text' });
  const cluster = await loadCluster(parsed, logger, manifestLimits(config), API_TIMEOUT_MS);
  const unread = incompleteRead(cluster.problems);
  if (unread.length > 0) {
    for (const p of cluster.problems) io.err(`${formatProblem(p)}\n`);
    io.err(`netfence why: ${unread.length} manifest error(s) above: the cluster was not read completely, so no answer is given\n`);
    return 2;
  }
  let answer: Answer;
  try {
    answer = whyConnection(cluster.snapshot, settingsPerNode(config, cluster.snapshot), query);
  } catch (err) {
    if (err instanceof EndpointError) throw new UsageError(err.message);
    throw err;
  }
  const json = parsed.values['json'] === true;
  const desiredCode = answer.verdict === 'allowed' ? 0 : 1;
  if (parsed.values['live'] !== true) {
    io.out(json ? `${JSON.stringify(answer, null, 2)}\n` : formatAnswer(answer));
    return desiredCode;
  }
  const live = await liveReport(answer, await reachFor(parsed, config));
  io.out(json ? `${terminalSafeJson({ ...answer, live }, 2)}\n` : `${formatAnswer(answer)}${formatLive(live)}`);
  const unreachable = live.nodes.filter((n) => n.error !== undefined);
  for (const n of unreachable) io.err(`netfence why --live: cannot reach the daemon on ${n.node}: ${n.error}\n`);
  return unreachable.length > 0 ? 2 : desiredCode;
}

function queryOf(parsed: Parsed) {
  const text = (flag: string): string | undefined => {
    const v = parsed.values[flag];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const src = text('src');
  const dstText = text('dst');
  if (src === undefined) throw new UsageError('--src is required');
  if (dstText === undefined) throw new UsageError('--dst is required');
  const { ref: dst, port: dstPort } = splitPort(dstText);
  const portText = text('port') ?? dstPort;
  if (portText === undefined) throw new UsageError('--port is required (or --dst NS/POD:PORT)');
  if (dstPort !== undefined && text('port') !== undefined && dstPort !== text('port'))
    throw new UsageError(`--dst says port ${dstPort}, --port says ${text('port')}`);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new UsageError(`--port must be a port number 1-65535, not "${portText}"`);
  const protoText = (text('proto') ?? 'tcp').toLowerCase();
  const proto = PROTOCOLS.find((p) => p === protoText);
  if (!proto) throw new UsageError(`--proto must be tcp, udp or sctp, not "${protoText}" (ICMP: netfence trace on the node)`);
  const familyText = text('family');
  if (familyText !== undefined && familyText !== '4' && familyText !== '6')
    throw new UsageError(`--family must be 4 or 6, not "${familyText}"`);
  const family = familyText === undefined ? undefined : (Number(familyText) as IpFamily);
  return { src, dst, proto, port, ...(family !== undefined ? { family } : {}) };
}

/** `ns/pod:5432`, `10.0.0.1:80`, `[fd00::1]:80`; a bare IPv6 address keeps its colons. */
export function splitPort(text: string): { ref: string; port?: string } {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(text);
  if (bracketed) return { ref: bracketed[1]!, port: bracketed[2]! };
  if (parseIp(text)) return { ref: text };
  const m = /^(.*):(\d+)$/.exec(text);
  if (m && (parseIp(m[1]!)?.family === 4 || /^[^/\s:]+\/[^/\s:]+$/.test(m[1]!))) return { ref: m[1]!, port: m[2]! };
  return { ref: text };
}
