// `why --live`'s work: what the kernels of the nodes a connection crosses hold, from their daemons: /readyz
// (is the node in sync with the cluster?) and /flows (did it drop this connection?), held against the
// desired answer; and, when the desired answer names a `domainNames` rule a lookup would open, /learned on the
// source pod's node (has its DNS agent learned the destination, for which name, until when?). A daemon is reached directly at its URL, or through the API server's pod proxy to the
// netfence pod on that node; the DaemonSet is hostNetwork, so that needs the daemon listening on the node's
// address (listenAddress), not the loopback default.

import type { KubeConfig } from '@kubernetes/client-node';
import { parseListenAddress } from '../config/listen-address.js';
import type { DaemonConfig } from '../config/schema.js';
import type { FlowRecord } from '../observe/flow-log.js';
import type { LearnedMemberAnswer } from '../observe/learned-answer.js';
import { learnedText } from '../trace/index.js';
import type { Answer } from '../why/index.js';
import { FlowsAnswerError, MAX_FLOWS_BODY_BYTES, parseFlowsAnswer, parseLearnedAnswer, readBoundedBody } from './flows-answer.js';
import { terminalSafe } from './terminal-text.js';

/** One GET on a node's daemon: the status and body, or a thrown error saying why it could not be asked. */
export interface DaemonReach {
  get(node: string, path: string): Promise<{ readonly status: number; readonly body: string }>;
}

export interface NodeLive {
  readonly node: string;
  /** Why the daemon could not be asked (the answer's desired part still stands). */
  readonly error?: string;
  readonly ready?: { readonly ok: boolean; readonly text: string };
  /** Drops of this connection the daemon recorded. */
  readonly drops?: readonly FlowRecord[];
  /** What the source pod's DNS agent learned for the destination, when a `domainNames` rule would allow it. */
  readonly learned?: NodeLearned;
  /** Where the kernel and the desired answer part ways (or may: the node is not in sync). */
  readonly disagreements: readonly string[];
  readonly notes: readonly string[];
}

export interface NodeLearned {
  readonly pod: string;
  readonly address: string;
  /** The members the daemon read from its kernel's learned sets (absent: it could not say). */
  readonly entries?: readonly LearnedMemberAnswer[];
  /** `allowed: 198.51.100.10 learned for good.example from x/a's lookup at 12:00:01, until 12:01:01`, or why not. */
  readonly text: readonly string[];
}

export interface LiveReport {
  readonly nodes: readonly NodeLive[];
}

const TIMEOUT_MS = 5000;

export async function liveReport(answer: Answer, reach: DaemonReach): Promise<LiveReport> {
  const nodes = [...new Set(answer.sides.filter((s) => s.verdict === 'allowed' || s.verdict === 'dropped').map((s) => s.node))];
  return { nodes: await Promise.all(nodes.map((node) => nodeLive(answer, node, reach))) };
}

async function nodeLive(answer: Answer, node: string, reach: DaemonReach): Promise<NodeLive> {
  const { src, dst, proto, port } = answer.connection;
  const sides = answer.sides.filter((s) => s.node === node && (s.verdict === 'allowed' || s.verdict === 'dropped'));
  // Ask for the flows of the pod on this node (either end; the daemon filters, the tuple is matched here).
  const local = src.kind === 'pod' && src.node === node ? src.pod : dst.kind === 'pod' && dst.node === node ? dst.pod : undefined;
  // A `domainNames` rule would allow the egress once the source pod looks a name up: what is learned lives here.
  const learner = sides.some((s) => s.direction === 'egress' && s.afterLookup !== undefined) && src.kind === 'pod' ? src.pod : undefined;
  const learnedPath = learner && `/learned?${new URLSearchParams({ pod: learner, address: dst.ip }).toString()}`;
  let readyz: { status: number; body: string };
  let flows: { status: number; body: string };
  let learnedAnswer: { status: number; body: string } | undefined;
  try {
    [readyz, flows, learnedAnswer] = await Promise.all([
      reach.get(node, '/readyz'),
      reach.get(node, `/flows${local ? `?pod=${encodeURIComponent(local)}` : ''}`),
      learnedPath ? reach.get(node, learnedPath) : undefined,
    ]);
  } catch (err) {
    // The message may quote the daemon's (or a proxy's) answer: shown, so made terminal-safe here.
    return { node, error: terminalSafe((err as Error).message), disagreements: [], notes: [] };
  }
  // Whatever answers on the daemon's port is untrusted (as for `netfence drops`): its text is shown escaped.
  const ready = { ok: readyz.status === 200, text: terminalSafe(readyz.body.trim().slice(0, 300)) };
  const disagreements: string[] = [];
  const notes: string[] = [];
  if (!ready.ok)
    disagreements.push(`${node} is not in sync (/readyz ${readyz.status}: ${ready.text}): its kernel may not hold the desired rules yet`);
  let drops: FlowRecord[] = [];
  if (flows.status === 200) {
    let records: FlowRecord[];
    try {
      records = parseFlowsAnswer(flows.body, `${node} /flows`);
    } catch (err) {
      return { node, error: (err as Error).message, ready, disagreements, notes };
    }
    drops = records.filter(
      (r) => r.src.ip === src.ip && r.dst.ip === dst.ip && r.protocol === proto && r.port === port && r.reason !== 'allowed',
    );
  } else notes.push(`no flow log from ${node} (/flows ${flows.status}: ${terminalSafe(flows.body.trim().slice(0, 300))})`);
  for (const side of sides) {
    const seen = drops.filter((r) => r.direction === side.direction);
    const last = seen[seen.length - 1];
    const when = last ? `${new Date(last.lastSeen).toISOString()}${last.count > 1 ? ` (×${last.count})` : ''}` : '';
    if (side.verdict === 'allowed' && last)
      disagreements.push(
        `${node}'s kernel dropped this connection (${side.direction}) at ${when} though the desired rules allow it: ${terminalSafe(last.because)}`,
      );
    else if (side.verdict === 'dropped')
      notes.push(
        last
          ? `${node}'s kernel dropped it too (${side.direction}, last at ${when})`
          : `${node} recorded no drop of it (${side.direction}): not tried lately, or flow logs are off`,
      );
  }
  let learned: NodeLearned | undefined;
  if (learner && learnedAnswer) {
    try {
      learned = learnedOf(node, learner, dst.ip, learnedAnswer);
    } catch (err) {
      return { node, error: (err as Error).message, ready, drops, disagreements, notes };
    }
  }
  return { node, ready, drops, ...(learned ? { learned } : {}), disagreements, notes };
}

function learnedOf(node: string, pod: string, address: string, got: { status: number; body: string }): NodeLearned {
  if (got.status !== 200)
    return {
      pod,
      address,
      text: [`${node} cannot say what it learned for ${pod} (/learned ${got.status}: ${terminalSafe(got.body.trim().slice(0, 300))})`],
    };
  const answer = parseLearnedAnswer(got.body, `${node} /learned`);
  const text =
    answer.learned.length > 0
      ? answer.learned.map(
          (e) =>
            `allowed: ${learnedText(
              {
                pod,
                address,
                ...(e.name !== undefined ? { name: terminalSafe(e.name.slice(0, 253)) } : {}),
                ...(e.learnedAt !== undefined ? { learnedAt: e.learnedAt } : {}),
                ...(e.remainingSeconds !== undefined ? { remainingSeconds: e.remainingSeconds } : {}),
              },
              answer.readAt,
            )}`,
        )
      : answer.sets === 0
        ? [`not learned on ${node}: its DNS agent has no domainNames rule for ${pod} (not in sync yet?)`]
        : [`not learned on ${node}: no lookup of those names seen`];
  return { pod, address, entries: answer.learned, text };
}

export async function direct(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    // Bounded as `netfence drops` reads it: an endless answer used to be read whole (400 MB took 1.36 GB).
    return { status: res.status, body: await readBoundedBody(res, url) };
  } catch (err) {
    if (err instanceof FlowsAnswerError) throw err;
    throw new Error(`${new URL(url).origin}: ${reasonOf(err)}`, { cause: err });
  }
}

/**
 * One authenticated GET on the kubeconfig's API server: status and body, whatever the status. `limit`
 * bounds the body read (the pod proxy's answers are a daemon's, untrusted, so bounded as `drops` bounds them).
 */
export async function apiGet(kubeConfig: KubeConfig, path: string, limit?: number): Promise<{ status: number; body: string }> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const init = await kubeConfig.applyToFetchOptions({});
  try {
    const res = await fetch(`${cluster.server}${path}`, { ...init, method: 'GET', signal: AbortSignal.timeout(TIMEOUT_MS) } as RequestInit);
    return {
      status: res.status,
      body: limit === undefined ? await res.text() : await readBoundedBody(res, `${cluster.server}${path}`, limit),
    };
  } catch (err) {
    if (err instanceof FlowsAnswerError) throw err;
    throw new Error(`the API server ${cluster.server}: ${reasonOf(err)}`, { cause: err });
  }
}

/** fetch's own message is "fetch failed"; the reason (connect ECONNREFUSED …) is its cause's, from whatever realm it was made in. */
function reasonOf(err: unknown): string {
  const e = err as { message?: unknown; cause?: { message?: unknown } };
  return typeof e.cause?.message === 'string' ? e.cause.message : String(e.message ?? err);
}

/**
 * The API server's proxy to the netfence pod on the node (`/api/v1/namespaces/NS/pods/POD:PORT/proxy/…`,
 * RBAC `pods/proxy` get). The API server dials the pod's IP, which for the hostNetwork DaemonSet is the
 * node's address: the daemon must listen there (listenAddress), and the port is listenAddress's.
 */
export function podProxy(kubeConfig: KubeConfig, namespace: string, config: Pick<DaemonConfig, 'listenAddress'>): DaemonReach {
  const port = parseListenAddress(config.listenAddress)?.port ?? 9476;
  const pods = new Map<string, Promise<string>>();
  const request = (path: string) => apiGet(kubeConfig, path, MAX_FLOWS_BODY_BYTES);
  const podOn = (node: string): Promise<string> => {
    let pod = pods.get(node);
    if (!pod) {
      const query = new URLSearchParams({ labelSelector: 'app.kubernetes.io/name=netfence', fieldSelector: `spec.nodeName=${node}` });
      pod = request(`/api/v1/namespaces/${namespace}/pods?${query.toString()}`).then(({ status, body }) => {
        if (status !== 200) throw new Error(`listing netfence pods in ${namespace}: ${status} ${body.trim().slice(0, 200)}`);
        const items = (JSON.parse(body) as { items?: { metadata?: { name?: string } }[] }).items ?? [];
        const name = items[0]?.metadata?.name;
        if (name === undefined)
          throw new Error(`no netfence pod (app.kubernetes.io/name=netfence) on it in ${namespace} (--daemon-namespace)`);
        return name;
      });
      pods.set(node, pod);
    }
    return pod;
  };
  return {
    async get(node, path) {
      const pod = await podOn(node);
      const answer = await request(`/api/v1/namespaces/${namespace}/pods/${pod}:${port}/proxy${path}`);
      // The proxy's own failure (the daemon listens on loopback only, or is down) is a Status, not the daemon's answer.
      if ((answer.status === 502 || answer.status === 503) && /error trying to reach|connection refused|dial tcp/.test(answer.body))
        throw new Error(
          `pod proxy to ${namespace}/${pod}:${port}: ${answer.body.trim().slice(0, 200)} (the daemon must listen on the node's address: listenAddress)`,
        );
      return answer;
    },
  };
}
