// `netfence drops --kubeconfig F` (what `kubectl netfence drops` runs): the denied connections recorded by
// the daemons on the nodes that matter — the pod's node for --pod, the nodes of the namespace's pods for
// --namespace, the nodes of the policy's namespace for --policy, else every node — reached through the
// API server's pod proxy, merged in time order, each line naming its node.

import { podKey } from '../model/index.js';
import type { FlowRecord } from '../observe/flow-log.js';
import type { Io } from './commands.js';
import { configFrom, kubeConfigFrom, loadCluster, UsageError, type Parsed } from './context.js';
import { formatRecord } from './drops.js';
import { createLogger } from '../log.js';
import { podProxy } from './why-live.js';

const API_TIMEOUT_MS = 15_000;

export async function clusterDrops(parsed: Parsed, io: Io): Promise<number> {
  const v = parsed.values;
  if (v['follow'] === true) throw new UsageError('--follow reads one node (run it on that node); with --kubeconfig, drops prints once');
  const config = configFrom(parsed, false);
  const { snapshot } = await loadCluster(parsed, createLogger({ level: 'error', format: 'text' }), API_TIMEOUT_MS);
  const pod = v['pod'] as string | undefined;
  const namespace = (v['namespace'] as string | undefined) ?? (v['policy'] as string | undefined)?.split('/')[0];
  const on = (keep: (p: (typeof snapshot.pods)[number]) => boolean) => [...new Set(snapshot.pods.filter(keep).map((p) => p.nodeName))];
  const nodes =
    pod !== undefined
      ? on((p) => podKey(p) === pod)
      : namespace !== undefined
        ? on((p) => p.namespace === namespace)
        : snapshot.nodes.map((n) => n.name);
  if (pod !== undefined && nodes.length === 0) throw new UsageError(`pod ${pod} is not in the cluster`);
  const kubeConfig = await kubeConfigFrom(v['kubeconfig'] as string | undefined, v['context'] as string | undefined);
  const reach = podProxy(kubeConfig, (v['daemon-namespace'] as string | undefined) ?? 'kube-system', config);
  const query = new URLSearchParams();
  for (const key of ['pod', 'namespace', 'policy'] as const) if (typeof v[key] === 'string') query.set(key, v[key] as string);
  const results = await Promise.all(
    nodes.map(async (node) => {
      try {
        const { status, body } = await reach.get(node, `/flows?${query.toString()}`);
        if (status !== 200) return { node, error: `answered ${status}: ${body.trim().slice(0, 200)}`, records: [] };
        return { node, records: (JSON.parse(body) as { records?: FlowRecord[] }).records ?? [] };
      } catch (err) {
        return { node, error: (err as Error).message, records: [] };
      }
    }),
  );
  const records = results
    .flatMap((r) => r.records.map((record) => ({ node: r.node, record })))
    .sort((a, b) => a.record.time - b.record.time);
  const json = v['json'] === true;
  for (const { node, record } of records) io.out(json ? `${JSON.stringify({ node, ...record })}\n` : `[${node}] ${formatRecord(record)}`);
  if (!json && records.length === 0) io.out(`no denied connections recorded on ${nodes.join(', ') || 'any node'}\n`);
  const failed = results.filter((r) => r.error !== undefined);
  for (const f of failed) io.err(`netfence drops: cannot read the flow log of ${f.node}: ${f.error}\n`);
  return failed.length > 0 ? 2 : 0;
}
