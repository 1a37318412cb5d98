// `netfence drops --kubeconfig F` (what `kubectl netfence drops` runs): the denied connections recorded by
// the daemons on the nodes that matter — the pod's node for --pod, the nodes of the namespace's pods for
// --namespace (and --policy: its namespace), else every node — reached through the API server's pod proxy,
// merged in time order, each line naming its node.

import { clusterFlows } from '../commands/drops-cluster.js';
import type { Io } from './command-specs.js';
import { configFrom, kubeConfigFrom, UsageError, type Parsed } from './context.js';
import { terminalSafeJson } from '../commands/terminal-text.js';
import { formatRecord } from './flow-record-text.js';

export async function clusterDrops(parsed: Parsed, io: Io): Promise<number> {
  const v = parsed.values;
  if (v['follow'] === true) throw new UsageError('--follow reads one node (run it on that node); with --kubeconfig, drops prints once');
  const config = configFrom(parsed, false);
  const kubeConfig = await kubeConfigFrom(v['kubeconfig'] as string | undefined, v['context'] as string | undefined);
  const pod = v['pod'] as string | undefined;
  const namespace = (v['namespace'] as string | undefined) ?? (v['policy'] as string | undefined)?.split('/')[0];
  const query = new URLSearchParams();
  for (const key of ['pod', 'namespace', 'policy'] as const) if (typeof v[key] === 'string') query.set(key, v[key] as string);
  if (v['audit'] === true) query.set('audit', 'true');
  const { nodes, results, records } = await clusterFlows(kubeConfig, {
    pod,
    namespace,
    query,
    daemonNamespace: (v['daemon-namespace'] as string | undefined) ?? 'kube-system',
    config,
  });
  const json = v['json'] === true;
  for (const { node, record } of records) io.out(json ? `${terminalSafeJson({ node, ...record })}\n` : `[${node}] ${formatRecord(record)}`);
  if (!json && records.length === 0) io.out(`no denied connections recorded on ${nodes.join(', ') || 'any node'}\n`);
  const failed = results.filter((r) => r.error !== undefined);
  for (const f of failed) io.err(`netfence drops: cannot read the flow log of ${f.node}: ${f.error}\n`);
  return failed.length > 0 ? 2 : 0;
}
