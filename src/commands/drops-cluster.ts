// `drops --kubeconfig F`'s work: the nodes that matter (the pod's node for --pod, the nodes of the namespace's
// pods for --namespace, else every node), each one's daemon asked for its /flows through the API server's
// pod proxy, and the records merged in time order, each with its node.

import type { KubeConfig } from '@kubernetes/client-node';
import type { DaemonConfig } from '../config/schema.js';
import type { FlowRecord } from '../observe/flow-log.js';
import { CommandFailure, UsageError } from './errors.js';
import { parseFlowsAnswer } from './flows-answer.js';
import { terminalSafe } from './terminal-text.js';
import { apiGet, podProxy } from './why-live.js';

export interface ClusterFlowsRequest {
  readonly pod: string | undefined;
  readonly namespace: string | undefined;
  /** The /flows query (pod, namespace, policy, audit). */
  readonly query: URLSearchParams;
  /** Where the netfence pods run. */
  readonly daemonNamespace: string;
  readonly config: Pick<DaemonConfig, 'listenAddress'>;
}

export interface ClusterFlows {
  readonly nodes: readonly string[];
  /** Per node: its records, or why they could not be read. */
  readonly results: readonly { readonly node: string; readonly error?: string; readonly records: readonly FlowRecord[] }[];
  /** Every node's records, oldest first. */
  readonly records: readonly { readonly node: string; readonly record: FlowRecord }[];
}

export async function clusterFlows(kubeConfig: KubeConfig, request: ClusterFlowsRequest): Promise<ClusterFlows> {
  const { pod, namespace, query } = request;
  const nodes = await nodesThatMatter(kubeConfig, pod, namespace);
  const reach = podProxy(kubeConfig, request.daemonNamespace, request.config);
  const results = await Promise.all(
    nodes.map(async (node) => {
      try {
        const { status, body } = await reach.get(node, `/flows?${query.toString()}`);
        // A daemon's answer is untrusted (anything on its port, or a proxy between): quoted made safe, and read
        // as `netfence drops` reads one node's, checked as a flow list.
        if (status !== 200) return { node, error: `answered ${status}: ${terminalSafe(body.trim().slice(0, 200))}`, records: [] };
        return { node, records: parseFlowsAnswer(body, `${node} /flows`) };
      } catch (err) {
        return { node, error: terminalSafe((err as Error).message), records: [] };
      }
    }),
  );
  const records = results
    .flatMap((r) => r.records.map((record) => ({ node: r.node, record })))
    .sort((a, b) => a.record.time - b.record.time);
  return { nodes, results, records };
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
