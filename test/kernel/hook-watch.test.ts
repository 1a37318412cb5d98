// kube-proxy restarts re-prepend KUBE-FORWARD, whose mark rule ACCEPTs masquerade-marked traffic: a
// NodePort client with externalTrafficPolicy Cluster then reaches a pod its policy denies, until
// netfence's jump is first again. The daemon's hook watch (one `iptables -S FORWARD 1` a second) must
// close that hole without waiting for the drift timer, which is set to an hour here so only the watch
// can repair. Real packets from an external client through the sandbox's kube-proxy (iptables mode).
// Twice: on IPv4, and on a dual-stack node over IPv6, where kube-proxy's IPv6 proxier re-prepends its own
// KUBE-FORWARD in ip6tables and the watch must read ip6tables' FORWARD too.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/exec.js';
import { startKubeProxy, type KubeProxy } from '../../sandbox/kube-proxy/index.js';
import { createSandbox, type Sandbox, type SandboxExternal, type SandboxPod } from '../../sandbox/index.js';
import { httpGet, metricValue, startNodeDaemon, waitReady, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(90_000);

const NODE_PORT = 30080;

for (const family of [4, 6] as const)
  describeKernel(`hook watch (IPv${family}): netfence back above KUBE-FORWARD without waiting for the drift timer`, () => {
    let sandbox: Sandbox;
    let pod: SandboxPod;
    let client: SandboxExternal;
    let proxy: KubeProxy;
    let daemon: NodeDaemon | undefined;
    let dir: string;

    beforeAll(async () => {
      sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }], ...(family === 6 ? { ipv6: {} } : {}) });
      pod = await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
      client = await sandbox.addExternal('client');
      // IPv6: a dual-stack Service (IPv6 ClusterIP first), so both proxiers program it.
      const ips = family === 6 ? { clusterIp: 'fd00:10:96::a', clusterIps: ['fd00:10:96::a', '10.96.0.10'] } : { clusterIp: '10.96.0.10' };
      proxy = await startKubeProxy(
        sandbox.nodes(),
        [
          {
            namespace: 'x',
            name: 'web',
            ...ips,
            externalTrafficPolicy: 'Cluster',
            ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80, nodePort: NODE_PORT }],
            endpoints: pod.ips.map((ip) => ({ ip, node: 'n1' })),
          },
        ],
        {
          mode: 'iptables',
          clusterCidr: sandbox.clusterCidr,
          ...(family === 6 && sandbox.clusterCidr6 ? { clusterCidr6: sandbox.clusterCidr6 } : {}),
        },
      );
      dir = mkdtempSync(join(tmpdir(), 'nft-hookwatch-'));
      const items = [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { namespace: 'x', name: 'a', labels: { app: 'a' } },
          spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
          status: { phase: 'Running', podIP: pod.ip, podIPs: pod.ips.map((ip) => ({ ip })) },
        },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { namespace: 'x', name: 'deny-ingress' },
          spec: { podSelector: {}, policyTypes: ['Ingress'] },
        },
      ];
      const file = join(dir, 'cluster.json');
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      const node = sandbox.nodes()[0]!;
      const cidrs = family === 6 && node.ipv6 ? { 'pod-cidr': [node.podCidr, node.ipv6.podCidr] } : {};
      daemon = await startNodeDaemon(
        node,
        { resources: [file] },
        { 'resync-interval-seconds': '3600', 'hook-check-interval-ms': '1000', ...cidrs },
      );
      await waitReady(daemon);
    });

    afterAll(async () => {
      await daemon?.stop();
      await proxy?.stop().catch(() => undefined);
      await sandbox?.destroy();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    const netns = (): string => sandbox.nodeNetns('n1');
    const firstInForward = async (): Promise<string> =>
      (await run(family === 6 ? 'ip6tables' : 'iptables', ['-S', 'FORWARD', '1'], { netns: netns() })).stdout.trim();
    const nodePortReachable = async (): Promise<boolean> =>
      (await sandbox.probe(client.key, { protocol: 'TCP', ip: sandbox.addressOf('node:n1', family), port: NODE_PORT, timeoutMs: 300 })).ok;

    it('repairs a kube-proxy re-prepend within two seconds; the bypass is open only while KUBE-FORWARD is first', async () => {
      expect(await firstInForward()).toMatch(/-j nf-FORWARD$/);
      expect(await nodePortReachable()).toBe(false);

      // The watch ticks every second at a phase we do not control, so one restart may be repaired before the
      // first probe lands: try restarts until one probe is seen inside the window. On IPv6 the probe is slower
      // and loses that race more often (CI once saw 4 repairs of 383–450 ms all beat it), hence up to 10 tries.
      const windows: number[] = [];
      let bypassSeen = false;
      for (let attempt = 0; attempt < 10 && !bypassSeen; attempt++) {
        await proxy.restart('n1');
        const start = performance.now();
        const head = await firstInForward();
        const reached = await nodePortReachable();
        const stillAbove = (await firstInForward()).endsWith('-j KUBE-FORWARD');
        // Through while netfence was already first again is the bug this guards against. Through with
        // KUBE-FORWARD first before the probe but not after it is a race, not a verdict: the SYN may have
        // crossed in the window and the rest of the connection as ESTABLISHED after the repair — try again.
        if (reached) expect(head).toMatch(/-j KUBE-FORWARD$/);
        bypassSeen ||= reached && stillAbove;
        await waitUntil('netfence first in FORWARD again', async () => (await firstInForward()).endsWith('-j nf-FORWARD'), 5000, 10);
        windows.push(Math.round(performance.now() - start));
        expect(await nodePortReachable()).toBe(false);
      }
      // Printed for the record: the time from a re-prepend to netfence on top again (shared, loaded machine).
      console.log(`IPv${family}: KUBE-FORWARD re-prepend → netfence first again: ${windows.join(', ')} ms (hook check every 1000 ms)`);
      expect(bypassSeen).toBe(true);
      expect(Math.max(...windows)).toBeLessThanOrEqual(2000);

      const metrics = (await httpGet(`${daemon!.url}/metrics`)).body;
      // At least one displacement counted: a restart may also be repaired by a sync some other event started
      // before the watch's tick saw it (CI once saw two repairs of 72 and 136 ms and one count), which is no fault.
      expect(metricValue(metrics, 'netfence_hook_displaced_total{chain="FORWARD"}')).toBeGreaterThanOrEqual(1);
      expect(daemon!.logs.some((l) => l.includes(`jump is no longer first (IPv${family})`))).toBe(true);
    });
  });
