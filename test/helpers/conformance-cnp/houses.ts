// The network-policy-api conformance model (conformance/base/manifests.yaml) in the sandbox, beside the
// NetworkPolicy e2e model of test/helpers/conformance: namespaces network-policy-conformance-<house>
// labelled conformance-house=<house>, two pods per house (…-0 on node n1, …-1 on n2) serving the agnhost
// ports (TCP 80 and 8080, UDP 53 and 5353, SCTP 9003 and 9005; the sandbox agent serves every one of them
// on every protocol), and the hostNetwork "centaur" role played by each node's own agent (`node:n1`,
// `node:n2`, on the node's address, also serving upstream's eight HostNetworkPorts). netfence programs it with `netfence apply --resources` per node.
//
// Family 6 builds the same houses dual-stack with IPv6 listed first, as an IPv6 cluster's objects read
// upstream: every pod's `status.podIP` and every node's first InternalIP are IPv6, so the pokes (which
// target podIP, and the centaurs' podIP = their node's IP) and the inline-CIDR rule (`/128`, upstream's
// mask for a non-IPv4 podIP) are IPv6. Probes go to IPv6 addresses with every pod's neighbour cache
// flushed before each round, so each poke resolves its peer with ND through the policy.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { loadManifests } from '../../../src/cluster/manifests.js';
import type { ClusterSnapshot, Protocol } from '../../../src/model/index.js';
import { run } from '../../../src/dataplane/exec.js';
import { createSandbox, matrixOf, waitForMatrix, type Sandbox } from '../../../sandbox/index.js';

export type HouseFamily = 4 | 6;

export const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
] as const;

export const HOUSES = ['gryffindor', 'slytherin', 'hufflepuff', 'ravenclaw', 'forbidden-forrest'] as const;
export type House = (typeof HOUSES)[number];
export const ns = (house: House): string => `network-policy-conformance-${house}`;

/** Upstream's StatefulSets (two replicas each); forbidden-forrest holds no pods. */
const RESIDENTS: Readonly<Record<Exclude<House, 'forbidden-forrest'>, string>> = {
  gryffindor: 'harry-potter',
  slytherin: 'draco-malfoy',
  hufflepuff: 'cedric-diggory',
  ravenclaw: 'luna-lovegood',
};

export const PORTS = [80, 8080, 53, 5353, 9003, 9005] as const;

/** Upstream's HostNetworkPorts (suite.go: 8 ports from 34345), which the centaur pods listen on. */
export const CENTAUR_PORTS = [34345, 34346, 34347, 34348, 34349, 34350, 34351, 34352] as const;

export interface HousePod {
  readonly house: House;
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`: how the sandbox and matrices name it. */
  readonly key: string;
  readonly node: string;
  readonly ip: string;
}

export const HOUSE_PODS: readonly HousePod[] = (Object.entries(RESIDENTS) as [House, string][]).flatMap(([house, resident], h) =>
  [0, 1].map((replica) => ({
    house,
    namespace: ns(house),
    name: `${resident}-${replica}`,
    key: `${ns(house)}/${resident}-${replica}`,
    node: NODES[replica]!.name,
    ip: `10.244.${replica + 1}.${10 + h}`,
  })),
);

/** `harry-potter-0` → its key. */
export const pod = (name: string): string => {
  const found = HOUSE_PODS.find((p) => p.name === name);
  if (!found) throw new Error(`no house pod ${name}`);
  return found.key;
};

/** A ClusterNetworkPolicy as YAML would write it (policy.networking.k8s.io/v1alpha2). */
export interface CnpDoc {
  readonly apiVersion: 'policy.networking.k8s.io/v1alpha2';
  readonly kind: 'ClusterNetworkPolicy';
  /** `annotations`: e.g. `netfence.io/mode: audit`. */
  readonly metadata: { readonly name: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly spec: {
    readonly tier: 'Admin' | 'Baseline';
    readonly priority: number;
    readonly subject: Record<string, unknown>;
    readonly ingress?: readonly Record<string, unknown>[];
    readonly egress?: readonly Record<string, unknown>[];
  };
}

export interface HouseState {
  readonly namespaceLabels: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly clusterPolicies: readonly CnpDoc[];
  /** NetworkPolicies as plain manifests. */
  readonly policies: readonly object[];
}

const BASE: HouseState = {
  namespaceLabels: Object.fromEntries(HOUSES.map((h) => [ns(h), { 'conformance-house': h }])),
  clusterPolicies: [],
  policies: [],
};

/** How long a change may take to show in a probe round: upstream's poke window (PokeTimeout 10 s). */
const DEADLINE_MS = 10_000;
/** Upstream's `agnhost connect --timeout=3s` would do; a blocked probe here waits 500 ms. */
const PROBE_TIMEOUT_MS = 500;

export class HouseCluster {
  private state: HouseState = BASE;
  readonly applyLog: string[] = [];

  private constructor(
    readonly sandbox: Sandbox,
    private readonly dir: string,
    /** The family the pokes use and the objects list first. */
    readonly family: HouseFamily,
  ) {}

  static async create(family: HouseFamily = 4): Promise<HouseCluster> {
    const sandbox = await createSandbox({ nodes: NODES, ...(family === 6 ? { ipv6: {} } : {}) }, { ports: [...PORTS, ...CENTAUR_PORTS] });
    const families = family === 6 ? { families: [6, 4] as const } : {};
    try {
      await Promise.all(
        HOUSE_PODS.map((p) => sandbox.addPod({ namespace: p.namespace, name: p.name, node: p.node, ip: p.ip, ports: PORTS, ...families })),
      );
    } catch (err) {
      await sandbox.destroy();
      throw err;
    }
    return new HouseCluster(sandbox, mkdtempSync(join(tmpdir(), 'nft-cnp-conformance-')), family);
  }

  get current(): HouseState {
    return this.state;
  }

  setClusterPolicies(cnps: readonly CnpDoc[]): void {
    this.state = { ...this.state, clusterPolicies: cnps };
  }

  /** kubectl patch/apply of one CNP by name. */
  putClusterPolicy(cnp: CnpDoc): void {
    this.setClusterPolicies([...this.state.clusterPolicies.filter((c) => c.metadata.name !== cnp.metadata.name), cnp]);
  }

  clusterPolicy(name: string): CnpDoc {
    const found = this.state.clusterPolicies.find((c) => c.metadata.name === name);
    if (!found) throw new Error(`no ClusterNetworkPolicy ${name}`);
    return found;
  }

  setPolicies(policies: readonly object[]): void {
    this.state = { ...this.state, policies };
  }

  setNamespaceLabels(namespace: string, labels: Readonly<Record<string, string>>): void {
    this.state = { ...this.state, namespaceLabels: { ...this.state.namespaceLabels, [namespace]: labels } };
  }

  snapshot(): ClusterSnapshot {
    return loadManifests([this.write()]).snapshot;
  }

  /** Programs every node from the current state (`netfence apply --netns <node> …`). */
  async apply(): Promise<void> {
    const file = this.write();
    await Promise.all(
      this.sandbox.nodes().map(async (node) => {
        const argv = [
          'apply',
          '--netns',
          node.netns,
          '--node-name',
          node.name,
          ...this.podCidrs(node.name).flatMap((c) => ['--pod-cidr', c]),
          '--log-level',
          'error',
          '--resources',
          file,
        ];
        let err = '';
        const code = await main(argv, { out: () => undefined, err: (t) => (err += t) });
        this.applyLog.push(`[${node.name}] ${err.trim()}`);
        const problems = err.split('\n').filter((l) => l.trim() !== '' && !/^(applied|in sync):/.test(l));
        if (code !== 0 || problems.length > 0) throw new Error(`netfence apply on ${node.name} exited ${code}:\n${err}`);
      }),
    );
  }

  /**
   * Probes `from → to` cells until they all read as expected (or the 10 s window closes). Like upstream's
   * PokeServer, a cell expected blocked must time out: a refused connection (a REJECT) counts as wrong.
   */
  async expect(protocol: Protocol, port: number, cells: readonly (readonly [string, string, boolean])[]): Promise<string | undefined> {
    const reports = await Promise.all(cells.map(([from, to, ok]) => this.expectCell(protocol, port, from, to, ok)));
    const wrong = reports.filter((r): r is string => r !== undefined);
    return wrong.length > 0 ? wrong.join('\n') : undefined;
  }

  private async expectCell(protocol: Protocol, port: number, from: string, to: string, ok: boolean): Promise<string | undefined> {
    const expected = matrixOf([from], [to], ok);
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const v6 = this.family === 6 ? { family: 6 as const, beforeRound: () => this.coldNeighbours(from) } : {};
      const result = await waitForMatrix(this.sandbox, expected, {
        protocol,
        port,
        deadlineMs: Math.max(0, deadline - Date.now()),
        timeoutMs: PROBE_TIMEOUT_MS,
        ...v6,
      });
      const error = result.observed.errors[`${from} -> ${to}`];
      // Refused is final: REJECT's ICMP errors are rate-limited, so a later round could read as a timeout.
      const refused = !ok && result.ok && !/timeout/i.test(error ?? '');
      if (refused)
        return `  ${protocol}/${port} ${from} -> ${to}: expected blocked (timeout), observed blocked but not by a silent drop (${error})`;
      if (result.ok || Date.now() >= deadline) {
        if (result.ok) return undefined;
        const seen = ok ? `blocked (${error ?? '?'})` : 'reachable';
        return `  ${protocol}/${port} ${from} -> ${to}: expected ${ok ? 'reachable' : 'blocked (timeout)'}, observed ${seen}`;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private readonly flushing = new Map<string, Promise<void>>();

  /**
   * The probing pod forgets its IPv6 neighbours, so the poke needs ND first. Cells from one pod probe in
   * parallel: a flush already running in that pod serves them all (two at once make one fail on an entry
   * the other just removed).
   */
  private coldNeighbours(from: string): Promise<void> {
    const netns = this.sandbox.podNetns(from);
    let flush = this.flushing.get(netns);
    if (!flush) {
      flush = run('ip', ['-6', 'neigh', 'flush', 'all'], { netns })
        .then(() => undefined)
        .finally(() => this.flushing.delete(netns));
      this.flushing.set(netns, flush);
    }
    return flush;
  }

  /** The node's pod CIDRs, this cluster's family first. */
  podCidrs(node: string): string[] {
    const n = this.sandbox.nodes().find((x) => x.name === node)!;
    return this.family === 6 ? [n.ipv6!.podCidr, n.podCidr] : [n.podCidr];
  }

  async reset(): Promise<void> {
    this.state = BASE;
    this.applyLog.length = 0;
    await this.apply();
  }

  async destroy(): Promise<void> {
    try {
      for (const node of this.sandbox.nodes())
        await main(['cleanup', '--netns', node.netns, '--log-level', 'error'], { out: () => undefined, err: () => undefined });
    } finally {
      await this.sandbox.destroy();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** The current state as the List manifest `apply` programs (for `netfence diff`/`trace --resources`). */
  manifestFile(): string {
    return this.write();
  }

  private write(): string {
    const file = join(this.dir, 'cluster.json');
    writeFileSync(file, `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: this.objects() }, null, 1)}\n`);
    return file;
  }

  /** Nodes (with their addresses and labels), namespaces, pods, policies: the current state's objects. */
  objects(): object[] {
    return [
      ...this.sandbox.nodes().map((n) => ({
        apiVersion: 'v1',
        kind: 'Node',
        // The labels every kubelet sets; upstream's node peers select `kubernetes.io/os: linux`.
        metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux' } },
        spec: { podCIDR: this.podCidrs(n.name)[0], podCIDRs: this.podCidrs(n.name) },
        status: {
          addresses: (this.family === 6 ? [n.ipv6!.underlayIp, n.underlayIp] : [n.underlayIp]).map((address) => ({
            type: 'InternalIP',
            address,
          })),
        },
      })),
      ...Object.entries(this.state.namespaceLabels).map(([name, labels]) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels },
      })),
      ...HOUSE_PODS.map((p) => ({ p, ips: this.sandbox.pods().find((s) => s.key === p.key)!.ips })).map(({ p, ips }) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace: p.namespace, name: p.name, labels: { 'conformance-house': p.house } },
        spec: {
          nodeName: p.node,
          containers: [
            {
              name: 'agnhost',
              ports: [
                { name: 'web', containerPort: 80, protocol: 'TCP' },
                { containerPort: 8080, protocol: 'TCP' },
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
                { containerPort: 5353, protocol: 'UDP' },
                { containerPort: 9003, protocol: 'SCTP' },
                { containerPort: 9005, protocol: 'SCTP' },
              ],
            },
          ],
        },
        status: { phase: 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
      })),
      ...this.state.policies,
      ...this.state.clusterPolicies,
    ];
  }
}
