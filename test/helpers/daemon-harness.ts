// Runs netfence daemons in-process against sandbox nodes, and builds the Kubernetes objects that
// describe a sandbox (Nodes with their pod CIDR, Namespaces, Pods with the sandbox's IPs) for the
// fake API server or for manifest files.
//
// In-process (startDaemon with `netns`) rather than `ip netns exec … netfence daemon`: the daemon's
// own process stays in the root namespace, so it reaches the fake API server on 127.0.0.1 and its
// /readyz and /metrics are on 127.0.0.1 too, while every kernel command it runs goes into the node.

import { Writable } from 'node:stream';
import { startDaemon, type RunningDaemon } from '../../src/daemon/start.js';
import { loadConfig } from '../../src/config/load.js';
import { run } from '../../src/dataplane/exec.js';
import { createLogger } from '../../src/log.js';
import type { SandboxNode, SandboxPod } from '../../sandbox/index.js';
import type { KubeObject } from '../fakes/fake-apiserver.js';

export type Labels = Readonly<Record<string, string>>;

export type ClusterInput = { readonly kubeconfig: string } | { readonly resources: readonly string[] };

export interface NodeDaemon {
  readonly node: SandboxNode;
  readonly daemon: RunningDaemon;
  /** `http://127.0.0.1:<port>`, serving /healthz, /readyz, /metrics. */
  readonly url: string;
  /** Every log line the daemon wrote (JSON), for failure messages. */
  readonly logs: readonly string[];
  stop(): Promise<void>;
}

/**
 * Starts one daemon for the node; `flags` are extra config flags (`{ 'batch-window-ms': '10' }`).
 * `{ 'pod-cidr': [] }` leaves the pod CIDR to the Node object.
 */
export async function startNodeDaemon(
  node: SandboxNode,
  input: ClusterInput,
  flags: Readonly<Record<string, string | readonly string[]>> = {},
): Promise<NodeDaemon> {
  const { config } = loadConfig({
    argvFlags: {
      'node-name': node.name,
      'listen-address': '127.0.0.1:0',
      'pod-cidr': [node.podCidr],
      'log-level': 'debug',
      // No flannel lease on this shared filesystem: the node's CIDR comes from the flag above.
      'flannel-subnet-env': '/nonexistent/netfence-test/subnet.env',
      ...flags,
    },
    env: {},
  });
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  const daemon = await startDaemon(config, {
    resources: 'resources' in input ? input.resources : [],
    kubeconfig: 'kubeconfig' in input ? input.kubeconfig : undefined,
    netns: node.netns,
    logger: createLogger({ level: 'debug', format: 'json', stream }),
  });
  let stopped = false;
  return {
    node,
    daemon,
    url: `http://127.0.0.1:${daemon.listen.port}`,
    logs,
    async stop() {
      if (stopped) return;
      stopped = true;
      await daemon.stop();
    },
  };
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: string;
}

export async function httpGet(url: string): Promise<HttpAnswer> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.text() };
}

/** Polls `check` until it returns true; throws with `what` (and the last error) after `timeoutMs`. */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const waitReady = (d: NodeDaemon, timeoutMs = 15_000): Promise<void> =>
  waitUntil(`${d.node.name} /readyz 200`, async () => (await httpGet(`${d.url}/readyz`)).status === 200, timeoutMs);

/** One sample of a Prometheus text exposition, e.g. `netfence_ready` or `netfence_events_total{kind="pod"}`. */
export function metricValue(exposition: string, sample: string): number | undefined {
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (space > 0 && line.slice(0, space) === sample) return Number(line.slice(space + 1));
  }
  return undefined;
}

/** Sum of every sample of a metric whose name (before labels) is `name`. */
export function metricSum(exposition: string, name: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const key = line.slice(0, space);
    if (key === name || key.startsWith(`${name}{`)) sum += Number(line.slice(space + 1));
  }
  return sum;
}

/** The `nf-` chains iptables-save shows in the node (filter table). */
export async function ownedChains(netns: string, prefix = 'nf-'): Promise<string[]> {
  const saved = (await run('iptables-save', ['-t', 'filter'], { netns })).stdout;
  return saved
    .split('\n')
    .filter((l) => l.startsWith(`:${prefix}`))
    .map((l) => l.slice(1).split(' ')[0] ?? '');
}

// ---- Kubernetes objects describing a sandbox ---------------------------------------------------

export function nodeObject(node: SandboxNode): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: node.name },
    spec: { podCIDR: node.podCidr, podCIDRs: [node.podCidr] },
    status: { addresses: [{ type: 'InternalIP', address: node.underlayIp }] },
  };
}

export function namespaceObject(name: string, labels: Labels = {}): KubeObject {
  // kube-apiserver adds this label to every namespace; policies commonly select on it.
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } } };
}

export interface PodPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export function podObject(pod: SandboxPod, labels: Labels, ports: readonly PodPort[] = []): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod.name, namespace: pod.namespace, labels: { ...labels } },
    spec: {
      nodeName: pod.node,
      containers: [{ name: 'agent', image: 'sandbox-agent', ports: ports.map((p) => ({ protocol: 'TCP', ...p })) }],
    },
    status: { phase: 'Running', podIP: pod.ip, podIPs: [{ ip: pod.ip }] },
  };
}
