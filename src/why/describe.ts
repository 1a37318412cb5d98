// Policy rules and peers in a few words, for the answer's lines: `app=db in namespaces ns=shop on tcp/5432`.

import type { ClusterNetworkPolicy, CnpTier, LabelSelector, NetworkPolicy, PolicyPeer, PolicyPort, PolicyRule } from '../model/index.js';

export function selectorText(s: LabelSelector, all: string): string {
  const parts = [
    ...Object.entries(s.matchLabels).map(([k, v]) => `${k}=${v}`),
    ...s.matchExpressions.map((e) => {
      switch (e.operator) {
        case 'In':
          return `${e.key} in (${e.values.join(',')})`;
        case 'NotIn':
          return `${e.key} notin (${e.values.join(',')})`;
        case 'Exists':
          return e.key;
        case 'DoesNotExist':
          return `!${e.key}`;
      }
    }),
  ];
  return parts.length === 0 ? all : parts.join(',');
}

export function peerText(peer: PolicyPeer): string {
  if (peer.ipBlock)
    return peer.ipBlock.except.length > 0 ? `${peer.ipBlock.cidr} except ${peer.ipBlock.except.join(',')}` : peer.ipBlock.cidr;
  const pods = peer.podSelector ? selectorText(peer.podSelector, 'all pods') : 'all pods';
  return peer.namespaceSelector ? `${pods} in namespaces ${selectorText(peer.namespaceSelector, '(all)')}` : pods;
}

export function portText(port: PolicyPort): string {
  const proto = port.protocol.toLowerCase();
  if (port.port === undefined) return `${proto} (all ports)`;
  return `${proto}/${port.port}${port.endPort !== undefined ? `-${port.endPort}` : ''}`;
}

/** `app=api on tcp/5432`: who a rule admits, and on what. */
export function ruleText(rule: PolicyRule): string {
  const peers = rule.peers && rule.peers.length > 0 ? rule.peers.map(peerText).join(' or ') : 'anyone';
  const ports = rule.ports && rule.ports.length > 0 ? ` on ${rule.ports.map(portText).join(', ')}` : '';
  return `${peers}${ports}`;
}

/** The rule `ingress:0` of a NetworkPolicy, when the snapshot still has it. */
export function policyRule(policies: readonly NetworkPolicy[], key: string, rule: string): PolicyRule | undefined {
  const [direction, index] = rule.split(':');
  const policy = policies.find((p) => `${p.namespace}/${p.name}` === key);
  const rules = direction === 'ingress' ? policy?.ingress : policy?.egress;
  return rules?.[Number(index)];
}

/** A ClusterNetworkPolicy's tier, from its name in a rule comment (`ClusterNetworkPolicy <name>`). */
export function cnpTier(cnps: readonly ClusterNetworkPolicy[] | undefined, policy: string): CnpTier | undefined {
  const name = policy.replace(/^ClusterNetworkPolicy /, '');
  return cnps?.find((c) => c.name === name)?.tier;
}
