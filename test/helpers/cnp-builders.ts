// Builders for ClusterNetworkPolicy model objects and the upstream conformance cluster (network-policy-api
// conformance/base/manifests.yaml: five "houses", two pods each, agnhost ports), for compiler tests.

import type {
  ClusterNetworkPolicy,
  CnpAction,
  CnpPeer,
  CnpProtocol,
  CnpRule,
  CnpSubject,
  CnpTier,
  LabelSelector,
} from '../../src/model/index.js';
import { makeNamespace, makePod, sel, labels, onNode, containerPorts } from './builders.js';
import type { Namespace, Pod } from '../../src/model/index.js';

export const house = (h: string): LabelSelector => sel({ 'conformance-house': h });

export function cnp(
  name: string,
  tier: CnpTier,
  priority: number,
  subject: CnpSubject,
  rules: { ingress?: CnpRule[]; egress?: CnpRule[] },
): ClusterNetworkPolicy {
  return { name, tier, priority, subject, ingress: rules.ingress ?? [], egress: rules.egress ?? [] };
}

export const nsSubject = (s: LabelSelector): CnpSubject => ({ kind: 'namespaces', namespaceSelector: s });
export const podSubject = (ns: LabelSelector, pods: LabelSelector): CnpSubject => ({
  kind: 'pods',
  namespaceSelector: ns,
  podSelector: pods,
});

export const cRule = (action: CnpAction, peers: CnpPeer[], protocols?: CnpProtocol[], name?: string): CnpRule => ({
  action,
  peers,
  ...(protocols ? { protocols } : {}),
  ...(name ? { name } : {}),
});
export const nsPeerC = (s: LabelSelector): CnpPeer => ({ kind: 'namespaces', namespaceSelector: s });
export const podPeerC = (ns: LabelSelector, pods: LabelSelector): CnpPeer => ({ kind: 'pods', namespaceSelector: ns, podSelector: pods });
export const networks = (...cidrs: string[]): CnpPeer => ({ kind: 'networks', cidrs });
export const nodesPeer = (s: LabelSelector): CnpPeer => ({ kind: 'nodes', nodeSelector: s });
export const cTcp = (from?: number, to?: number): CnpProtocol => ({
  kind: 'protocol',
  protocol: 'TCP',
  ...(from !== undefined ? { ports: { from, to: to ?? from } } : {}),
});
export const cUdp = (from?: number, to?: number): CnpProtocol => ({
  kind: 'protocol',
  protocol: 'UDP',
  ...(from !== undefined ? { ports: { from, to: to ?? from } } : {}),
});
export const cSctp = (from?: number, to?: number): CnpProtocol => ({
  kind: 'protocol',
  protocol: 'SCTP',
  ...(from !== undefined ? { ports: { from, to: to ?? from } } : {}),
});
export const named = (name: string): CnpProtocol => ({ kind: 'named', name });

export const HOUSES = ['gryffindor', 'slytherin', 'hufflepuff', 'ravenclaw', 'forbidden-forrest'] as const;
/** The four houses with pods (forbidden-forrest has none in the upstream base manifests). */
export const POD_HOUSES = ['gryffindor', 'slytherin', 'hufflepuff', 'ravenclaw'] as const;

/** Namespaces `network-policy-conformance-<house>` labelled `conformance-house=<house>`. */
export function houseNamespaces(): Namespace[] {
  return HOUSES.map((h) => makeNamespace(`network-policy-conformance-${h}`, { 'conformance-house': h }));
}

/** Pods `<house>-0/1` with the agnhost ports (80 web, 8080, UDP 53 dns, 5353, SCTP 9003, 9005); -0 on node-1, -1 on node-2. */
export function housePods(): Pod[] {
  const out: Pod[] = [];
  POD_HOUSES.forEach((h, i) => {
    for (const n of [0, 1]) {
      out.push(
        makePod(
          `network-policy-conformance-${h}`,
          `${h}-${n}`,
          `10.244.${n + 1}.${10 + i}`,
          labels({ 'conformance-house': h, app: h }),
          onNode(`node-${n + 1}`),
          containerPorts(
            { name: 'web', containerPort: 80, protocol: 'TCP' },
            { containerPort: 8080, protocol: 'TCP' },
            { name: 'dns', containerPort: 53, protocol: 'UDP' },
            { containerPort: 5353, protocol: 'UDP' },
            { containerPort: 9003, protocol: 'SCTP' },
            { containerPort: 9005, protocol: 'SCTP' },
          ),
        ),
      );
    }
  });
  return out;
}
export const domains = (...names: string[]): CnpPeer => ({ kind: 'domainNames', names });
