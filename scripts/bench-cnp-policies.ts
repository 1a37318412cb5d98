// The 100 generated ClusterNetworkPolicies of the ClusterNetworkPolicy benchmark (70 Admin, 30 Baseline; namespace
// and pod subjects; namespace, pod, networks, nodes and named-port rules; Deny/Accept/Pass), shared by
// scripts/bench-cnp.ts (pure rows) and scripts/bench-cnp-kernel.ts (kernel rows). Deterministic per seed.

import { mulberry32 } from './bench-lib/prng.js';
import type { ClusterNetworkPolicy, ClusterSnapshot, CnpAction, CnpRule, LabelSelector } from '../src/model/index.js';

export function generateClusterPolicies(base: ClusterSnapshot, seed: number, count = 100): ClusterNetworkPolicy[] {
  const rng = mulberry32(seed + 16);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
  const nsSel = (name: string): LabelSelector => ({ matchLabels: { 'kubernetes.io/metadata.name': name }, matchExpressions: [] });
  const ALL: LabelSelector = { matchLabels: {}, matchExpressions: [] };
  const names = base.namespaces.map((n) => n.name);
  const apps = [...new Set(base.pods.map((p) => p.labels['app']).filter((a): a is string => a !== undefined))];

  const rule = (i: number, direction: 'ingress' | 'egress'): CnpRule => {
    const action: CnpAction = pick(['Accept', 'Deny', 'Deny', 'Pass']);
    const kind = i % 4;
    if (kind === 0) return { name: `r${i}`, action, peers: [{ kind: 'namespaces', namespaceSelector: nsSel(pick(names)) }] };
    if (kind === 1) {
      return {
        name: `r${i}`,
        action,
        peers: [{ kind: 'pods', namespaceSelector: ALL, podSelector: { matchLabels: { app: pick(apps) }, matchExpressions: [] } }],
        protocols: [{ kind: 'protocol', protocol: 'TCP', ports: { from: 8000, to: 8100 } }],
      };
    }
    // networks and nodes are egress-only peers; every fifth of these denies node addresses (INPUT for the own node).
    if (kind === 2 && direction === 'egress') {
      return i % 5 === 2
        ? {
            name: `r${i}`,
            action: 'Deny',
            peers: [{ kind: 'nodes', nodeSelector: ALL }],
            protocols: [{ kind: 'protocol', protocol: 'TCP', ports: { from: 10250, to: 10250 } }],
          }
        : { name: `r${i}`, action: 'Deny', peers: [{ kind: 'networks', cidrs: [`169.254.${i % 250}.0/24`, '192.0.2.0/24'] }] };
    }
    return {
      name: `r${i}`,
      action,
      peers: [{ kind: 'namespaces', namespaceSelector: nsSel(pick(names)) }],
      protocols: [
        { kind: 'named', name: 'http' },
        { kind: 'protocol', protocol: 'UDP', ports: { from: 53, to: 53 } },
      ],
    };
  };

  return Array.from({ length: count }, (_, i) => ({
    name: `cnp-${String(i).padStart(3, '0')}`,
    tier: i < Math.round(count * 0.7) ? 'Admin' : 'Baseline',
    priority: Math.floor(rng.next() * 1000),
    subject:
      i % 3 === 0
        ? { kind: 'namespaces', namespaceSelector: nsSel(pick(names)) }
        : i % 3 === 1
          ? { kind: 'namespaces', namespaceSelector: ALL }
          : { kind: 'pods', namespaceSelector: ALL, podSelector: { matchLabels: { app: pick(apps) }, matchExpressions: [] } },
    ingress: Array.from({ length: 3 }, (_, j) => rule(i * 10 + j, 'ingress')),
    egress: Array.from({ length: 3 }, (_, j) => rule(i * 10 + 5 + j, 'egress')),
  }));
}
