// The upstream Kubernetes NetworkPolicy e2e model (test/e2e/network/netpol), laid over two sandbox
// nodes: namespaces x, y, z labelled `ns: <name>`, pods a, b, c in each labelled `pod: <name>`, every
// pod serving TCP/UDP/SCTP on 80 and 81 with the upstream named ports (serve-80-tcp, …).
//
// Pods alternate between the nodes and have fixed, readable addresses (10.244.<node>.<ns><pod>), so
// cases can name pod IPs in ipBlocks statically, and every matrix has same-node and cross-node cells
// within one namespace and across namespaces.

import type { Protocol } from '../../../src/model/index.js';
import { DEFAULT_CLUSTER_CIDR6, DEFAULT_UNDERLAY_CIDR6, planNodeIpv6, podIpv6 } from '../../../sandbox/ipv6.js';

export type Family = 4 | 6;

export type Labels = Readonly<Record<string, string>>;

export const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
] as const;

export const NAMESPACES = ['x', 'y', 'z'] as const;
export const POD_NAMES = ['a', 'b', 'c'] as const;
export const PORTS = [80, 81] as const;
export const PROTOCOLS: readonly Protocol[] = ['TCP', 'UDP', 'SCTP'];

export interface ContainerPortSpec {
  readonly name: string;
  readonly containerPort: number;
  readonly protocol: Protocol;
}

export interface ModelPod {
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`, as matrices write it. */
  readonly key: string;
  readonly node: string;
  readonly ip: string;
  /** The IPv6 twin the dual-stack sandbox gives the same slot (10.244.1.11 ↔ fd00:10:244:1::b). */
  readonly ip6: string;
  readonly labels: Labels;
  /** What the Pod manifest declares; the agent serves 80 and 81 on every protocol whatever this says. */
  readonly ports: readonly ContainerPortSpec[];
}

/** `serve-80-tcp`, as upstream names its container ports. */
export const portName = (port: number, protocol: Protocol): string => `serve-${port}-${protocol.toLowerCase()}`;

/** One named port per (port, protocol), like upstream's one container per port and protocol. */
export const MODEL_CONTAINER_PORTS: readonly ContainerPortSpec[] = PORTS.flatMap((port) =>
  PROTOCOLS.map((protocol) => ({ name: portName(port, protocol), containerPort: port, protocol })),
);

export const MODEL_PODS: readonly ModelPod[] = NAMESPACES.flatMap((namespace, nsIndex) =>
  POD_NAMES.map((name, podIndex) => {
    const nodeIndex = (nsIndex * POD_NAMES.length + podIndex) % NODES.length;
    const node = NODES[nodeIndex] ?? NODES[0];
    const nodeOctet = node.podCidr.split('.')[2];
    const host = (nsIndex + 1) * 10 + podIndex + 1;
    return {
      namespace,
      name,
      key: `${namespace}/${name}`,
      node: node.name,
      ip: `10.244.${nodeOctet}.${host}`,
      ip6: podIpv6(nodeIpv6(node.name), host),
      labels: { pod: name },
      ports: MODEL_CONTAINER_PORTS,
    };
  }),
);

export const MODEL_POD_KEYS: readonly string[] = MODEL_PODS.map((p) => p.key);

export const MODEL_NAMESPACE_LABELS: Readonly<Record<string, Labels>> = Object.fromEntries(NAMESPACES.map((ns) => [ns, { ns }]));

export function modelPod(key: string): ModelPod {
  const pod = MODEL_PODS.find((p) => p.key === key);
  if (!pod) throw new Error(`no model pod ${key}`);
  return pod;
}

/** A node's IPv6 side as the dual-stack sandbox (default plan) builds it. */
export function nodeIpv6(name: string) {
  const index = NODES.findIndex((n) => n.name === name);
  if (index < 0) throw new Error(`no model node ${name}`);
  return planNodeIpv6({ clusterCidr: DEFAULT_CLUSTER_CIDR6, underlayCidr: DEFAULT_UNDERLAY_CIDR6 }, index);
}

/** A node's pod CIDR of one family. */
export const nodePodCidr = (name: string, family: Family = 4): string =>
  family === 6 ? nodeIpv6(name).podCidr : (NODES.find((n) => n.name === name)?.podCidr ?? '');

/** A model pod's address of one family. */
export const podIp = (key: string, family: Family = 4): string => (family === 6 ? modelPod(key).ip6 : modelPod(key).ip);

/** A model pod's address as an ipBlock CIDR of one host. */
export const hostCidr = (key: string, family: Family = 4): string => (family === 6 ? `${modelPod(key).ip6}/128` : `${modelPod(key).ip}/32`);
