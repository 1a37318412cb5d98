// Deterministic synthetic clusters for benchmarks: same tier and seed, same snapshot, byte for byte.
// Shapes follow real clusters: a few big namespaces and apps and a long tail (Zipf), one hostNetwork
// daemon pod per node, a handful of system namespaces every policy set refers to, /24 pod CIDR per node.

import {
  defaultNodeSettings,
  type ClusterNode,
  type ClusterSnapshot,
  type ContainerPort,
  type Namespace,
  type NodeSettings,
  type Pod,
} from '../../src/model/index.js';
import { generatePolicies, type AppInfo, type PolicyKind } from './policies.js';
import { mulberry32, zipf, type Rng } from './prng.js';

export type Tier = 'small' | 'medium' | 'large' | 'xl' | 'xxl';
export const TIERS: readonly Tier[] = ['small', 'medium', 'large', 'xl', 'xxl'];

export interface TierShape {
  readonly pods: number;
  readonly policies: number;
  readonly namespaces: number;
  readonly nodes: number;
  /** Pods scheduled on the measured node, its hostNetwork daemon pod included (kubelet's max-pods is 110). */
  readonly podsOnNode: number;
}

export const TIER_SHAPES: Readonly<Record<Tier, TierShape>> = {
  small: { pods: 100, policies: 10, namespaces: 5, nodes: 4, podsOnNode: 25 },
  medium: { pods: 1_000, policies: 100, namespaces: 20, nodes: 10, podsOnNode: 100 },
  large: { pods: 10_000, policies: 1_000, namespaces: 200, nodes: 100, podsOnNode: 110 },
  xl: { pods: 50_000, policies: 5_000, namespaces: 1_000, nodes: 500, podsOnNode: 110 },
  // The far end of the cost curve (`npm run bench -- --curve`).
  xxl: { pods: 100_000, policies: 10_000, namespaces: 2_000, nodes: 1_000, podsOnNode: 110 },
};

export interface GenerateOptions {
  readonly tier: Tier;
  readonly seed: number;
  /** The node being programmed (`node-1` … `node-N`). */
  readonly node: string;
  /**
   * Completed Job pods (phase Succeeded, kept until their Job is cleaned up) as this share of all pods,
   * added on top of the tier's pods and spread over the other nodes. Default 0: the tier's output as is.
   */
  readonly completedJobShare?: number;
}

export interface ClusterStats {
  readonly tier: Tier;
  readonly seed: number;
  readonly nodes: number;
  readonly namespaces: number;
  readonly pods: number;
  readonly podsOnNode: number;
  readonly apps: number;
  readonly policies: number;
  readonly policyKinds: Readonly<Record<PolicyKind, number>>;
}

export interface GeneratedCluster {
  readonly snapshot: ClusterSnapshot;
  readonly settings: NodeSettings;
  readonly stats: ClusterStats;
}

/** Namespaces every cluster has and policies refer to (DNS egress, metrics scraping, ingress). */
export const SYSTEM_NAMESPACES = ['kube-system', 'monitoring', 'ingress-nginx'] as const;

const TEAMS = [
  'payments',
  'search',
  'identity',
  'checkout',
  'catalog',
  'platform-data',
  'growth',
  'ads',
  'media',
  'risk',
  'ledger',
  'support',
  'logistics',
  'pricing',
  'reviews',
  'mobile',
  'notify',
  'billing',
  'recs',
  'infra-ml',
];
const APP_WORDS = [
  'api',
  'web',
  'worker',
  'db',
  'cache',
  'gateway',
  'auth',
  'events',
  'indexer',
  'cron',
  'ui',
  'store',
  'sync',
  'proxy',
  'export',
];
const TIER_WEIGHTS = [
  ['backend', 40],
  ['frontend', 25],
  ['worker', 15],
  ['db', 10],
  ['cache', 10],
] as const;
const REPLICA_WEIGHTS = [
  [1, 30],
  [2, 25],
  [3, 20],
  [5, 10],
  [10, 8],
  [20, 5],
  [50, 2],
] as const;

export function generateCluster(options: GenerateOptions): GeneratedCluster {
  const shape = TIER_SHAPES[options.tier];
  const rng = mulberry32(options.seed);
  const nodes = makeNodes(shape);
  const measured = nodes.findIndex((n) => n.name === options.node);
  if (measured < 0) throw new Error(`node ${options.node} is not one of node-1 … node-${shape.nodes}`);

  const namespaces = makeNamespaces(rng, shape);
  const userNamespaces = namespaces.filter((n) => !(SYSTEM_NAMESPACES as readonly string[]).includes(n.name));
  const system = systemPods(nodes, measured);
  const apps = makeApps(rng, userNamespaces, shape.pods - system.length);
  const pods = placePods(rng, shape, nodes, measured, system, apps);
  // Their own random stream, so the tier's pods and policies stay what they are without them.
  if (options.completedJobShare)
    pods.push(...completedJobs(mulberry32(options.seed + 7919), nodes, measured, userNamespaces, pods.length, options.completedJobShare));
  const policies = generatePolicies(rng, { namespaces, apps, count: shape.policies });

  const snapshot: ClusterSnapshot = { nodes, namespaces, pods, policies: policies.policies };
  const node = nodes[measured]!;
  return {
    snapshot,
    settings: defaultNodeSettings(node.name, node.podCidrs),
    stats: {
      tier: options.tier,
      seed: options.seed,
      nodes: nodes.length,
      namespaces: namespaces.length,
      pods: pods.length,
      podsOnNode: pods.filter((p) => p.nodeName === node.name).length,
      apps: apps.length,
      policies: policies.policies.length,
      policyKinds: policies.kinds,
    },
  };
}

/** flannel's default /16 holds 256 nodes; beyond that, /24s out of 10.0.0.0/8 as large clusters use. */
export function podCidrOf(index: number, nodeCount: number): string {
  return nodeCount <= 256 ? `10.244.${index}.0/24` : `10.${index >> 8}.${index & 255}.0/24`;
}

function makeNodes(shape: TierShape): ClusterNode[] {
  return Array.from({ length: shape.nodes }, (_, i) => ({
    name: `node-${i + 1}`,
    podCidrs: [podCidrOf(i, shape.nodes)],
    addresses: [`172.16.${(i + 1) >> 8}.${(i + 1) & 255}`],
  }));
}

function makeNamespaces(rng: Rng, shape: TierShape): Namespace[] {
  const teamCount = Math.min(TEAMS.length, Math.max(3, Math.ceil(shape.namespaces / 8)));
  const pickTeam = zipf(teamCount, 1.0);
  const named = (name: string, labels: Record<string, string>): Namespace => ({
    name,
    labels: { 'kubernetes.io/metadata.name': name, ...labels },
  });
  const out: Namespace[] = SYSTEM_NAMESPACES.map((name) => named(name, { team: 'platform', env: 'prod' }));
  for (let i = out.length; i < shape.namespaces; i++) {
    const team = TEAMS[pickTeam(rng)]!;
    const env = rng.weighted([
      ['prod', 45],
      ['staging', 30],
      ['dev', 25],
    ] as const);
    out.push(
      named(`${team}-${env}-${i}`, {
        team,
        env,
        ...(rng.chance(0.15) ? { compliance: 'pci' } : {}),
        ...(rng.chance(0.3) ? { 'istio-injection': 'enabled' } : {}),
      }),
    );
  }
  return out;
}

interface PodTemplate {
  readonly namespace: string;
  readonly app: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: readonly ContainerPort[];
  readonly replicas: number;
  readonly hostNetwork?: boolean;
  /** Pinned to one node (system pods), with a fixed pod name. */
  readonly node?: string;
  readonly podName?: string;
}

function systemPods(nodes: readonly ClusterNode[], measured: number): PodTemplate[] {
  const remote = nodes.filter((_, i) => i !== measured);
  const on = (k: number): string => (remote[k % Math.max(1, remote.length)] ?? nodes[measured]!).name;
  const dns: ContainerPort[] = [
    { name: 'dns', containerPort: 53, protocol: 'UDP' },
    { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
    { name: 'metrics', containerPort: 9153, protocol: 'TCP' },
  ];
  const out: PodTemplate[] = nodes.map((n) => ({
    namespace: 'kube-system',
    app: 'kube-proxy',
    labels: { 'k8s-app': 'kube-proxy' },
    ports: [],
    replicas: 1,
    hostNetwork: true,
    node: n.name,
    podName: `kube-proxy-${n.name}`,
  }));
  for (let r = 0; r < 2; r++) {
    out.push({
      namespace: 'kube-system',
      app: 'coredns',
      labels: { 'k8s-app': 'kube-dns' },
      ports: dns,
      replicas: 1,
      node: on(r),
      podName: `coredns-${r}`,
    });
    out.push({
      namespace: 'monitoring',
      app: 'prometheus',
      labels: { app: 'prometheus', tier: 'backend', team: 'platform' },
      ports: [{ name: 'http', containerPort: 9090, protocol: 'TCP' }],
      replicas: 1,
      node: on(r + 2),
      podName: `prometheus-${r}`,
    });
    out.push({
      namespace: 'ingress-nginx',
      app: 'ingress-nginx',
      labels: { 'app.kubernetes.io/name': 'ingress-nginx', tier: 'frontend', team: 'platform' },
      ports: [
        { name: 'http', containerPort: 80, protocol: 'TCP' },
        { name: 'https', containerPort: 443, protocol: 'TCP' },
      ],
      replicas: 1,
      node: on(r + 4),
      podName: `ingress-nginx-controller-${r}`,
    });
  }
  return out;
}

/** Apps (deployments) over user namespaces: every namespace gets one, the rest follow a Zipf curve. */
function makeApps(rng: Rng, namespaces: readonly Namespace[], podBudget: number): AppInfo[] {
  const apps: AppInfo[] = [];
  const perNamespace = new Map<string, number>();
  const pickNamespace = zipf(namespaces.length, 1.0);
  let left = podBudget;
  for (let i = 0; left > 0; i++) {
    const ns = i < namespaces.length ? namespaces[i]! : namespaces[pickNamespace(rng)]!;
    const k = perNamespace.get(ns.name) ?? 0;
    perNamespace.set(ns.name, k + 1);
    const word = APP_WORDS[k % APP_WORDS.length]!;
    const name = k < APP_WORDS.length ? word : `${word}-${Math.floor(k / APP_WORDS.length)}`;
    const tier = rng.weighted(TIER_WEIGHTS);
    const replicas = Math.min(left, rng.weighted(REPLICA_WEIGHTS));
    left -= replicas;
    const labels: Record<string, string> = { app: name, tier, team: ns.labels['team'] ?? 'unknown' };
    if (rng.chance(0.5)) labels['version'] = rng.chance(0.8) ? 'v1' : 'v2';
    apps.push({ namespace: ns.name, app: name, tier, labels, ports: portsFor(rng, tier), replicas });
  }
  return apps;
}

function portsFor(rng: Rng, tier: string): ContainerPort[] {
  const tcp = (containerPort: number, name?: string): ContainerPort => ({ containerPort, protocol: 'TCP', ...(name ? { name } : {}) });
  const metrics = (p: number, chance: number): ContainerPort[] => (rng.chance(chance) ? [tcp(p, 'metrics')] : []);
  switch (tier) {
    case 'frontend':
      return [tcp(8080, 'http'), ...metrics(9090, 0.7)];
    case 'backend':
      return [tcp(50051, 'grpc'), ...(rng.chance(0.5) ? [tcp(8080, 'http')] : []), ...metrics(9090, 0.7)];
    case 'worker':
      return metrics(9090, 0.6);
    case 'db':
      return [tcp(5432), ...metrics(9187, 0.5)];
    default:
      return [tcp(6379)];
  }
}

/**
 * Pods of finished Jobs: `share` of all pods once added to `running`. They keep their labels and their last
 * address in the API (a completed pod's status still shows its podIP), and count for nothing in policy.
 */
function completedJobs(
  rng: Rng,
  nodes: readonly ClusterNode[],
  measured: number,
  namespaces: readonly Namespace[],
  running: number,
  share: number,
): Pod[] {
  const count = Math.round((running * share) / (1 - share));
  const remote = nodes.map((_, i) => i).filter((i) => i !== measured);
  return Array.from({ length: count }, (_, i): Pod => {
    const node = remote.length > 0 ? remote[i % remote.length]! : measured;
    const namespace = namespaces[i % namespaces.length]!.name;
    const job = `batch-${Math.floor(i / 3)}`;
    const uid = `${(rng.next() * 2 ** 32) >>> 0}`.padStart(10, '0');
    return {
      namespace,
      name: `${job}-${uid.slice(-5)}`,
      labels: { 'batch.kubernetes.io/job-name': job, 'job-name': job, 'batch.kubernetes.io/controller-uid': uid, 'controller-uid': uid },
      nodeName: nodes[node]!.name,
      hostNetwork: false,
      phase: 'Succeeded',
      ips: [podCidrOf(node, nodes.length).replace(/\.0\/24$/, `.${2 + Math.floor(rng.next() * 252)}`)],
      ports: [],
    };
  });
}

/** Expands templates into pods, puts exactly `podsOnNode` on the measured node and spreads the rest. */
function placePods(
  rng: Rng,
  shape: TierShape,
  nodes: readonly ClusterNode[],
  measured: number,
  system: readonly PodTemplate[],
  apps: readonly AppInfo[],
): Pod[] {
  const free = nodes.map(() => rng.shuffle(Array.from({ length: 253 }, (_, i) => i + 2)));
  const nodeIndex = new Map(nodes.map((n, i) => [n.name, i]));
  const ipOn = (node: number): string => {
    const host = free[node]!.pop();
    if (host === undefined) throw new Error(`node-${node + 1} ran out of pod addresses`);
    return podCidrOf(node, nodes.length).replace(/\.0\/24$/, `.${host}`);
  };
  const pod = (t: PodTemplate, name: string, node: number | undefined, phase: Pod['phase']): Pod => ({
    namespace: t.namespace,
    name,
    labels: t.labels,
    nodeName: node === undefined ? '' : nodes[node]!.name,
    hostNetwork: t.hostNetwork === true,
    phase,
    ips: node === undefined ? [] : t.hostNetwork ? [...nodes[node]!.addresses] : [ipOn(node)],
    ports: t.ports,
  });

  const out: Pod[] = system.map((t) => pod(t, t.podName ?? t.app, nodeIndex.get(t.node ?? ''), 'Running'));
  const replicas = rng.shuffle(apps.flatMap((a) => Array.from({ length: a.replicas }, (_, r) => ({ app: a, r }))));
  const localLeft = shape.podsOnNode - out.filter((p) => p.nodeName === nodes[measured]!.name).length;
  const remote = nodes.map((_, i) => i).filter((i) => i !== measured);
  replicas.forEach(({ app, r }, i) => {
    const name = `${app.app}-${r}`;
    const jobDone = app.tier === 'worker' && rng.chance(0.05);
    if (i < localLeft) return out.push(pod(app, name, measured, jobDone ? 'Succeeded' : 'Running'));
    // Unscheduled pods (no node, no IP) exist in every real cluster for a moment.
    if (rng.chance(0.005) || remote.length === 0) return out.push(pod(app, name, undefined, 'Pending'));
    return out.push(pod(app, name, remote[i % remote.length]!, jobDone ? 'Succeeded' : 'Running'));
  });
  return out;
}
