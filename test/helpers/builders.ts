// Builders with tweaks (kube-network-policies' makeNetworkPolicyCustom): tests say only what matters to them.

import type {
  ClusterSnapshot,
  ContainerPort,
  LabelSelector,
  Namespace,
  NetworkPolicy,
  Pod,
  PolicyPeer,
  PolicyPort,
  PolicyRule,
  PolicyType,
  SelectorRequirement,
} from '../../src/model/index.js';
import { defaultNodeSettings, type NodeSettings } from '../../src/model/index.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Tweak<T> = (t: Mutable<T>) => void;

export const NODE = 'node-1';
export const settings = (tweak?: Partial<NodeSettings>): NodeSettings => ({ ...defaultNodeSettings(NODE, ['10.244.1.0/24']), ...tweak });

export const sel = (matchLabels: Record<string, string> = {}, matchExpressions: SelectorRequirement[] = []): LabelSelector => ({
  matchLabels,
  matchExpressions,
});
export const expr = (key: string, operator: SelectorRequirement['operator'], ...values: string[]): SelectorRequirement => ({
  key,
  operator,
  values,
});

export function makeNamespace(name: string, labels: Record<string, string> = {}): Namespace {
  return { name, labels: { 'kubernetes.io/metadata.name': name, ...labels } };
}

export function makePod(namespace: string, name: string, ip: string, ...tweaks: Tweak<Pod>[]): Pod {
  const pod: Mutable<Pod> = { namespace, name, labels: {}, nodeName: NODE, hostNetwork: false, phase: 'Running', ips: [ip], ports: [] };
  for (const t of tweaks) t(pod);
  return pod;
}
export const labels =
  (l: Record<string, string>): Tweak<Pod> =>
  (p) =>
    void (p.labels = l);
/** The pod's controller (as convert() reads it from ownerReferences). */
export const ownedBy =
  (kind: string, name: string): Tweak<Pod> =>
  (p) =>
    void (p.owner = { kind, name });
export const onNode =
  (node: string): Tweak<Pod> =>
  (p) =>
    void (p.nodeName = node);
export const phase =
  (ph: Pod['phase']): Tweak<Pod> =>
  (p) =>
    void (p.phase = ph);
export const hostNetwork: Tweak<Pod> = (p) => void (p.hostNetwork = true);
export const ips =
  (...list: string[]): Tweak<Pod> =>
  (p) =>
    void (p.ips = list);
export const containerPorts =
  (...ports: ContainerPort[]): Tweak<Pod> =>
  (p) =>
    void (p.ports = ports);

export function makePolicy(namespace: string, name: string, ...tweaks: Tweak<NetworkPolicy>[]): NetworkPolicy {
  const policy: Mutable<NetworkPolicy> = { namespace, name, podSelector: sel() };
  for (const t of tweaks) t(policy);
  return policy;
}
export const selectPods =
  (s: LabelSelector): Tweak<NetworkPolicy> =>
  (p) =>
    void (p.podSelector = s);
export const types =
  (...t: PolicyType[]): Tweak<NetworkPolicy> =>
  (p) =>
    void (p.policyTypes = t);
export const ingress =
  (...rules: PolicyRule[]): Tweak<NetworkPolicy> =>
  (p) =>
    void (p.ingress = [...(p.ingress ?? []), ...rules]);
export const egress =
  (...rules: PolicyRule[]): Tweak<NetworkPolicy> =>
  (p) =>
    void (p.egress = [...(p.egress ?? []), ...rules]);

export const rule = (peers?: PolicyPeer[], ports?: PolicyPort[]): PolicyRule => ({
  ...(peers ? { peers } : {}),
  ...(ports ? { ports } : {}),
});
export const podPeer = (s: LabelSelector): PolicyPeer => ({ podSelector: s });
export const nsPeer = (s: LabelSelector): PolicyPeer => ({ namespaceSelector: s });
export const nsPodPeer = (ns: LabelSelector, pods: LabelSelector): PolicyPeer => ({ namespaceSelector: ns, podSelector: pods });
export const blockPeer = (cidr: string, ...except: string[]): PolicyPeer => ({ ipBlock: { cidr, except } });
export const tcp = (port?: number | string, endPort?: number): PolicyPort => ({
  protocol: 'TCP',
  ...(port !== undefined ? { port } : {}),
  ...(endPort !== undefined ? { endPort } : {}),
});
export const udp = (port?: number | string): PolicyPort => ({ protocol: 'UDP', ...(port !== undefined ? { port } : {}) });
export const sctp = (port?: number | string): PolicyPort => ({ protocol: 'SCTP', ...(port !== undefined ? { port } : {}) });

export const snapshot = (parts: Partial<ClusterSnapshot>): ClusterSnapshot => ({
  nodes: [],
  namespaces: [],
  pods: [],
  policies: [],
  ...parts,
});
