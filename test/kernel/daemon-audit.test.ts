// Audit mode with real packets: two sandbox nodes, a daemon on each, one API server. A policy annotated
// `netfence.io/mode: audit` must leave every connection decided as before, and the flow log of each node
// must name exactly the connections it would change; removing the annotation then enforces it.
// Expectations come from the spec: an audited policy is absent for the real verdict ("a pod is not
// isolated" by it) and present for the audit verdict.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlowRecord } from '../../src/observe/flow-log.js';
import { createSandbox, formatMatrix, matrixOf, waitForMatrix, type Matrix, type Sandbox } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  httpGet,
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(90_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
const PODS = [
  { namespace: 'shop', name: 'web', node: 'n1' },
  { namespace: 'shop', name: 'db', node: 'n1' },
  { namespace: 'shop', name: 'cart', node: 'n2' },
  { namespace: 'other', name: 'client', node: 'n2' },
] as const;
const KEYS = PODS.map((p) => `${p.namespace}/${p.name}`);

// Enforced throughout: shop/db takes ingress from shop/web only.
const DB_FROM_WEB: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'shop', name: 'db-from-web' },
  spec: {
    podSelector: { matchLabels: { app: 'db' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }],
  },
};
const defaultDeny = (audit: boolean): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'shop', name: 'default-deny', ...(audit ? { annotations: { 'netfence.io/mode': 'audit' } } : {}) },
  spec: { podSelector: {}, policyTypes: ['Ingress'] },
});
// Audited: it would let other/client into shop/db, which db-from-web keeps out today.
const DB_FROM_CLIENT: KubeObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { namespace: 'shop', name: 'db-from-client', annotations: { 'netfence.io/mode': 'audit' } },
  spec: {
    podSelector: { matchLabels: { app: 'db' } },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'other' } } }] }],
  },
};

/** Probes TCP 80 between every pair until the sandbox shows `reachable` (10 s at most). */
async function convergeTo(sandbox: Sandbox, reachable: (from: string, to: string) => boolean): Promise<void> {
  const expected: Matrix = matrixOf(KEYS, KEYS, reachable);
  const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: 80, deadlineMs: 10_000, timeoutMs: 500 });
  if (!result.ok) throw new Error(`not converged within 10 s (${result.rounds} rounds):\n${formatMatrix(result.observed, { expected })}`);
}

/** Every daemon's audit records (`/flows?audit=true`). */
async function auditRecordsOf(daemons: readonly NodeDaemon[]): Promise<FlowRecord[]> {
  const out: FlowRecord[] = [];
  for (const d of daemons) {
    const answer = await httpGet(`${d.url}/flows?audit=true`);
    expect(answer.status).toBe(200);
    out.push(...(JSON.parse(answer.body) as { records: FlowRecord[] }).records);
  }
  return out;
}

/** The distinct `src -> dst` pairs of the port-80 records with this reason, sorted. */
const cells = (records: readonly FlowRecord[], reason: string): string[] =>
  [...new Set(records.filter((r) => r.reason === reason && r.port === 80).map((r) => `${r.src.pod} -> ${r.dst.pod}`))].sort();

// The spec's answer with db-from-web alone: only shop/db is isolated, and shop/web may reach it.
const enforcedOnly = (from: string, to: string): boolean => from === to || to !== 'shop/db' || from === 'shop/web';
// With shop/default-deny enforced too: every shop pod is isolated; nothing but shop/web → shop/db is allowed.
const withDefaultDeny = (from: string, to: string): boolean =>
  from === to || !to.startsWith('shop/') || (to === 'shop/db' && from === 'shop/web');

describeKernel('audit mode: an audited policy is logged, not enforced, until its annotation goes', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  const daemons: NodeDaemon[] = [];

  const converge = (reachable: (from: string, to: string) => boolean): Promise<void> => convergeTo(sandbox, reachable);
  const auditRecords = (): Promise<FlowRecord[]> => auditRecordsOf(daemons);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-daemon-audit-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map((p) => sandbox.addPod(p)));
    server = new FakeApiServer();
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const ns of ['shop', 'other']) server.create(namespaceObject(ns));
    for (const p of sandbox.pods()) server.create(podObject(p, { app: p.key.split('/')[1]! }));
    server.create(DB_FROM_WEB);
    const kubeconfig = server.writeKubeconfig(dir);
    for (const node of sandbox.nodes()) daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10' }));
    await Promise.all(daemons.map((d) => waitReady(d)));
    await converge(enforcedOnly);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('audited default-deny and allow: every pair connects as before; the flow log names exactly the pairs they would change', async () => {
    server.create(defaultDeny(true));
    server.create(DB_FROM_CLIENT);
    const wouldDeny = KEYS.flatMap((from) => KEYS.map((to) => [from, to] as const))
      .filter(([from, to]) => enforcedOnly(from, to) && !withDefaultDeny(from, to))
      .map(([from, to]) => `${from} -> ${to}`)
      .sort();
    // Every round of probes must see the enforced matrix, whichever sync it met; rounds go on until the
    // audited chains are programmed and each pair the default-deny would drop has been logged once.
    await waitUntil(
      'an audit record for every pair the default-deny would drop',
      async () => {
        await converge(enforcedOnly);
        return cells(await auditRecords(), 'would-deny').length >= wouldDeny.length;
      },
      30_000,
    );
    const records = await auditRecords();
    expect(cells(records, 'would-deny')).toEqual(wouldDeny);
    // other/client → shop/db: dropped now by db-from-web, the audited db-from-client would open it.
    expect(cells(records, 'would-allow')).toEqual(['other/client -> shop/db']);
    const toWeb = records.find((r) => r.reason === 'would-deny' && r.dst.pod === 'shop/web');
    expect(toWeb).toMatchObject({ direction: 'ingress', pod: 'shop/web', policies: ['shop/default-deny'] });
    expect(toWeb!.because).toContain('allowed now; would be DROPPED by shop/default-deny (audit)');
    // The drops view is untouched: the only real drops are those db-from-web makes.
    for (const d of daemons) {
      const drops = JSON.parse((await httpGet(`${d.url}/flows`)).body) as { records: FlowRecord[] };
      for (const r of drops.records) expect(`${r.src.pod} -> ${r.dst.pod}`).toMatch(/-> shop\/db$/);
      for (const r of drops.records) expect(r.policies).toEqual(['shop/db-from-web']);
    }
    const n1Metrics = (await httpGet(`${daemons[0]!.url}/metrics`)).body;
    expect(n1Metrics).toMatch(
      /netfence_audit_connections_total\{namespace="shop",pod="web",direction="ingress",policy="shop\/default-deny"\} [1-9]/,
    );
  });

  it('the annotation removed: exactly the pairs the flow log named are blocked', async () => {
    server.update(defaultDeny(false));
    await converge(withDefaultDeny);
  });
});

// An audited Admin-tier Deny: "Admin tier … Deny drops the selected traffic", but only once enforced.
const guard = (audit: boolean): KubeObject => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'guard', ...(audit ? { annotations: { 'netfence.io/mode': 'audit' } } : {}) },
  spec: {
    tier: 'Admin',
    priority: 10,
    subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'shop' } } },
    ingress: [{ name: 'no-other', action: 'Deny', from: [{ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'other' } } }] }],
  },
});
// Enforced throughout: a Baseline Deny of shop/cart into shop/web, which the Admin tier never reaches today.
const BASELINE: KubeObject = {
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name: 'baseline' },
  spec: {
    tier: 'Baseline',
    priority: 10,
    subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } } },
    ingress: [
      { name: 'no-cart', action: 'Deny', from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'cart' } } } }] },
    ],
  },
};
const cnpEnforcedOnly = (from: string, to: string): boolean => from === to || !(from === 'shop/cart' && to === 'shop/web');
const cnpWithGuard = (from: string, to: string): boolean =>
  cnpEnforcedOnly(from, to) && !(from.startsWith('other/') && to.startsWith('shop/'));

describeKernel('audit mode: an audited Admin-tier ClusterNetworkPolicy Deny', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  const daemons: NodeDaemon[] = [];

  const converge = (reachable: (from: string, to: string) => boolean): Promise<void> => convergeTo(sandbox, reachable);
  const auditRecords = (): Promise<FlowRecord[]> => auditRecordsOf(daemons);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-daemon-audit-cnp-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map((p) => sandbox.addPod(p)));
    server = new FakeApiServer({ clusterNetworkPolicyCrd: true });
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const ns of ['shop', 'other']) server.create(namespaceObject(ns));
    for (const p of sandbox.pods()) server.create(podObject(p, { app: p.key.split('/')[1]! }));
    server.create(BASELINE);
    const kubeconfig = server.writeKubeconfig(dir);
    for (const node of sandbox.nodes()) daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10' }));
    await Promise.all(daemons.map((d) => waitReady(d)));
    await converge(cnpEnforcedOnly);
  }, 90_000);

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('audited: every pair connects as before; the flow log names exactly the pairs the Deny would drop', async () => {
    server.create(guard(true));
    const wouldDeny = KEYS.flatMap((from) => KEYS.map((to) => [from, to] as const))
      .filter(([from, to]) => cnpEnforcedOnly(from, to) && !cnpWithGuard(from, to))
      .map(([from, to]) => `${from} -> ${to}`)
      .sort();
    await waitUntil(
      'an audit record for every pair the Admin Deny would drop',
      async () => {
        await converge(cnpEnforcedOnly);
        return cells(await auditRecords(), 'would-deny').length >= wouldDeny.length;
      },
      30_000,
    );
    const records = await auditRecords();
    expect(cells(records, 'would-deny')).toEqual(wouldDeny);
    expect(cells(records, 'would-allow')).toEqual([]);
    expect(records.find((r) => r.dst.pod === 'shop/db')).toMatchObject({ direction: 'ingress', pod: 'shop/db', policies: ['guard'] });
  });

  it('the annotation removed: exactly those pairs are blocked', async () => {
    server.update(guard(false));
    await converge(cnpWithGuard);
  });
});
