// One-object changes for the incremental benchmarks: each returns a new snapshot differing from the
// input in exactly the object it names. Targets are picked deterministically from `pick` so a
// benchmark run and a test see the same change.

import type { ClusterSnapshot, Namespace, NetworkPolicy, Pod } from '../../src/model/index.js';
import { mulberry32 } from './prng.js';

export interface MutationOptions {
  /** The node whose pods the change touches (the measured node for "local", another for "remote"). */
  readonly node: string;
  /** Which candidate to change; the same value picks the same object. */
  readonly pick?: number;
}

export type Mutate = (snapshot: ClusterSnapshot, options: MutationOptions) => ClusterSnapshot;

/** Ordinary running pods of a node: what a deployment's scale-up clones and a scale-down removes. */
function workloadPodsOn(snapshot: ClusterSnapshot, node: string): Pod[] {
  return snapshot.pods.filter((p) => p.nodeName === node && !p.hostNetwork && p.phase === 'Running' && p.ips.length > 0);
}

function choose<T>(items: readonly T[], pick: number | undefined, what: string): T {
  if (items.length === 0) throw new Error(`no ${what} to change`);
  return items[Math.floor(mulberry32(pick ?? 1).next() * items.length)]!;
}

/** The lowest free host address in the node's /24 (the CIDR's .1 is the bridge). */
function freeIpOn(snapshot: ClusterSnapshot, node: string): string {
  const cidr = snapshot.nodes.find((n) => n.name === node)?.podCidrs[0];
  const match = cidr?.match(/^(\d+\.\d+\.\d+)\.0\/24$/);
  if (!match) throw new Error(`node ${node} has no /24 pod CIDR`);
  const used = new Set(snapshot.pods.flatMap((p) => p.ips));
  for (let host = 2; host < 255; host++) {
    const ip = `${match[1]}.${host}`;
    if (!used.has(ip)) return ip;
  }
  throw new Error(`node ${node} has no free pod address`);
}

/** A deployment scales up by one: a clone of one of the node's pods (same labels, ports), new name and IP. */
export const podAdd: Mutate = (snapshot, { node, pick }) => {
  const template = choose(workloadPodsOn(snapshot, node), pick, `pod on ${node}`);
  const names = new Set(snapshot.pods.map((p) => `${p.namespace}/${p.name}`));
  let n = 0;
  while (names.has(`${template.namespace}/${template.name}-new${n}`)) n++;
  const name = `${template.name}-new${n}`;
  const pod: Pod = { ...template, name, ips: [freeIpOn(snapshot, node)] };
  return { ...snapshot, pods: [...snapshot.pods, pod] };
};

/** One of the node's pods goes away. */
export const podDelete: Mutate = (snapshot, { node, pick }) => {
  const victim = choose(workloadPodsOn(snapshot, node), pick, `pod on ${node}`);
  return { ...snapshot, pods: snapshot.pods.filter((p) => p !== victim) };
};

/**
 * A pod is relabelled into another app of its namespace (or, with no other app, gets a canary label):
 * it leaves some selector sets, joins others, and policies targeting it change.
 */
export const podLabelChange: Mutate = (snapshot, { node, pick }) => {
  const pod = choose(workloadPodsOn(snapshot, node), pick, `pod on ${node}`);
  const otherApps = [
    ...new Set(snapshot.pods.filter((p) => p.namespace === pod.namespace && p.labels['app'] !== undefined).map((p) => p.labels['app']!)),
  ]
    .filter((a) => a !== pod.labels['app'])
    .sort();
  const labels = otherApps.length > 0 ? { ...pod.labels, app: choose(otherApps, pick, 'app') } : { ...pod.labels, canary: 'true' };
  return { ...snapshot, pods: snapshot.pods.map((p) => (p === pod ? { ...p, labels } : p)) };
};

/** A namespace of one of the node's pods moves between environments (prod ↔ staging): namespaceSelectors re-match. */
export const namespaceLabelChange: Mutate = (snapshot, { node, pick }) => {
  const ns = choose(workloadPodsOn(snapshot, node), pick, `pod on ${node}`).namespace;
  const flip = (n: Namespace): Namespace => ({ ...n, labels: { ...n.labels, env: n.labels['env'] === 'prod' ? 'staging' : 'prod' } });
  return { ...snapshot, namespaces: snapshot.namespaces.map((n) => (n.name === ns ? flip(n) : n)) };
};

/** A new ingress policy for the app of one of the node's pods, from another app of its namespace. */
export const policyAdd: Mutate = (snapshot, { node, pick }) => {
  const pod = choose(workloadPodsOn(snapshot, node), pick, `pod on ${node}`);
  const peer = snapshot.pods.find((p) => p.namespace === pod.namespace && p.labels['app'] !== pod.labels['app'])?.labels['app'] ?? 'client';
  const names = new Set(snapshot.policies.map((p) => `${p.namespace}/${p.name}`));
  let n = 0;
  while (names.has(`${pod.namespace}/bench-added-${n}`)) n++;
  const policy: NetworkPolicy = {
    namespace: pod.namespace,
    name: `bench-added-${n}`,
    podSelector: { matchLabels: pod.labels['app'] ? { app: pod.labels['app'] } : {}, matchExpressions: [] },
    policyTypes: ['Ingress'],
    ingress: [{ peers: [{ podSelector: { matchLabels: { app: peer }, matchExpressions: [] } }], ports: [{ protocol: 'TCP', port: 8080 }] }],
  };
  return { ...snapshot, policies: [...snapshot.policies, policy] };
};

/**
 * An existing ingress policy targeting one of the node's apps gains a TCP port on its first rule (the
 * commonest edit). Falls back to any policy with ingress rules in that pod's namespace.
 */
export const policyEdit: Mutate = (snapshot, { node, pick }) => {
  const localApps = new Set(workloadPodsOn(snapshot, node).map((p) => `${p.namespace}/${p.labels['app']}`));
  const localNamespaces = new Set(workloadPodsOn(snapshot, node).map((p) => p.namespace));
  const hasIngress = (p: NetworkPolicy): boolean => (p.ingress?.length ?? 0) > 0 && (p.ingress![0]!.ports?.length ?? 0) > 0;
  let candidates = snapshot.policies.filter((p) => hasIngress(p) && localApps.has(`${p.namespace}/${p.podSelector.matchLabels['app']}`));
  if (candidates.length === 0) candidates = snapshot.policies.filter((p) => hasIngress(p) && localNamespaces.has(p.namespace));
  const policy = choose(candidates, pick, `ingress policy selecting pods on ${node}`);
  const [first, ...rest] = policy.ingress!;
  // A TCP port the rule does not cover yet, so the edit always changes what the rule allows.
  const covered = (n: number): boolean =>
    first!.ports!.some((p) => p.protocol === 'TCP' && typeof p.port === 'number' && n >= p.port && n <= (p.endPort ?? p.port));
  let port = 18443;
  while (covered(port)) port++;
  const edited: NetworkPolicy = { ...policy, ingress: [{ ...first!, ports: [...first!.ports!, { protocol: 'TCP', port }] }, ...rest] };
  return { ...snapshot, policies: snapshot.policies.map((p) => (p === policy ? edited : p)) };
};

export interface Mutation {
  readonly name: string;
  readonly what: string;
  /** Local: the measured node's pods; remote: another node's. */
  readonly where: 'local' | 'remote';
  readonly apply: Mutate;
}

export const MUTATIONS: readonly Mutation[] = [
  { name: 'podAdd-local', what: 'a pod added on the measured node', where: 'local', apply: podAdd },
  { name: 'podAdd-remote', what: 'a pod added on another node', where: 'remote', apply: podAdd },
  { name: 'podDelete-local', what: 'a pod deleted on the measured node', where: 'local', apply: podDelete },
  { name: 'podDelete-remote', what: 'a pod deleted on another node', where: 'remote', apply: podDelete },
  { name: 'podLabelChange-local', what: "a local pod's app label changed", where: 'local', apply: podLabelChange },
  { name: 'podLabelChange-remote', what: "a remote pod's app label changed", where: 'remote', apply: podLabelChange },
  { name: 'namespaceLabelChange', what: "env label of a local pod's namespace flipped", where: 'local', apply: namespaceLabelChange },
  { name: 'policyAdd', what: 'an ingress policy added for a local app', where: 'local', apply: policyAdd },
  { name: 'policyEdit', what: 'a port added to a policy selecting a local app', where: 'local', apply: policyEdit },
];

/** The node a "remote" mutation touches: the first node that is not the measured one. */
export function remoteNode(snapshot: ClusterSnapshot, measured: string): string {
  const node = snapshot.nodes.find((n) => n.name !== measured);
  if (!node) throw new Error('the cluster has no node besides the measured one');
  return node.name;
}
