// `netfence map --diff OLD NEW`, golden cases: two manifest sets, the connections the change opens and
// closes with the rule responsible, and the exit code (0 no change, 1 changes, 2 error). Every expected line
// is written from the spec sentence the case quotes, not copied from the output.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { main } from '../../../src/cli/main.js';

const root = mkdtempSync(join(tmpdir(), 'nft-map-diff-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// shop: web (app=web), api (app=api), db (app=db, container port "pg" 5432); ops: tool (app=tool). Two nodes.
const CLUSTER = `
apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {podCIDR: 10.244.1.0/24}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {podCIDR: 10.244.2.0/24}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: ops}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c}]}
status: {phase: Running, podIP: 10.244.1.10}
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: shop, labels: {app: api}}
spec: {nodeName: n2, containers: [{name: c}]}
status: {phase: Running, podIP: 10.244.2.11}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop, labels: {app: db}}
spec: {nodeName: n2, containers: [{name: c, ports: [{name: pg, containerPort: 5432}]}]}
status: {phase: Running, podIP: 10.244.2.12}
---
apiVersion: v1
kind: Pod
metadata: {name: tool, namespace: ops, labels: {app: tool}}
spec: {nodeName: n1, containers: [{name: c}]}
status: {phase: Running, podIP: 10.244.1.13}
`;

const DB_FROM_API = (ports: string) => `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-api, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: api}}}]
    ports: ${ports}
`;

const DENY_EGRESS_TOOL = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tool-no-egress, namespace: ops}
spec:
  podSelector: {matchLabels: {app: tool}}
  policyTypes: [Egress]
`;

function manifests(name: string, ...policies: string[]): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'cluster.yaml'), [CLUSTER, ...policies].join('\n---\n'));
  return dir;
}

async function diff(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(['map', '--diff', ...argv], { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

describe('netfence map --diff', () => {
  it('exits 0 and says so when nothing changes', async () => {
    const a = manifests('same-a', DB_FROM_API('[{port: 5432}]'));
    const b = manifests('same-b', DB_FROM_API('[{port: pg}]'));
    // The named port pg is 5432 on db: the same connections.
    expect(await diff(a, b, '--format', 'text')).toEqual({ code: 0, out: 'No connection opened or closed.\n', err: '' });
  });

  it('a first ingress policy closes every other way into its pods, and names it', async () => {
    // "a pod is isolated for ingress if there is any NetworkPolicy that both selects the pod and has
    // "Ingress" in its policyTypes"; then only what a rule admits is allowed: api on tcp/5432, which was
    // allowed before too (nothing isolated anything), so nothing opens and everything else into db closes.
    const { code, out } = await diff(manifests('none'), manifests('db-policy', DB_FROM_API('[{port: 5432}]')), '--format', 'text');
    expect(code).toBe(1);
    const isolated = 'ingress isolated for ingress by shop/db-from-api; no rule admits it';
    expect(out).toBe(
      [
        '0 connections opened, 4 closed (groups of the new cluster).',
        '',
        'ops/tool -> shop/db',
        '  - closed every port (tcp, udp, sctp)',
        `    closed every port (tcp, udp, sctp): ${isolated} (allowed before by egress not isolated for egress; ingress not isolated for ingress)`,
        'shop/api -> shop/db',
        '  - closed tcp/1-5431, tcp/5433-65535, udp (all ports), sctp (all ports)',
        `    closed tcp/1-5431, tcp/5433-65535, udp (all ports), sctp (all ports): ${isolated} (allowed before by egress not isolated for egress; ingress not isolated for ingress)`,
        'shop/web -> shop/db',
        '  - closed every port (tcp, udp, sctp)',
        `    closed every port (tcp, udp, sctp): ${isolated} (allowed before by egress not isolated for egress; ingress not isolated for ingress)`,
        'world:0 -> shop/db',
        '  - closed every port (tcp, udp, sctp)',
        `    closed every port (tcp, udp, sctp): ${isolated} (allowed before by egress from outside the cluster: no egress judged; ingress not isolated for ingress)`,
        '',
      ].join('\n'),
    );
  });

  it('an egress rule added to an isolated pod opens what it admits, with the rule', async () => {
    // "If egress is isolated, the only outbound connections allowed are those ... allowed by the egress list".
    const toDb = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: tool-to-db, namespace: ops}
spec:
  podSelector: {matchLabels: {app: tool}}
  policyTypes: [Egress]
  egress:
  - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: shop}}, podSelector: {matchLabels: {app: db}}}]
    ports: [{port: 5432}]
`;
    const { code, out } = await diff(
      manifests('deny-tool', DENY_EGRESS_TOOL),
      manifests('tool-to-db', DENY_EGRESS_TOOL, toDb),
      '--format',
      'json',
    );
    expect(code).toBe(1);
    expect(JSON.parse(out)).toEqual({
      family: 4,
      changes: [
        {
          from: 'ops/tool',
          to: 'shop/db',
          opened: [{ proto: 'tcp', from: 5432, to: 5432 }],
          closed: [],
          because: ['opened tcp/5432: egress NetworkPolicy ops/tool-to-db rule egress:0; ingress not isolated for ingress'],
        },
      ],
      added: [],
      removed: [],
    });
  });

  it('narrowing a port range closes the rest of it and names the policy that now denies it', async () => {
    const { code, out } = await diff(
      manifests('range', DB_FROM_API('[{port: 5000, endPort: 5500}]')),
      manifests('one-port', DB_FROM_API('[{port: 5432}]')),
      '--format',
      'text',
    );
    expect(code).toBe(1);
    expect(out).toBe(
      [
        '0 connections opened, 1 closed (groups of the new cluster).',
        '',
        'shop/api -> shop/db',
        '  - closed tcp/5000-5431, tcp/5433-5500',
        '    closed tcp/5000-5431, tcp/5433-5500: ingress isolated for ingress by shop/db-from-api; no rule admits it (allowed before by egress not isolated for egress; ingress NetworkPolicy shop/db-from-api rule ingress:0)',
        '',
      ].join('\n'),
    );
  });

  it('exits 2 naming the problem when a side cannot be read completely', async () => {
    const { code, err } = await diff(manifests('ok'), join(root, 'no-such-dir'));
    expect(code).toBe(2);
    expect(err).toContain('the new cluster');
    expect(err).toContain('no-such-dir');
  });
});
