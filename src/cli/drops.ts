// `netfence drops`: the denied connections the running daemon on this node recorded, read from its
// /flows endpoint (the daemon holds the only NFLOG reader; this command never opens a second one).
// Dump once, or --follow for new ones; filter by pod, namespace or policy; human text or --json.

import type { DaemonConfig } from '../config/schema.js';
import { parseListenAddress } from '../config/listen-address.js';
import { parseFlowsQuery } from '../observe/flows-query.js';
import type { Io } from './command-specs.js';
import { configFrom, parseCommand, UsageError } from './context.js';
import { fetchFlows } from '../commands/flows-answer.js';
import { formatRecord } from './flow-record-text.js';
import { terminalSafeJson } from '../commands/terminal-text.js';

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

function sigintSignal(): AbortSignal {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  return controller.signal;
}
