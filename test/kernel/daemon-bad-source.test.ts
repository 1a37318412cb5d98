// `netfence daemon --resources DIR` whose manifests stop reading completely — the folder renamed away
// (an unmounted volume), emptied, a file caught at 0 bytes or with a syntax error — keeps enforcing the
// last clean read: the kernel stays byte-identical, /readyz says "degraded", the metric is 1, and the
// log says so once per episode. When the folder reads cleanly again the daemon follows edits again.

import { jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxNode } from '../../sandbox/index.js';
import { httpGet, metricValue, startNodeDaemon, waitReady, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { RULES_DIR } from '../helpers/golden.js';
import { ipset, iptablesSave, stable } from '../helpers/kernel-asserts.js';
import { describeKernel, withNetns } from '../helpers/netns.js';

jest.setTimeout(90_000);

const GOOD = readFileSync(join(RULES_DIR, 'seed-db-policy', 'cluster.yaml'), 'utf8');
/** The same cluster without its NetworkPolicy: what a lenient read of a broken file would program. */
const WITHOUT_POLICY = GOOD.slice(0, GOOD.indexOf('---\napiVersion: networking.k8s.io/v1'));

async function kernelState(netns: string): Promise<string> {
  return `${stable(await iptablesSave(netns, 'nft'))}\n${stable(await iptablesSave(netns, 'legacy'))}\n${await ipset(netns, ['save'])}`;
}

const readyz = async (d: NodeDaemon) => httpGet(`${d.url}/readyz`);
const incompleteMetric = async (d: NodeDaemon) => metricValue((await httpGet(`${d.url}/metrics`)).body, 'netfence_source_incomplete');
const episodesLogged = (d: NodeDaemon) => d.logs.filter((l) => l.includes('manifests not read completely')).length;

describeKernel('daemon --resources: a source that stops reading completely keeps the last clean read', () => {
  it('vanished folder, emptied folder, 0-byte file, syntax error: kernel unchanged, degraded, then resumes', async () => {
    await withNetns(async (ns) => {
      const base = mkdtempSync(join(tmpdir(), 'nft-dbad-'));
      const rules = join(base, 'rules');
      const file = join(rules, 'cluster.yaml');
      mkdirSync(rules);
      writeFileSync(file, GOOD);
      // Only what the harness reads of a node: its name, namespace and pod CIDR (no sandbox links needed).
      const node = { name: 'node-1', netns: ns.name, podCidr: '10.244.1.0/24' } as unknown as SandboxNode;
      const daemon = await startNodeDaemon(node, { resources: [rules] });
      try {
        await waitReady(daemon);
        const before = await kernelState(ns.name);
        expect(before).toContain(':nf-pi-'); // the policy's chain: what a lenient read would remove
        expect(await incompleteMetric(daemon)).toBe(0);

        const faults: { name: string; break: () => void; mend: () => void }[] = [
          { name: 'folder renamed away', break: () => renameSync(rules, `${rules}.gone`), mend: () => renameSync(`${rules}.gone`, rules) },
          {
            name: 'folder emptied',
            break: () => renameSync(file, join(base, 'aside.yaml')),
            mend: () => renameSync(join(base, 'aside.yaml'), file),
          },
          { name: 'file caught at 0 bytes', break: () => writeFileSync(file, ''), mend: () => writeFileSync(file, GOOD) },
          {
            name: 'syntax error',
            break: () => writeFileSync(file, GOOD.replace('{role: db}}\n  policyTypes', '{role: db}\n  policyTypes')),
            mend: () => writeFileSync(file, GOOD),
          },
        ];
        for (const [i, fault] of faults.entries()) {
          fault.break();
          await waitUntil(`${fault.name}: /readyz degraded`, async () => (await readyz(daemon)).body.startsWith('ok (degraded: '));
          expect(await incompleteMetric(daemon)).toBe(1);
          // Give a wrong reaction time to show: the batch window is 20 ms, a sync a few ms more.
          await new Promise((r) => setTimeout(r, 1_000));
          expect({ fault: fault.name, state: await kernelState(ns.name) }).toEqual({ fault: fault.name, state: before });
          expect(episodesLogged(daemon)).toBe(i + 1);
          fault.mend();
          await waitUntil(`${fault.name}: /readyz ok again`, async () => (await readyz(daemon)).body === 'ok\n');
          expect(await incompleteMetric(daemon)).toBe(0);
          expect({ fault: fault.name, state: await kernelState(ns.name) }).toEqual({ fault: fault.name, state: before });
        }

        // It still follows real edits: removing the policy on purpose removes its chain.
        writeFileSync(file, WITHOUT_POLICY);
        await waitUntil('policy chain removed', async () => !(await kernelState(ns.name)).includes(':nf-pi-'));
      } finally {
        await daemon.stop();
        rmSync(base, { recursive: true, force: true });
      }
    });
  });
});
