// `netfence daemon --resources DIR` follows a manifest however often it is saved by rename (editors,
// `sed -i`, the write-then-rename the README recommends) and then in place: after every save the TCP
// probes show the policy as saved. The periodic content check is pushed out of the test's reach, so what
// is followed here, the file watches reported. And a save made while another file of the folder is renamed
// 200 times a second is enforced while that flood goes on (the reload's debounce is capped, not reset forever).

import { jest } from '@jest/globals';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, type Sandbox } from '../../sandbox/index.js';
import {
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type Labels,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(120_000);

const LABELS: Readonly<Record<string, Labels>> = { a: { app: 'a' }, b: { app: 'b' }, c: { app: 'c' } };

/** x/a accepts TCP 81 from app=`peer` only. */
const onlyInto81 = (peer: string): string =>
  JSON.stringify({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'only-into-a-81', namespace: 'x' },
    spec: {
      podSelector: { matchLabels: { app: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: peer } } }], ports: [{ protocol: 'TCP', port: 81 }] }],
    },
  });

describeKernel('daemon --resources: manifest saves are followed', () => {
  let sandbox: Sandbox;
  let dir: string;
  let daemon: NodeDaemon;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-medits-'));
    sandbox = await createSandbox({ nodes: [{ name: 'n1', podCidr: '10.244.1.0/24' }] });
    await Promise.all(Object.keys(LABELS).map((name) => sandbox.addPod({ namespace: 'x', name, node: 'n1' })));
    const cluster = [nodeObject(sandbox.nodes()[0]!), namespaceObject('x'), ...sandbox.pods().map((p) => podObject(p, LABELS[p.name]!))];
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cluster }));
    writeFileSync(join(dir, 'policy.yaml'), onlyInto81('b'));
    daemon = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { resources: [dir] },
      { 'batch-window-ms': '10', 'manifest-check-interval-ms': '600000' },
    );
    await waitReady(daemon);
  });

  afterAll(async () => {
    await daemon?.stop().catch(() => undefined);
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const reaches = async (from: string): Promise<boolean> =>
    (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: sandbox.addressOf('x/a'), port: 81, timeoutMs: 400 })).ok;

  /** Waits until exactly `peer` of b and c reaches x/a on TCP 81. */
  async function expectOnly(peer: 'b' | 'c', step: string): Promise<void> {
    const other = peer === 'b' ? 'c' : 'b';
    const started = performance.now();
    try {
      await waitUntil(`${step}: only x/${peer} → x/a:81`, async () => (await reaches(peer)) && !(await reaches(other)), 15_000, 100);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- daemon log tail\n${daemon.logs.slice(-15).join('\n')}`, { cause: err });
    }
    console.log(`${step}: enforced ${Math.round(performance.now() - started)} ms after the save`);
  }

  it('five saves by rename, then one in place: each is enforced', async () => {
    const file = join(dir, 'policy.yaml');
    await expectOnly('b', 'start');
    const peers = ['c', 'b', 'c', 'b', 'c'] as const;
    for (const [i, peer] of peers.entries()) {
      writeFileSync(join(dir, '.policy.yaml.tmp'), onlyInto81(peer));
      renameSync(join(dir, '.policy.yaml.tmp'), file);
      await expectOnly(peer, `rename ${i + 1}`);
    }
    writeFileSync(file, onlyInto81('b'));
    await expectOnly('b', 'in-place write');
  });

  it('a save made during a flood of renames of an unrelated file is enforced while the flood goes on', async () => {
    await expectOnly('b', 'before the flood');
    const noise = join(dir, 'noise.yaml');
    let renames = 0;
    // ~200 renames a second, as a busy tool rewriting its own file beside the policies would.
    const flood = setInterval(() => {
      writeFileSync(`${noise}.tmp`, `# ${renames++}\n`);
      renameSync(`${noise}.tmp`, noise);
    }, 5);
    try {
      await expectOnly('b', 'flood running');
      writeFileSync(join(dir, '.policy.yaml.tmp'), onlyInto81('c'));
      renameSync(join(dir, '.policy.yaml.tmp'), join(dir, 'policy.yaml'));
      // The flood stops only after this returns (or times out): the deny was enforced during it.
      await expectOnly('c', 'save during the flood');
    } finally {
      clearInterval(flood);
    }
    console.log(`${renames} renames of an unrelated file meanwhile`);
  });
});
