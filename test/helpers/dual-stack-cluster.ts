// A small dual-stack cluster as manifests, for the tools on both families (unit tests over saved dumps and
// the kernel test in a scratch namespace). node-1 is the node under test: flannel gives it one IPv4 /24 and
// one IPv6 /64; most pods are dual-stack, one is IPv4-only and one IPv6-only.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const NODE = 'node-1';
export const V4_CIDR = '10.244.1.0/24';
export const V6_CIDR = 'fd00:10:244:1::/64';

export interface PodDef {
  readonly ns: string;
  readonly name: string;
  readonly node: string;
  readonly ips: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

export const PODS: readonly PodDef[] = [
  { ns: 'web', name: 'db', node: NODE, ips: ['10.244.1.10', 'fd00:10:244:1::a'], labels: { role: 'db' } },
  { ns: 'web', name: 'api', node: NODE, ips: ['10.244.1.11', 'fd00:10:244:1::b'], labels: { role: 'api' } },
  // podIPs in the other order: the family is the address's, not its position.
  { ns: 'web', name: 'api6first', node: NODE, ips: ['fd00:10:244:1::d', '10.244.1.13'], labels: { role: 'api' } },
  { ns: 'web', name: 'v4only', node: NODE, ips: ['10.244.1.12'], labels: { role: 'api' } },
  { ns: 'web', name: 'v6only', node: NODE, ips: ['fd00:10:244:1::c'], labels: { role: 'api' } },
  { ns: 'ops', name: 'tool', node: 'node-2', ips: ['10.244.2.5', 'fd00:10:244:2::5'], labels: { app: 'tool' } },
  { ns: 'web', name: 'other', node: 'node-2', ips: ['10.244.2.6', 'fd00:10:244:2::6'], labels: { role: 'other' } },
];

export const ip = (key: string, family: 4 | 6): string => {
  const pod = PODS.find((p) => `${p.ns}/${p.name}` === key)!;
  return pod.ips.find((a) => a.includes(':') === (family === 6))!;
};

/** The policies (all select web/db for ingress): db-ingress allows role=api pods and namespace team=ops on TCP 5432; db-v6-block allows fd00:10:244:2::/64 except fd00:10:244:2::6 on TCP 8080. */
export function manifests(): object[] {
  return [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { podCIDR: V4_CIDR, podCIDRs: [V4_CIDR, V6_CIDR] } },
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-2' },
      spec: { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24', 'fd00:10:244:2::/64'] },
    },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'web', labels: { team: 'web' } } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ops', labels: { team: 'ops' } } },
    ...PODS.map((p) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: p.ns, name: p.name, labels: p.labels },
      spec: { nodeName: p.node, containers: [{ name: 'c', image: 'i', ports: [{ name: 'pg', containerPort: 5432 }] }] },
      status: { phase: 'Running', podIP: p.ips[0], podIPs: p.ips.map((a) => ({ ip: a })) },
    })),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'web', name: 'db-ingress' },
      spec: {
        podSelector: { matchLabels: { role: 'db' } },
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { role: 'api' } } }, { namespaceSelector: { matchLabels: { team: 'ops' } } }],
            ports: [{ protocol: 'TCP', port: 5432 }],
          },
        ],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'web', name: 'db-v6-block' },
      spec: {
        podSelector: { matchLabels: { role: 'db' } },
        ingress: [
          {
            from: [{ ipBlock: { cidr: 'fd00:10:244:2::/64', except: ['fd00:10:244:2::6/128'] } }],
            ports: [{ protocol: 'TCP', port: 8080 }],
          },
        ],
      },
    },
  ];
}

/** Writes the manifests as one JSON List into `dir`; returns the file. */
export function writeCluster(dir: string): string {
  const file = join(dir, 'cluster.json');
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests() }));
  return file;
}
