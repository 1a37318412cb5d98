// The cluster a conformance case runs against, as plain data, and its manifest form: the
// Namespaces, Pods and NetworkPolicies `netfence apply --resources` reads (one `kind: List` file).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Protocol } from '../../../src/model/index.js';
import { MODEL_NAMESPACE_LABELS, MODEL_PODS, type ContainerPortSpec, type Family, type Labels, type ModelPod } from './model.js';

/** A NetworkPolicy exactly as it would be written in YAML (networking.k8s.io/v1). */
export interface PolicyDoc {
  readonly apiVersion: 'networking.k8s.io/v1';
  readonly kind: 'NetworkPolicy';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec: PolicySpecDoc;
}

export interface SelectorDoc {
  readonly matchLabels?: Labels;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values?: readonly string[];
  }[];
}

export interface PeerDoc {
  readonly podSelector?: SelectorDoc;
  readonly namespaceSelector?: SelectorDoc;
  readonly ipBlock?: { readonly cidr: string; readonly except?: readonly string[] };
}

export interface PortDoc {
  readonly protocol?: Protocol;
  readonly port?: number | string;
  readonly endPort?: number;
}

export interface PolicySpecDoc {
  readonly podSelector: SelectorDoc;
  readonly policyTypes?: readonly ('Ingress' | 'Egress')[];
  readonly ingress?: readonly { readonly from?: readonly PeerDoc[]; readonly ports?: readonly PortDoc[] }[];
  readonly egress?: readonly { readonly to?: readonly PeerDoc[]; readonly ports?: readonly PortDoc[] }[];
}

export interface ClusterState {
  /** Namespace name → labels (the loader adds kubernetes.io/metadata.name itself). */
  readonly namespaces: Readonly<Record<string, Labels>>;
  readonly pods: readonly ModelPod[];
  readonly policies: readonly PolicyDoc[];
}

export const BASE_STATE: ClusterState = { namespaces: MODEL_NAMESPACE_LABELS, pods: MODEL_PODS, policies: [] };

export function netpol(namespace: string, name: string, spec: PolicySpecDoc): PolicyDoc {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

/**
 * IPv4: the pod's IPv4 address only (the model as upstream runs it). IPv6: dual-stack, podIPs listing
 * IPv6 first (as on an IPv6-primary cluster), so the IPv6 run also covers the other podIPs order.
 */
function podDoc(pod: ModelPod, family: Family): object {
  const containers =
    pod.ports.length === 0
      ? [{ name: 'agent' }]
      : pod.ports.map((p: ContainerPortSpec) => ({
          name: `cont-${p.name.replace(/^serve-/, '')}`,
          ports: [{ name: p.name, containerPort: p.containerPort, protocol: p.protocol }],
        }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace: pod.namespace, name: pod.name, labels: pod.labels },
    spec: { nodeName: pod.node, containers },
    status:
      family === 6
        ? { phase: 'Running', podIP: pod.ip6, podIPs: [{ ip: pod.ip6 }, { ip: pod.ip }] }
        : { phase: 'Running', podIP: pod.ip, podIPs: [{ ip: pod.ip }] },
  };
}

export function manifestDocs(state: ClusterState, family: Family = 4): object[] {
  return [
    ...Object.entries(state.namespaces).map(([name, labels]) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } })),
    ...state.pods.map((p) => podDoc(p, family)),
    ...state.policies,
  ];
}

/** Writes the whole cluster as one List manifest into `dir` (replacing the previous one). */
export function writeManifests(dir: string, state: ClusterState, family: Family = 4): string {
  const file = join(dir, 'cluster.json');
  writeFileSync(file, `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifestDocs(state, family) }, null, 1)}\n`);
  return file;
}
