// One sandbox cluster holding the e2e model, programmed by netfence the way an operator would: write
// the manifests, run `netfence apply --netns <node> …` for every node, then probe with real packets.
// A case changes the cluster through this driver (policies, labels, pods) and calls apply() again.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { run } from '../../../src/dataplane/exec.js';
import { loadManifests } from '../../../src/cluster/manifests.js';
import { defaultNodeSettings, type ClusterSnapshot, type Protocol } from '../../../src/model/index.js';
import type { WhyCheckOptions } from '../why-cross-check.js';
import {
  createSandbox,
  formatMatrix,
  waitForMatrix,
  wrongCells,
  type Matrix,
  type Sandbox,
  type WaitForMatrixResult,
} from '../../../sandbox/index.js';
import { BASE_STATE, writeManifests, type ClusterState, type PolicyDoc } from './manifests.js';
import { MODEL_PODS, NODES, nodePodCidr, type ContainerPortSpec, type Family, type Labels, type ModelPod } from './model.js';
import { startModelServices, type ModelServices } from './services.js';
import type { KubeProxyMode } from '../../../sandbox/kube-proxy/index.js';

export interface ConformanceOptions {
  /**
   * Run kube-proxy in this mode on every node, give every model pod a ClusterIP Service (plus NodePorts
   * in front of x/a and an external client), and probe ClusterIPs instead of pod IPs.
   */
  readonly kubeProxy?: KubeProxyMode;
  /**
   * 6: build the sandbox dual-stack (flannel's EnableIPv6 layout), list each pod's IPv6 address first,
   * program both pod CIDRs, and probe every matrix over IPv6 with every pod's neighbour cache flushed
   * before each probe round, so neighbour discovery runs through the policies every time. Default 4.
   */
  readonly family?: Family;
}

export interface Probe {
  readonly protocol: Protocol;
  readonly port: number;
}

export interface CheckOutcome {
  readonly ok: boolean;
  /** The last probe round's matrix. */
  readonly observed: Matrix;
  /** The e2e diff view of the last probe round (wrong cells starred) plus why wrong cells failed. */
  readonly report: string;
}

/** How long a matrix may take to converge after an apply; a blocked probe costs 400 ms of it. */
const DEADLINE_MS = 3000;
const PROBE_TIMEOUT_MS = 400;

export class ConformanceCluster {
  private state: ClusterState = BASE_STATE;
  /** Stderr of every apply since the last reset, for failure reports. */
  readonly applyLog: string[] = [];

  private constructor(
    readonly sandbox: Sandbox,
    private readonly dir: string,
    /** Present when the cluster runs kube-proxy (ConformanceOptions.kubeProxy): checks then probe ClusterIPs. */
    readonly services?: ModelServices,
    readonly family: Family = 4,
  ) {}

  static async create(options: ConformanceOptions = {}): Promise<ConformanceCluster> {
    const family = options.family ?? 4;
    const sandbox = await createSandbox({ nodes: NODES, ...(family === 6 ? { ipv6: {} } : {}) });
    const cluster = new ConformanceCluster(sandbox, mkdtempSync(join(tmpdir(), 'nft-conformance-')), undefined, family);
    let services: ModelServices | undefined;
    try {
      await Promise.all(MODEL_PODS.map((p) => cluster.addModelPod(p)));
      if (options.kubeProxy) services = await startModelServices(sandbox, options.kubeProxy, family);
    } catch (err) {
      await cluster.destroy();
      throw err;
    }
    return services ? new ConformanceCluster(sandbox, cluster.dir, services, family) : cluster;
  }

  /** A model pod in the sandbox: its fixed IPv4 slot, and on an IPv6 run its IPv6 twin listed first. */
  private addModelPod(p: {
    readonly namespace: string;
    readonly name: string;
    readonly node: string;
    readonly ip: string;
  }): Promise<unknown> {
    return this.sandbox.addPod({
      namespace: p.namespace,
      name: p.name,
      node: p.node,
      ip: p.ip,
      ...(this.family === 6 ? { families: [6, 4] as const } : {}),
    });
  }

  get current(): ClusterState {
    return this.state;
  }

  /** The current state as netfence's manifest loader reads it (for the oracle cross-check). */
  snapshot(): ClusterSnapshot {
    return loadManifests([writeManifests(this.dir, this.state, this.family)]).snapshot;
  }

  setPolicies(policies: readonly PolicyDoc[]): void {
    this.state = { ...this.state, policies };
  }

  /** Creates or replaces (same namespace and name: an update) each policy. */
  putPolicies(...policies: readonly PolicyDoc[]): void {
    const same = (a: PolicyDoc, b: PolicyDoc) => a.metadata.namespace === b.metadata.namespace && a.metadata.name === b.metadata.name;
    this.setPolicies([...this.state.policies.filter((p) => !policies.some((q) => same(p, q))), ...policies]);
  }

  deletePolicy(namespace: string, name: string): void {
    const left = this.state.policies.filter((p) => p.metadata.namespace !== namespace || p.metadata.name !== name);
    if (left.length === this.state.policies.length) throw new Error(`no policy ${namespace}/${name} to delete`);
    this.setPolicies(left);
  }

  /** Replaces a pod's labels (a relabel as `kubectl label --overwrite` plus removals would do). */
  setPodLabels(key: string, labels: Labels): void {
    this.updatePod(key, (p) => ({ ...p, labels }));
  }

  setPodPorts(key: string, ports: readonly ContainerPortSpec[]): void {
    this.updatePod(key, (p) => ({ ...p, ports }));
  }

  setNamespaceLabels(namespace: string, labels: Labels): void {
    if (!this.state.namespaces[namespace]) throw new Error(`no namespace ${namespace}`);
    this.state = { ...this.state, namespaces: { ...this.state.namespaces, [namespace]: labels } };
  }

  /**
   * Deletes a pod and starts another one on the same node with the same IP (a new namespace, name and
   * labels are the caller's): what happens when an IP is recycled by the CNI.
   */
  async replacePod(
    oldKey: string,
    next: { readonly namespace: string; readonly name: string; readonly labels: Labels },
  ): Promise<ModelPod> {
    const old = this.pod(oldKey);
    if (!this.state.namespaces[next.namespace]) throw new Error(`no namespace ${next.namespace}`);
    await this.sandbox.removePod(oldKey);
    await this.addModelPod({ namespace: next.namespace, name: next.name, node: old.node, ip: old.ip });
    const pod: ModelPod = {
      ...old,
      namespace: next.namespace,
      name: next.name,
      key: `${next.namespace}/${next.name}`,
      labels: next.labels,
    };
    this.state = { ...this.state, pods: this.state.pods.map((p) => (p.key === oldKey ? pod : p)) };
    return pod;
  }

  /** Programs every node from the current state, as `netfence apply` run on each node would. */
  async apply(): Promise<void> {
    const file = writeManifests(this.dir, this.state, this.family);
    await Promise.all(
      this.sandbox.nodes().map(async (node) => {
        const cidrs = this.family === 6 ? [node.podCidr, nodePodCidr(node.name, 6)] : [node.podCidr];
        const argv = [
          'apply',
          '--netns',
          node.netns,
          '--node-name',
          node.name,
          ...cidrs.flatMap((c) => ['--pod-cidr', c]),
          '--log-level',
          'error',
          '--resources',
          file,
        ];
        const { code, err } = await runCli(argv);
        this.applyLog.push(`[${node.name}] ${err.trim()}`);
        // Every manifest here is valid: a reported problem is netfence rejecting something it must accept.
        const problems = err.split('\n').filter((l) => l.trim() !== '' && !/^(applied|in sync):/.test(l));
        if (code !== 0 || problems.length > 0) throw new Error(`netfence apply on ${node.name} exited ${code}:\n${err}`);
      }),
    );
  }

  /** Probes until the matrix matches `expected` (deadline ~3 s); the report is the diff view. */
  async check(expected: Matrix, probe: Probe): Promise<CheckOutcome> {
    const target = this.services ? this.services.viaClusterIp(this.sandbox) : this.sandbox;
    const v6 = this.family === 6 ? { family: 6 as const, beforeRound: () => this.coldNeighbours() } : {};
    const result = await waitForMatrix(target, expected, { ...probe, deadlineMs: DEADLINE_MS, timeoutMs: PROBE_TIMEOUT_MS, ...v6 });
    const v6Note = this.family === 6 ? 'over IPv6, neighbour caches flushed before each round: ' : '';
    const via = (this.services ? `via ClusterIP (kube-proxy ${this.services.proxy.mode} mode): ` : '') + v6Note;
    return { ok: result.ok, observed: result.observed, report: via + report(result, probe) };
  }

  /** What `netfence why` needs to judge this cluster the way `apply` programmed it, and where each node's kernel is. */
  whyOptions(): WhyCheckOptions {
    const cidrs = (node: string) => (this.family === 6 ? [nodePodCidr(node, 4), nodePodCidr(node, 6)] : [nodePodCidr(node, 4)]);
    return {
      family: this.family,
      nodes: this.sandbox.nodes().map((n) => ({
        name: n.name,
        netns: n.netns,
        addresses: this.family === 6 && n.ipv6 ? [n.ipv6.underlayIp, n.underlayIp] : [n.underlayIp],
        podCidrs: cidrs(n.name),
      })),
      settingsFor: (node) => defaultNodeSettings(node, cidrs(node)),
    };
  }

  /** Every pod forgets its IPv6 neighbours: the next packet to a same-node peer needs ND again. */
  async coldNeighbours(): Promise<void> {
    await Promise.all(this.sandbox.pods().map((p) => run('ip', ['-6', 'neigh', 'flush', 'all'], { netns: p.netns })));
  }

  /** Back to the bare model: original pods (re-created where a case replaced them), labels, no policies. */
  async reset(): Promise<void> {
    const wanted = new Map(MODEL_PODS.map((p) => [p.key, p]));
    for (const pod of this.sandbox.pods()) if (!wanted.has(pod.key)) await this.sandbox.removePod(pod.key);
    const present = new Set(this.sandbox.pods().map((p) => p.key));
    for (const p of MODEL_PODS) {
      if (!present.has(p.key)) await this.addModelPod(p);
    }
    this.state = BASE_STATE;
    this.applyLog.length = 0;
    await this.apply();
  }

  /** Removes netfence's state from every node (`netfence cleanup`), then the sandbox and the manifests. */
  async destroy(): Promise<void> {
    try {
      for (const node of this.sandbox.nodes()) await runCli(['cleanup', '--netns', node.netns, '--log-level', 'error']);
      await this.services?.proxy.stop();
    } finally {
      await this.sandbox.destroy();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private pod(key: string): ModelPod {
    const pod = this.state.pods.find((p) => p.key === key);
    if (!pod) throw new Error(`no pod ${key} in the cluster`);
    return pod;
  }

  private updatePod(key: string, change: (p: ModelPod) => ModelPod): void {
    this.pod(key);
    this.state = { ...this.state, pods: this.state.pods.map((p) => (p.key === key ? change(p) : p)) };
  }
}

async function runCli(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

function report(result: WaitForMatrixResult, probe: Probe): string {
  const head = `${probe.protocol}/${probe.port} after ${result.rounds} round(s)`;
  const table = formatMatrix(result.observed, { expected: result.expected, indent: '  ' });
  const why = wrongCells(result.expected, result.observed).map((w) => {
    const error = result.observed.errors[`${w.from} -> ${w.to}`];
    return `  ${w.from} -> ${w.to}: expected ${w.expected ? 'reachable' : 'blocked'}, observed ${w.observed ? 'reachable' : `blocked (${error ?? '?'})`}`;
  });
  return [head, table, ...why].join('\n');
}
