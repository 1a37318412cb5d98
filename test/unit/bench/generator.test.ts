import { createHash } from 'node:crypto';
import { generateCluster, podCidrOf, TIER_SHAPES, type GeneratedCluster, type Tier } from '../../../scripts/bench-lib/generator.js';
import { POLICY_KINDS } from '../../../scripts/bench-lib/policies.js';
import { mulberry32, zipf } from '../../../scripts/bench-lib/prng.js';
import { compile } from '../../../src/compile/index.js';
import type { LabelSelector, NetworkPolicy, PolicyPeer } from '../../../src/model/index.js';

const hashOf = (value: unknown): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

// Generating is cheap next to compiling; keep one cluster per tier for the whole file.
const cache = new Map<Tier, GeneratedCluster>();
const cluster = (tier: Tier): GeneratedCluster => {
  let c = cache.get(tier);
  if (!c) cache.set(tier, (c = generateCluster({ tier, seed: 7, node: 'node-1' })));
  return c;
};

const selectors = (p: NetworkPolicy): LabelSelector[] => {
  const peers: PolicyPeer[] = [...(p.ingress ?? []), ...(p.egress ?? [])].flatMap((r) => [...(r.peers ?? [])]);
  return [p.podSelector, ...peers.flatMap((x) => [x.podSelector, x.namespaceSelector].filter((s): s is LabelSelector => s !== undefined))];
};

describe('prng', () => {
  it('repeats its sequence for the same seed and differs for another', () => {
    const seq = (seed: number) => Array.from({ length: 5 }, mulberry32(seed).next);
    const a = mulberry32(42);
    const b = mulberry32(42);
    expect(Array.from({ length: 5 }, () => a.next())).toEqual(Array.from({ length: 5 }, () => b.next()));
    expect(seq(1)).not.toEqual(seq(2));
  });

  it('zipf favours low ranks', () => {
    const rng = mulberry32(3);
    const sample = zipf(50, 1.1);
    const counts = new Array<number>(50).fill(0);
    for (let i = 0; i < 5000; i++) counts[sample(rng)]!++;
    expect(counts[0]!).toBeGreaterThan(5 * counts[25]!);
  });
});

describe('generateCluster', () => {
  it.each<Tier>(['small', 'medium', 'large'])('%s: the same seed gives the same snapshot', (tier) => {
    const again = generateCluster({ tier, seed: 7, node: 'node-1' });
    expect(hashOf(again.snapshot)).toBe(hashOf(cluster(tier).snapshot));
    expect(hashOf(generateCluster({ tier, seed: 8, node: 'node-1' }).snapshot)).not.toBe(hashOf(cluster(tier).snapshot));
  });

  it.each<{ tier: Tier; pods: number; policies: number; namespaces: number; nodes: number; onNode: number }>([
    { tier: 'small', pods: 100, policies: 10, namespaces: 5, nodes: 4, onNode: 25 },
    { tier: 'medium', pods: 1000, policies: 100, namespaces: 20, nodes: 10, onNode: 100 },
    { tier: 'large', pods: 10_000, policies: 1_000, namespaces: 200, nodes: 100, onNode: 110 },
    { tier: 'xl', pods: 50_000, policies: 5_000, namespaces: 1_000, nodes: 500, onNode: 110 },
  ])(
    '$tier: $pods pods, $policies policies, $namespaces namespaces, $onNode on node-1',
    ({ tier, pods, policies, namespaces, nodes, onNode }) => {
      const { snapshot, stats } = cluster(tier);
      expect(snapshot.pods).toHaveLength(pods);
      expect(snapshot.policies).toHaveLength(policies);
      expect(snapshot.namespaces).toHaveLength(namespaces);
      expect(snapshot.nodes).toHaveLength(nodes);
      expect(snapshot.pods.filter((p) => p.nodeName === 'node-1')).toHaveLength(onNode);
      expect(stats).toMatchObject({ pods, policies, namespaces, nodes, podsOnNode: onNode });
      expect(TIER_SHAPES[tier].podsOnNode).toBe(onNode);
    },
  );

  it.each<Tier>(['small', 'medium', 'large', 'xl'])('%s: unique names, pod IPs unique and inside their node CIDR', (tier) => {
    const { snapshot, settings } = cluster(tier);
    const cidrOf = new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs[0]!]));
    expect(new Set(cidrOf.values()).size).toBe(snapshot.nodes.length);
    expect(settings.podCidrs).toEqual([cidrOf.get('node-1')]);
    const podIps = snapshot.pods.filter((p) => !p.hostNetwork).flatMap((p) => p.ips);
    expect(new Set(podIps).size).toBe(podIps.length);
    for (const pod of snapshot.pods.filter((p) => !p.hostNetwork && p.ips.length > 0)) {
      const prefix = cidrOf.get(pod.nodeName)!.replace(/0\/24$/, '');
      expect(pod.ips[0]!.startsWith(prefix)).toBe(true);
      expect(Number(pod.ips[0]!.slice(prefix.length))).toBeGreaterThanOrEqual(2);
    }
    const keys = snapshot.pods.map((p) => `${p.namespace}/${p.name}`);
    expect(new Set(keys).size).toBe(keys.length);
    const policyKeys = snapshot.policies.map((p) => `${p.namespace}/${p.name}`);
    expect(new Set(policyKeys).size).toBe(policyKeys.length);
  });

  it('xl uses /24s out of 10.0.0.0/8 beyond the 256 nodes of a /16', () => {
    expect(podCidrOf(0, 500)).toBe('10.0.0.0/24');
    expect(podCidrOf(300, 500)).toBe('10.1.44.0/24');
    expect(podCidrOf(3, 100)).toBe('10.244.3.0/24');
  });

  it('hostNetwork pods carry their node address and every pod namespace exists', () => {
    const { snapshot } = cluster('medium');
    const nodeAddress = new Map(snapshot.nodes.map((n) => [n.name, n.addresses[0]]));
    const hostPods = snapshot.pods.filter((p) => p.hostNetwork);
    expect(hostPods).toHaveLength(snapshot.nodes.length);
    for (const p of hostPods) expect(p.ips).toEqual([nodeAddress.get(p.nodeName)]);
    const namespaces = new Set(snapshot.namespaces.map((n) => n.name));
    expect(snapshot.pods.every((p) => namespaces.has(p.namespace))).toBe(true);
  });

  it('pod counts per namespace are skewed (a few big namespaces, a long tail)', () => {
    const counts = new Map<string, number>();
    for (const p of cluster('large').snapshot.pods) counts.set(p.namespace, (counts.get(p.namespace) ?? 0) + 1);
    const sorted = [...counts.values()].sort((a, b) => b - a);
    expect(sorted[0]!).toBeGreaterThan(5 * sorted[Math.floor(sorted.length / 2)]!);
  });

  it('namespaces carry team and env labels; pods app, tier and team; some pods name http, metrics and grpc ports', () => {
    const { snapshot } = cluster('medium');
    expect(
      snapshot.namespaces.every((n) => n.labels['team'] && n.labels['env'] && n.labels['kubernetes.io/metadata.name'] === n.name),
    ).toBe(true);
    const apps = snapshot.pods.filter((p) => p.labels['app'] && p.labels['tier'] && p.labels['team']);
    expect(apps.length).toBeGreaterThan(snapshot.pods.length * 0.9);
    const names = new Set(snapshot.pods.flatMap((p) => p.ports.map((x) => x.name)));
    for (const name of ['http', 'metrics', 'grpc']) expect(names).toContain(name);
    expect(snapshot.pods.some((p) => p.ports.length === 0)).toBe(true);
  });

  it.each<Tier>(['medium', 'large'])('%s: every policy kind, selector operator and port form appears', (tier) => {
    const { snapshot, stats } = cluster(tier);
    for (const kind of POLICY_KINDS) expect(stats.policyKinds[kind]).toBeGreaterThan(0);
    const ops = new Set(snapshot.policies.flatMap(selectors).flatMap((s) => s.matchExpressions.map((e) => e.operator)));
    expect([...ops].sort()).toEqual(['DoesNotExist', 'Exists', 'In', 'NotIn']);
    const rules = snapshot.policies.flatMap((p) => [...(p.ingress ?? []), ...(p.egress ?? [])]);
    const ports = rules.flatMap((r) => r.ports ?? []);
    const peers = rules.flatMap((r) => r.peers ?? []);
    expect(ports.some((p) => typeof p.port === 'string')).toBe(true);
    expect(ports.some((p) => p.endPort !== undefined)).toBe(true);
    expect(peers.some((p) => p.ipBlock && p.ipBlock.except.length > 0)).toBe(true);
    expect(peers.some((p) => p.namespaceSelector && p.podSelector)).toBe(true);
    expect(peers.some((p) => p.namespaceSelector && !p.podSelector)).toBe(true);
    expect(snapshot.policies.some((p) => (p.egress?.length ?? 0) > 0)).toBe(true);
    expect(snapshot.policies.some((p) => p.ingress?.some((r) => !r.peers && !r.ports))).toBe(true);
    expect(snapshot.policies.some((p) => p.policyTypes?.includes('Egress') && !p.egress)).toBe(true);
  });

  it.each<Tier>(['small', 'medium', 'large'])('%s: every policy compiles without an error problem and some select node-1 pods', (tier) => {
    const { snapshot, settings } = cluster(tier);
    const result = compile(snapshot, settings);
    expect(result.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(result.desired.v4.chains.some((c) => c.role.kind === 'policy')).toBe(true);
    expect(result.desired.v4.ipsets.length).toBeGreaterThan(0);
  });

  it('refuses a node that is not in the cluster', () => {
    expect(() => generateCluster({ tier: 'small', seed: 1, node: 'node-99' })).toThrow('node-99');
  });
});
