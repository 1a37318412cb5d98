// A cluster of the size `netfence map`'s page must stay readable at: 10 namespaces of 10 workloads (two pods
// each, spread over two nodes), each namespace default-denying ingress and letting its tiers talk in order
// (web ← outside, api ← web, db ← api on 5432, cache ← api on 6379), plus one cross-namespace rule per
// namespace (its api ← the next namespace's web) and a db egress policy that allows DNS only.

import { defaultNodeSettings, type ClusterSnapshot, type NodeSettings, type Pod } from '../../src/model/index.js';
import {
  blockPeer,
  containerPorts,
  egress,
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  nsPodPeer,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  snapshot,
  tcp,
  types,
  udp,
} from './builders.js';

const TIERS = ['web', 'api', 'db', 'cache', 'worker', 'cron', 'auth', 'search', 'events', 'ui'] as const;
export const MAP_NODES = [
  { name: 'n1', podCidrs: ['10.244.1.0/24'], addresses: ['192.168.0.1'] },
  { name: 'n2', podCidrs: ['10.244.2.0/24'], addresses: ['192.168.0.2'] },
];

export function tenNamespaces(): ClusterSnapshot {
  const pods: Pod[] = [];
  let host = 2;
  for (let n = 0; n < 10; n++)
    for (const tier of TIERS)
      for (let r = 0; r < 2; r++) {
        const node = r % 2 === 0 ? 'n1' : 'n2';
        const ports = tier === 'db' ? [{ name: 'pg', containerPort: 5432, protocol: 'TCP' as const }] : [];
        pods.push(
          makePod(
            `team-${n}`,
            `${tier}-${r}`,
            `10.244.${node === 'n1' ? 1 : 2}.${host}`,
            onNode(node),
            labels({ app: tier }),
            containerPorts(...ports),
          ),
        );
        if (r === 1) host++;
      }
  const policies = Array.from({ length: 10 }, (_, n) => {
    const ns = `team-${n}`;
    return [
      makePolicy(ns, 'default-deny', selectPods(sel()), types('Ingress')),
      makePolicy(
        ns,
        'web-from-outside',
        selectPods(sel({ app: 'web' })),
        ingress(rule([blockPeer('0.0.0.0/0', '10.0.0.0/8')], [tcp(8080)])),
      ),
      makePolicy(ns, 'api-from-web', selectPods(sel({ app: 'api' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(8080)]))),
      makePolicy(
        ns,
        'api-from-next-team',
        selectPods(sel({ app: 'api' })),
        ingress(rule([nsPodPeer(sel({ 'kubernetes.io/metadata.name': `team-${(n + 1) % 10}` }), sel({ app: 'web' }))], [tcp(8080)])),
      ),
      makePolicy(ns, 'db-from-api', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'api' }))], [tcp('pg')]))),
      makePolicy(ns, 'cache-from-api', selectPods(sel({ app: 'cache' })), ingress(rule([podPeer(sel({ app: 'api' }))], [tcp(6379)]))),
      makePolicy(ns, 'db-egress-dns', selectPods(sel({ app: 'db' })), types('Egress'), egress(rule([], [udp(53), tcp(53)]))),
    ];
  }).flat();
  return snapshot({
    nodes: MAP_NODES,
    namespaces: Array.from({ length: 10 }, (_, n) => makeNamespace(`team-${n}`)),
    pods,
    policies,
  });
}

export const mapSettingsFor = (node: string): NodeSettings =>
  defaultNodeSettings(node, MAP_NODES.find((n) => n.name === node)?.podCidrs ?? []);
