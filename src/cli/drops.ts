// `netfence drops`: the denied connections the running daemon on this node recorded, read from its
// /flows endpoint (the daemon holds the only NFLOG reader; this command never opens a second one).
// Dump once, or --follow for new ones; filter by pod, namespace or policy; human text or --json.

import type { DaemonConfig } from '../config/schema.js';
import { parseListenAddress } from '../config/listen-address.js';
import type { FlowRecord } from '../observe/flow-log.js';
import { parseFlowsQuery } from '../observe/flows-query.js';
import type { Io } from './command-specs.js';
import { configFrom, parseCommand, UsageError } from './context.js';
import { CommandFailure } from './options.js';
import { FlowsAnswerError, parseFlowsAnswer, readBoundedBody } from './flows-answer.js';
import { formatRecord } from './flow-record-text.js';
import { terminalSafe, terminalSafeJson } from './terminal-text.js';

const FOLLOW_INTERVAL_MS = 1000;

export async function dropsCommand(argv: readonly string[], io: Io, signal?: AbortSignal): Promise<number> {
  const parsed = parseCommand('drops', argv);
  const v = parsed.values;
  const query = new URLSearchParams();
  for (const key of ['pod', 'namespace', 'policy'] as const) if (typeof v[key] === 'string') query.set(key, v[key] as string);
  if (v['audit'] === true) query.set('audit', 'true');
  // The daemon's own check, so a filter it would refuse is refused here, before anything is asked.
  const checked = parseFlowsQuery(query);
  if ('error' in checked) throw new UsageError(`--${checked.error}`);
  // Through the API server: the daemons of the nodes that matter, not this node's.
  if (v['kubeconfig'] !== undefined || v['context'] !== undefined) return (await import('./drops-cluster.js')).clusterDrops(parsed, io);
  const base = typeof v['url'] === 'string' ? v['url'].replace(/\/$/, '') : daemonUrl(configFrom(parsed, false));
  const json = v['json'] === true;

  let since = 0;
  const once = async (): Promise<void> => {
    if (since > 0) query.set('since', String(since));
    const records = await fetchFlows(`${base}/flows?${query.toString()}`);
    for (const r of records) {
      since = Math.max(since, r.seq);
      io.out(json ? `${terminalSafeJson(r)}\n` : formatRecord(r));
    }
    if (!json && records.length === 0 && v['follow'] !== true)
      io.out(v['audit'] === true ? 'no audited connections recorded\n' : 'no denied connections recorded\n');
  };
  await once();
  if (v['follow'] !== true) return 0;
  const stop = signal ?? sigintSignal();
  while (!stop.aborted) {
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS));
    if (!stop.aborted) await once();
  }
  return 0;
}

/** The daemon's observability address as this node's configuration names it; a wildcard host means loopback. */
export function daemonUrl(config: Pick<DaemonConfig, 'listenAddress'>): string {
  const addr = parseListenAddress(config.listenAddress);
  if (!addr) throw new UsageError(`listen address "${config.listenAddress}" is not host:port; pass --url`);
  const host =
    addr.host === '' || addr.host === '0.0.0.0'
      ? '127.0.0.1'
      : addr.host === '::'
        ? '[::1]'
        : addr.host.includes(':')
          ? `[${addr.host}]`
          : addr.host;
  return `http://${host}:${addr.port}`;
}

/** The records the daemon at `url` answered; errors say what was wrong with the answer and where. */
async function fetchFlows(url: string): Promise<FlowRecord[]> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  } catch (err) {
    throw new CommandFailure(
      `cannot reach the netfence daemon at ${new URL(url).origin} (${describeCause(err)}); is it running on this node? (--url)`,
    );
  }
  const body = await readBoundedBody(res, url);
  if (res.status !== 200) {
    // Enough of the answer to say why (the daemon's are one line), never the whole of a hostile one.
    const said = terminalSafe(body.trim().slice(0, 300));
    throw new FlowsAnswerError(`the daemon at ${url} answered ${res.status}: ${said}`);
  }
  return parseFlowsAnswer(body, url);
}

function sigintSignal(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  return controller.signal;
}

/** fetch's own message is "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND) is its cause. */
function describeCause(err: unknown): string {
  // Not `instanceof Error`: the cause may come from another realm.
  const e = err as { message?: unknown; cause?: { name?: unknown; message?: unknown } };
  return typeof e.cause?.message === 'string' ? `${String(e.cause.name ?? 'Error')}: ${e.cause.message}` : String(e.message ?? err);
}
