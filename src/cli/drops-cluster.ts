// `netfence drops --kubeconfig F` (what `kubectl netfence drops` runs): the denied connections recorded by
// the daemons on the nodes that matter — the pod's node for --pod, the nodes of the namespace's pods for
// --namespace (and --policy: its namespace), else every node — reached through the API server's pod proxy,
// merged in time order, each line naming its node.

import type { KubeConfig } from '@kubernetes/client-node';
import type { FlowRecord } from '../observe/flow-log.js';
import type { Io } from './command-specs.js';
import { configFrom, kubeConfigFrom, UsageError, type Parsed } from './context.js';
import { CommandFailure } from './options.js';
import { formatRecord } from './flow-record-text.js';
import { apiGet, podProxy } from '../commands/why-live.js';

export async function clusterDrops(parsed: Parsed, io: Io): Promise<number> {
  const v = parsed.values;
  if (v['follow'] === true) throw new UsageError('--follow reads one node (run it on that node); with --kubeconfig, drops prints once');
  const config = configFrom(parsed, false);
  const kubeConfig = await kubeConfigFrom(v['kubeconfig'] as string | undefined, v['context'] as string | undefined);
  const pod = v['pod'] as string | undefined;
  const namespace = (v['namespace'] as string | undefined) ?? (v['policy'] as string | undefined)?.split('/')[0];
  const nodes = await nodesThatMatter(kubeConfig, pod, namespace);
  const reach = podProxy(kubeConfig, (v['daemon-namespace'] as string | undefined) ?? 'kube-system', config);
  const query = new URLSearchParams();
  for (const key of ['pod', 'namespace', 'policy'] as const) if (typeof v[key] === 'string') query.set(key, v[key] as string);
  if (v['audit'] === true) query.set('audit', 'true');
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

interface PodDoc {
  readonly spec?: { readonly nodeName?: string };
}

/** The pod's node; else the nodes running the namespace's pods; else every node. Asked of the API directly, without listing the cluster. */
async function nodesThatMatter(kubeConfig: KubeConfig, pod: string | undefined, namespace: string | undefined): Promise<string[]> {
  const read = async <T>(path: string, what: string): Promise<T> => {
    let answer: { status: number; body: string };
    try {
      answer = await apiGet(kubeConfig, path);
    } catch (err) {
      // apiGet's message names the server and the reason (ECONNREFUSED, a timeout): one line, no stack.
      throw new CommandFailure(`cannot read ${what}: ${(err as Error).message}`);
    }
    const { status, body } = answer;
    if (status === 404 && pod !== undefined) throw new UsageError(`pod ${pod} is not in the cluster`);
    if (status !== 200) throw new UsageError(`reading ${what} from the API server: ${status} ${body.trim().slice(0, 200)}`);
    return JSON.parse(body) as T;
  };
  if (pod !== undefined) {
    const [ns, name] = pod.split('/');
    const node = (await read<PodDoc>(`/api/v1/namespaces/${ns}/pods/${name}`, `pod ${pod}`)).spec?.nodeName;
    if (node === undefined) throw new UsageError(`pod ${pod} is not on a node yet`);
    return [node];
  }
  if (namespace !== undefined) {
    const list = await read<{ items?: PodDoc[] }>(`/api/v1/namespaces/${namespace}/pods`, `the pods of ${namespace}`);
    return [...new Set((list.items ?? []).flatMap((p) => p.spec?.nodeName ?? []))].sort();
  }
  const list = await read<{ items?: { metadata?: { name?: string } }[] }>('/api/v1/nodes', 'the nodes');
  return (list.items ?? []).flatMap((n) => n.metadata?.name ?? []).sort();
}
