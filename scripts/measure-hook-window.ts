// How long KUBE-FORWARD sits above netfence after a kube-proxy restart re-prepends it: the window in
// which a masquerade-marked NodePort client (externalTrafficPolicy Cluster) reaches pods their policy
// denies. A one-node sandbox with the sandbox's kube-proxy (iptables mode) and a netfence daemon (drift
// timer one hour, so only the hook watch repairs); each round re-prepends kube-proxy's jumps at a random
// phase of the watch's timer and polls `iptables -S FORWARD 1` every 5 ms until netfence's jump is first.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/measure-hook-window.ts [--rounds 10] [--interval-ms 1000]

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDaemon } from '../src/daemon/start.js';
import { loadConfig } from '../src/config/load.js';
import { run } from '../src/dataplane/exec.js';
import { createLogger } from '../src/log.js';
import { createSandbox } from '../sandbox/index.js';
import { startKubeProxy } from '../sandbox/kube-proxy/index.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '10' }, 'interval-ms': { type: 'string', default: '1000' } },
});
const rounds = Number(values.rounds);
const intervalMs = values['interval-ms'] ?? '1000';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
const dir = mkdtempSync(join(tmpdir(), 'nft-hookwindow-'));
try {
  const pod = await sandbox.addPod({ namespace: 'x', name: 'a', node: 'n1' });
  const node = sandbox.nodes()[0]!;
  const proxy = await startKubeProxy(
    [node],
    [
      {
        namespace: 'x',
        name: 'web',
        clusterIp: '10.96.0.10',
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80, nodePort: 30080 }],
        endpoints: [{ ip: pod.ip, node: 'n1' }],
      },
    ],
    { mode: 'iptables', clusterCidr: sandbox.clusterCidr },
  );
  const file = join(dir, 'cluster.json');
  const items = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { namespace: 'x', name: 'a' },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }] },
      status: { phase: 'Running', podIP: pod.ip },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { namespace: 'x', name: 'deny' },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    },
  ];
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  const { config } = loadConfig({
    argvFlags: {
      'node-name': 'n1',
      'listen-address': '127.0.0.1:0',
      'pod-cidr': [node.podCidr],
      'flannel-subnet-env': '/nonexistent/subnet.env',
      'resync-interval-seconds': '3600',
      'hook-check-interval-ms': intervalMs,
    },
    env: {},
  });
  const daemon = await startDaemon(config, {
    resources: [file],
    kubeconfig: undefined,
    netns: node.netns,
    logger: createLogger({ level: 'error', format: 'json' }),
  });
  const first = async () => (await run('iptables', ['-S', 'FORWARD', '1'], { netns: node.netns })).stdout.trim();
  while (!(await first()).endsWith('-j nf-FORWARD')) await sleep(50);

  const windows: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await sleep(Math.random() * Number(intervalMs));
    await proxy.restart('n1');
    const start = performance.now();
    while (!(await first()).endsWith('-j nf-FORWARD')) await sleep(5);
    windows.push(performance.now() - start);
  }
  await daemon.stop();
  await proxy.stop();
  const sorted = [...windows].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  console.log(
    `KUBE-FORWARD re-prepend -> netfence first again (hook check every ${intervalMs} ms, ${rounds} rounds): min ${at(0)} ms, median ${at(0.5)} ms, max ${Math.round(sorted.at(-1)!)} ms`,
  );
  console.log(
    `command: node --import ./scripts/register-ts.mjs scripts/measure-hook-window.ts --rounds ${rounds} --interval-ms ${intervalMs}`,
  );
} finally {
  await sandbox.destroy();
  rmSync(dir, { recursive: true, force: true });
}
