// kube-proxy's IPVS mode never sends same-node Service traffic through FORWARD, so netfence must not
// claim to enforce there. This kernel has no IP_VS (and no dummy driver either), so what can be proven
// is detection: a device named kube-ipvs0 holding Service addresses (kube-proxy's IPVS proxier creates
// it as a dummy; a bridge stands in here, detection goes by name) in a sandbox node makes the daemon
// refuse readiness, log why, and set netfence_kube_proxy_ipvs; removing it lifts the refusal at the next
// periodic resync. Enforcement on the IPVS path itself is not implemented.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/exec.js';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import { httpGet, metricValue, startNodeDaemon, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(60_000);

describeKernel('IPVS mode is detected and refused, not silently bypassed', () => {
  let sandbox: Sandbox;
  let daemon: NodeDaemon | undefined;
  let dir: string;

  beforeAll(async () => {
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    const netns = sandbox.nodeNetns('n1');
    await run('ip', ['-n', netns, '-batch', '-'], {
      input: 'link add kube-ipvs0 type bridge\naddr add 10.96.0.1/32 dev kube-ipvs0\naddr add 10.96.0.10/32 dev kube-ipvs0\n',
    });
    dir = mkdtempSync(join(tmpdir(), 'nft-ipvs-'));
    const file = join(dir, 'cluster.json');
    writeFileSync(
      file,
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }] }),
    );
    daemon = await startNodeDaemon(sandbox.nodes()[0]!, { resources: [file] }, { 'resync-interval-seconds': '1' });
  });

  afterAll(async () => {
    await daemon?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stays not ready with the reason, a log line and a metric while kube-ipvs0 exists; ready once it is gone', async () => {
    const d = daemon!;
    // The first sync is programmed (rules are still written: they hold for every non-IPVS path) …
    await waitUntil('first sync', () => d.daemon.reconciler.completedSyncs > 0);
    const ready = await httpGet(`${d.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.body).toContain('IPVS mode');
    expect(metricValue((await httpGet(`${d.url}/metrics`)).body, 'netfence_kube_proxy_ipvs')).toBe(1);
    expect(
      d.logs.some((l) => l.includes('never crosses FORWARD') && l.includes('kube-ipvs0 device (bridge) with 2 service address(es)')),
    ).toBe(true);

    await run('ip', ['-n', sandbox.nodeNetns('n1'), 'link', 'del', 'kube-ipvs0']);
    await waitUntil('/readyz 200 after kube-ipvs0 is gone', async () => (await httpGet(`${d.url}/readyz`)).status === 200, 10_000);
    expect(metricValue((await httpGet(`${d.url}/metrics`)).body, 'netfence_kube_proxy_ipvs')).toBe(0);
  });
});
