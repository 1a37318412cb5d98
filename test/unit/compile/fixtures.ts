// A small two-node cluster the compiler tests share: three namespaces, pods on both nodes with labels and
// named container ports. node-1 (this node) owns 10.244.1.0/24, node-2 owns 10.244.2.0/24.

import type { ClusterSnapshot, NetworkPolicy, Pod } from '../../../src/model/index.js';
import { containerPorts, labels, makeNamespace, makePod, onNode, snapshot } from '../../helpers/builders.js';

export const NODE2 = 'node-2';

export const namespaces = [
  makeNamespace('prod', { team: 'a', env: 'prod' }),
  makeNamespace('dev', { team: 'b', env: 'dev' }),
  makeNamespace('ops', { team: 'ops' }),
];

export const IP = {
  db: '10.244.1.10',
  web: '10.244.1.11',
  bare: '10.244.1.12',
  api: '10.244.2.10',
  devWeb: '10.244.1.20',
  devTool: '10.244.2.20',
  prom: '10.244.2.30',
} as const;

export const pods: readonly Pod[] = [
  makePod(
    'prod',
    'db',
    IP.db,
    labels({ app: 'db', tier: 'data' }),
    containerPorts({ name: 'pg', containerPort: 5432, protocol: 'TCP' }, { name: 'metrics', containerPort: 9100, protocol: 'TCP' }),
  ),
  makePod(
    'prod',
    'web',
    IP.web,
    labels({ app: 'web', tier: 'front' }),
    containerPorts({ name: 'http', containerPort: 8080, protocol: 'TCP' }),
  ),
  makePod('prod', 'bare', IP.bare),
  makePod(
    'prod',
    'api',
    IP.api,
    onNode(NODE2),
    labels({ app: 'api' }),
    containerPorts({ name: 'http', containerPort: 8081, protocol: 'TCP' }, { name: 'dns', containerPort: 5353, protocol: 'UDP' }),
  ),
  makePod('dev', 'web', IP.devWeb, labels({ app: 'web' }), containerPorts({ name: 'http', containerPort: 9090, protocol: 'TCP' })),
  makePod('dev', 'tool', IP.devTool, onNode(NODE2), labels({ app: 'tool' })),
  makePod('ops', 'prom', IP.prom, onNode(NODE2), labels({ app: 'prom' })),
];

export const cluster = (policies: readonly NetworkPolicy[], extraPods: readonly Pod[] = []): ClusterSnapshot =>
  snapshot({ namespaces, pods: [...pods, ...extraPods], policies });
