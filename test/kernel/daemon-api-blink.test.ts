// A restarting API server answers 404 for ClusterNetworkPolicies for a moment. The daemon must not believe
// one 404: it keeps enforcing the policies it last saw and reports not ready while discovery, asked several
// times and spaced, has not settled whether the CRD is gone. Scripted here: the watches are cut, the next
// ClusterNetworkPolicy request answers 404, discovery answers 404 then "absent" then lists it again. Then the
// CRD is really removed: its policies go, but only once discovery has said so three times in a row.
//
// The policy: an Admin ClusterNetworkPolicy denies slytherin into gryffindor ("Deny: ... the traffic is
// dropped"); hufflepuff, which nothing denies, shows the node otherwise lets traffic in.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { FakeApiServer } from '../fakes/fake-apiserver.js';
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

const HOUSES = ['gryffindor', 'slytherin', 'hufflepuff'] as const;
const CONFIRM_INTERVAL_MS = 1_000;

describeKernel('daemon: a 404 for ClusterNetworkPolicies is confirmed through discovery before it is believed', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  let daemon: NodeDaemon;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-apiblink-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    await Promise.all(HOUSES.map((h) => sandbox.addPod({ namespace: h, name: 'a', node: 'n1' })));
    server = new FakeApiServer({ clusterNetworkPolicyCrd: true });
    await server.start();
    server.create(nodeObject(sandbox.nodes()[0]!));
    for (const h of HOUSES) server.create(namespaceObject(h, { house: h }));
    for (const p of sandbox.pods()) server.create(podObject(p, { app: p.name }));
    server.create({
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'guard' },
      spec: {
        tier: 'Admin',
        priority: 10,
        subject: { namespaces: { matchLabels: { house: 'gryffindor' } } },
        ingress: [{ name: 'no-slytherin', action: 'Deny', from: [{ namespaces: { matchLabels: { house: 'slytherin' } } }] }],
      },
    });
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { kubeconfig: server.writeKubeconfig(dir) },
      { 'batch-window-ms': '10', 'api-gone-confirm-interval-ms': String(CONFIRM_INTERVAL_MS) },
    );
    await waitReady(daemon);
  });

  afterAll(async () => {
    await daemon?.stop().catch(() => undefined);
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const reaches = async (from: string): Promise<boolean> =>
    (await sandbox.probe(`${from}/a`, { protocol: 'TCP', ip: sandbox.addressOf('gryffindor/a'), port: 80, timeoutMs: 500 })).ok;
  const readyz = () => httpGet(`${daemon.url}/readyz`);
  const logTail = () => `\n--- daemon log tail\n${daemon.logs.slice(-15).join('\n')}`;
  const discoveries = () => server.requests.filter((r) => r.path === '/apis/policy.networking.k8s.io/v1alpha2').length;

  it('enforces the ClusterNetworkPolicy: slytherin is denied, hufflepuff gets in', async () => {
    await waitUntil('slytherin denied, hufflepuff allowed', async () => !(await reaches('slytherin')) && (await reaches('hufflepuff')));
  });

  it('one 404 (with discovery blinking too) keeps the policy enforced and the node not ready until the API is back', async () => {
    await waitUntil('the ClusterNetworkPolicy watch', () => server.watchCount('clusternetworkpolicies') > 0);
    server.failRequests('clusternetworkpolicies', 404, 1);
    server.scriptDiscovery(404, 'absent');
    server.dropWatches();
    const blinked = performance.now();
    // Whichever comes first: the node says it is not ready, or the policy stops being enforced.
    let opened = false;
    await waitUntil('not ready, or the deny lost', async () => (opened = await reaches('slytherin')) || (await readyz()).status === 503);
    if (opened) throw new Error(`slytherin reached gryffindor after one 404: the ClusterNetworkPolicy was dropped${logTail()}`);
    const notReady = await readyz();
    expect(notReady.status).toBe(503);
    expect(notReady.body).toContain('ClusterNetworkPolicy API answered 404');
    // As long as the node is not ready, the deny holds.
    let probes = 0;
    while ((await readyz()).status === 503) {
      if (await reaches('slytherin')) throw new Error(`slytherin reached gryffindor while the 404 was being confirmed${logTail()}`);
      probes++;
    }
    expect(probes).toBeGreaterThan(0);
    await waitReady(daemon);
    console.log(`not ready for ${Math.round(performance.now() - blinked)} ms after the 404; ${probes} probes meanwhile, all denied`);
    expect(server.discoveryScriptLeft).toBe(0);
    expect(server.watchCount('clusternetworkpolicies')).toBeGreaterThan(0);
    expect(await reaches('slytherin')).toBe(false);
    expect(await reaches('hufflepuff')).toBe(true);
    expect(daemon.logs.filter((l) => l.includes('no longer enforced'))).toEqual([]);
  });

  it('the CRD really removed: not ready while discovery confirms it, then its policy is gone and the node ready', async () => {
    const before = discoveries();
    const removed = performance.now();
    server.uninstallCrd();
    await waitUntil('not ready', async () => (await readyz()).status === 503);
    await waitUntil('slytherin let in once the removal is confirmed', () => reaches('slytherin'), 20_000);
    await waitReady(daemon);
    console.log(`CRD removal enforced ${Math.round(performance.now() - removed)} ms after it`);
    expect(discoveries() - before).toBeGreaterThanOrEqual(3);
    expect(daemon.logs.filter((l) => l.includes('no longer enforced'))).toHaveLength(1);
  });
});
