// ClusterNetworkPolicy Deny drops in the flow log, with real packets: a daemon in a one-node sandbox (flow logs on,
// as by default), a ClusterNetworkPolicy with a `domainNames` Accept above a Deny of everything, and another whose
// plain ingress Deny has no domain rule anywhere near it. A subject pod connecting to an address none of its
// lookups returned is dropped by the Deny; `netfence drops` and the daemon's flow-log line name that Deny and the
// domainNames rule a lookup would have opened, and `why --live` sees the kernel's drop. The plain Deny's drop is
// a record too, naming only itself; and so is the drop by a NetworkPolicy below a domain rule. A pod whose Admin tier
// holds an audited ClusterNetworkPolicy too (judged twice, through verdict-only copies: docs/audit.md) has its
// enforced Deny's drop recorded the same way, its audited Deny's would-deny as before, and nothing for what passes.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { dropsCommand } from '../../src/cli/drops.js';
import { main } from '../../src/cli/main.js';
import type { FlowRecord } from '../../src/observe/flow-log.js';
import { podObject, startNodeDaemon, waitReady, waitUntil, type NodeDaemon } from '../helpers/daemon-harness.js';
import { flowLineErrors } from '../helpers/flow-record-schema.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(60_000);

const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const GOOD = {
  name: 'good',
  action: 'Accept',
  to: [{ domainNames: ['good.example', '*.cdn.example'] }],
  protocols: [{ tcp: { destinationPort: { number: 80 } } }],
};

describeKernel('flow log: ClusterNetworkPolicy Deny drops, and the domainNames rule a lookup would have opened', () => {
  let sandbox: Sandbox;
  let daemon: NodeDaemon;
  let dir: string;
  let file: string;
  const pods = {} as Record<'client' | 'web' | 'intruder' | 'isolated' | 'trial', SandboxPod>;
  const drops = async (...args: string[]): Promise<string> => {
    let out = '';
    const code = await dropsCommand(['--url', daemon.url, ...args], { out: (t) => void (out += t), err: (t) => void (out += t) });
    expect(code).toBe(0);
    return out;
  };
  const records = async (...args: string[]): Promise<FlowRecord[]> =>
    (await drops('--json', ...args))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as FlowRecord);
  const cnp = (name: string, labels: Record<string, string>, rules: Record<string, unknown>, audit = false) => ({
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name, ...(audit ? { annotations: { 'netfence.io/mode': 'audit' } } : {}) },
    spec: { tier: 'Admin', priority: 1, subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: labels } } }, ...rules },
  });
  const toApp = (app: string) => ({ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app } } } });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-cnp-drops-'));
    sandbox = await createSandbox({ nodes: [NODE] });
    for (const name of ['client', 'web', 'intruder', 'isolated', 'trial'] as const)
      pods[name] = await sandbox.addPod({ namespace: 'x', name, node: 'n1' });
    file = join(dir, 'cluster.json');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: NODE.podCidr }, status: { addresses: [] } },
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } },
          podObject(pods.client, { role: 'client' }),
          podObject(pods.web, { app: 'web' }),
          podObject(pods.intruder, { app: 'intruder' }),
          podObject(pods.isolated, { role: 'isolated' }),
          podObject(pods.trial, { role: 'trial' }),
          cnp(
            'by-name',
            { role: 'client' },
            {
              egress: [GOOD, { name: 'nothing-else', action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] }],
            },
          ),
          cnp(
            'lock',
            { app: 'web' },
            {
              ingress: [
                {
                  name: 'no-intruder',
                  action: 'Deny',
                  from: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'intruder' } } } }],
                },
              ],
            },
          ),
          // The same domain rule with nothing below it in the Admin tier: a NetworkPolicy isolates the pod's egress.
          cnp('by-name-only', { role: 'isolated' }, { egress: [GOOD] }),
          // Enforced: x/trial may not reach x/intruder (below a domain rule).
          cnp('trial-lock', { role: 'trial' }, { egress: [GOOD, { name: 'no-intruder', action: 'Deny', to: [toApp('intruder')] }] }),
          // Audited, and tried first (same priority, earlier name): a domain rule of its own, and a Deny of x/web's port 81.
          cnp(
            'trial-audit',
            { role: 'trial' },
            {
              egress: [
                { ...GOOD, name: 'maybe', to: [{ domainNames: ['trial.example'] }] },
                { name: 'not-web-81', action: 'Deny', to: [toApp('web')], protocols: [{ tcp: { destinationPort: { number: 81 } } }] },
              ],
            },
            true,
          ),
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'NetworkPolicy',
            metadata: { name: 'no-egress', namespace: 'x' },
            spec: { podSelector: { matchLabels: { role: 'isolated' } }, policyTypes: ['Egress'] },
          },
        ],
      }),
    );
    daemon = await startNodeDaemon(sandbox.nodes()[0]!, { resources: [file] }, { 'batch-window-ms': '10' });
    await waitReady(daemon);
  });

  afterAll(async () => {
    await daemon?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a connection to an address no lookup returned: dropped by the Deny, and the domain rule named', async () => {
    const web = pods.web.ip;
    expect((await sandbox.probe('x/client', { protocol: 'TCP', ip: web, port: 80, timeoutMs: 500 })).ok).toBe(false);
    const because =
      `dropped by ClusterNetworkPolicy by-name rule egress:1 nothing-else Deny; no lookup by x/client of good.example or ` +
      `*.cdn.example had learned ${web} (ClusterNetworkPolicy by-name rule egress:0 good Accept)`;
    await waitUntil('the drop record', async () => (await records('--pod', 'x/client')).some((r) => r.port === 80), 5000);
    const [record] = await records('--pod', 'x/client');
    expect(record).toMatchObject({
      src: { pod: 'x/client' },
      dst: { pod: 'x/web' },
      protocol: 'tcp',
      port: 80,
      direction: 'egress',
      reason: 'cluster-deny',
      pod: 'x/client',
      policies: ['by-name'],
      because,
      afterLookup: [
        { policy: 'ClusterNetworkPolicy by-name', rule: 'egress:0 good Accept', pod: 'x/client', names: ['good.example', '*.cdn.example'] },
      ],
    });
    expect((await drops('--policy', 'by-name')).replace(/\s+/g, ' ')).toContain(because);
    // The line operators ship carries the same, and conforms to docs/flow-record.schema.json.
    const line = daemon.logs.find((l) => l.includes('"denied connection"') && l.includes('by-name'));
    expect(flowLineErrors(line!)).toEqual([]);
    expect(JSON.parse(line!)).toMatchObject({ reason: 'cluster-deny', because, afterLookup: record!.afterLookup });
    // `why --live` holds the daemon's record against the desired verdict: the kernel dropped it too.
    let out = '';
    const args = ['why', '--resources', file, '--live', '--daemon-url', `n1=${daemon.url}`, '--src', 'x/client', '--dst', `${web}:80`];
    expect(await main(args, { out: (t) => (out += t), err: (t) => (out += t) })).toBe(1);
    expect(out.replace(/\s+/g, ' ')).toContain("n1's kernel dropped it too (egress, last at");
  });

  it('a plain ClusterNetworkPolicy Deny with no domain rule is a drop record too, naming only itself', async () => {
    expect((await sandbox.probe('x/intruder', { protocol: 'TCP', ip: pods.web.ip, port: 8080, timeoutMs: 500 })).ok).toBe(false);
    await waitUntil('the drop record', async () => (await records('--pod', 'x/intruder')).length > 0, 5000);
    const [record] = await records('--pod', 'x/intruder');
    expect(record).toMatchObject({
      src: { pod: 'x/intruder' },
      dst: { pod: 'x/web' },
      port: 8080,
      direction: 'ingress',
      reason: 'cluster-deny',
      pod: 'x/web',
      policies: ['lock'],
      because: 'dropped by ClusterNetworkPolicy lock rule ingress:0 no-intruder Deny',
    });
    expect(record).not.toHaveProperty('afterLookup');
  });

  it('beside an audited ClusterNetworkPolicy: the enforced Deny is a drop record, the audited Deny a would-deny, the rest nothing', async () => {
    const [web, intruder] = [pods.web.ip, pods.intruder.ip];
    const probe = async (ip: string, port: number) => (await sandbox.probe('x/trial', { protocol: 'TCP', ip, port, timeoutMs: 500 })).ok;
    // Allowed (the audited Deny is not enforced), then dropped by trial-lock: records are explained in the kernel's order.
    expect(await probe(web, 80)).toBe(true);
    expect(await probe(web, 81)).toBe(true);
    expect(await probe(intruder, 80)).toBe(false);
    await waitUntil('the drop record', async () => (await records('--pod', 'x/trial')).length > 0, 5000);
    expect(await records('--pod', 'x/trial')).toEqual([
      expect.objectContaining({
        src: expect.objectContaining({ pod: 'x/trial' }),
        dst: expect.objectContaining({ pod: 'x/intruder' }),
        port: 80,
        direction: 'egress',
        reason: 'cluster-deny',
        pod: 'x/trial',
        policies: ['trial-lock'],
        // The enforced domain rule a lookup would open; not the audited one (it opens nothing).
        because:
          `dropped by ClusterNetworkPolicy trial-lock rule egress:1 no-intruder Deny; no lookup by x/trial of good.example or ` +
          `*.cdn.example had learned ${intruder} (ClusterNetworkPolicy trial-lock rule egress:0 good Accept)`,
      }),
    ]);
    await waitUntil('the audit record', async () => (await records('--audit', '--pod', 'x/trial')).length > 0, 5000);
    expect(await records('--audit', '--pod', 'x/trial')).toEqual([
      expect.objectContaining({
        dst: expect.objectContaining({ pod: 'x/web' }),
        port: 81,
        reason: 'would-deny',
        pod: 'x/trial',
        policies: ['trial-audit'],
      }),
    ]);
  });

  it('the NetworkPolicy layer below the Admin tier drops the unlearned destination: the isolation, and the domain rule', async () => {
    const web = pods.web.ip;
    expect((await sandbox.probe('x/isolated', { protocol: 'TCP', ip: web, port: 80, timeoutMs: 500 })).ok).toBe(false);
    await waitUntil('the drop record', async () => (await records('--pod', 'x/isolated')).length > 0, 5000);
    const [record] = await records('--pod', 'x/isolated');
    expect(record).toMatchObject({
      direction: 'egress',
      reason: 'isolated',
      pod: 'x/isolated',
      policies: ['x/no-egress'],
      because:
        'x/isolated is isolated for egress; policy x/no-egress selects it; none allowed this peer; no lookup by x/isolated of ' +
        `good.example or *.cdn.example had learned ${web} (ClusterNetworkPolicy by-name-only rule egress:0 good Accept)`,
    });
  });
});
