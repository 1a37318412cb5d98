// Egress by DNS name end to end through the daemon: a ClusterNetworkPolicy with a `domainNames` Accept above a
// Deny of everything, compiled by the daemon in a sandbox node; its DNS agent holds the subject pods' answers,
// learns from each pod's own lookups and releases them. A DNS server pod answers (dns-peer.py), a web pod is the
// named destination. Before a lookup the subject cannot connect; the instant its lookup's answer arrives it can;
// another subject pod that did not look the name up still cannot; the metrics count what happened; and
// `netfence why --live` names the learned address (from the daemon's /learned, read from the kernel's sets). The
// node's bound of learned entries (4 here) outlives a daemon restart: the restarted agent counts what the sets
// already hold, so it grants only what is left of the bound and counts the refusals.

import { jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { main } from '../../src/cli/main.js';
import { startJsonLineProcess, type JsonLineProcess, type JsonObject } from '../../src/dataplane/process.js';
import { httpGet, metricValue, podObject, startNodeDaemon, waitReady, type NodeDaemon } from '../helpers/daemon-harness.js';
import { describeKernel } from '../helpers/netns.js';

jest.setTimeout(90_000);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NODE = { name: 'n1', podCidr: '10.244.1.0/24' };
const PER_NODE_MAX = 4;

describeKernel('daemon: a domainNames rule allows what the subject pod’s own lookup answered', () => {
  let sandbox: Sandbox;
  let daemon: NodeDaemon;
  let dir: string;
  let file: string;
  const pods = {} as Record<'client' | 'other' | 'dns' | 'web', SandboxPod>;
  const peers = {} as Record<keyof typeof pods, JsonLineProcess>;
  const ask = (p: keyof typeof pods, msg: JsonObject): Promise<JsonObject> => peers[p].request(msg, 60_000);
  const connect = async (p: keyof typeof pods, ip: string): Promise<boolean> =>
    (await ask(p, { op: 'connect', ip, port: 80, timeoutMs: 300 }))['ok'] === true;
  const startDaemon = async (): Promise<NodeDaemon> => {
    const d = await startNodeDaemon(
      sandbox.nodes()[0]!,
      { resources: [file] },
      {
        'batch-window-ms': '10',
        'dns-egress-per-node-max': String(PER_NODE_MAX),
      },
    );
    await waitReady(d);
    return d;
  };
  /** The learned members the node's kernel holds (every learned set: those members carry a timeout and a comment). */
  const learnedInKernel = (): string[] =>
    execFileSync('ip', ['netns', 'exec', sandbox.nodes()[0]!.netns, 'ipset', 'save'], { encoding: 'utf8' })
      .split('\n')
      .flatMap((l) => /^add \S+ (\S+) timeout \d+ comment /.exec(l)?.[1] ?? [])
      .sort();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-dns-e2e-'));
    sandbox = await createSandbox({ nodes: [NODE] });
    for (const name of ['client', 'other', 'dns', 'web'] as const) pods[name] = await sandbox.addPod({ namespace: 'x', name, node: 'n1' });
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
          podObject(pods.other, { role: 'client' }),
          podObject(pods.dns, { app: 'dns' }),
          podObject(pods.web, { app: 'web' }),
          {
            apiVersion: 'policy.networking.k8s.io/v1alpha2',
            kind: 'ClusterNetworkPolicy',
            metadata: { name: 'by-name' },
            spec: {
              tier: 'Admin',
              priority: 1,
              subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } } },
              egress: [
                { name: 'dns', action: 'Accept', to: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'dns' } } } }] },
                {
                  name: 'good',
                  action: 'Accept',
                  to: [{ domainNames: ['good.example', '*.cdn.example'] }],
                  protocols: [{ tcp: { destinationPort: { number: 80 } } }],
                },
                { name: 'nothing-else', action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] },
              ],
            },
          },
        ],
      }),
    );
    for (const name of Object.keys(pods) as (keyof typeof pods)[])
      peers[name] = await startJsonLineProcess({
        file: 'python3',
        args: ['-u', `${ROOT}/test/helpers/dns-peer.py`],
        netns: pods[name].netns,
      });
    await ask('dns', {
      op: 'serve-dns',
      addrs: [pods.dns.ip],
      records: {
        'good.example': [{ type: 'A', value: pods.web.ip, ttl: 300 }],
        'www.shop.example': [{ type: 'CNAME', value: 'edge.cdn.example', ttl: 300 }],
        'edge.cdn.example': [{ type: 'A', value: pods.web.ip, ttl: 300 }],
        // The web pod first (the one connected to), then addresses nothing answers on: each is a learned entry.
        'a.cdn.example': [pods.web.ip, '10.99.0.1', '10.99.0.2'].map((value) => ({ type: 'A', value, ttl: 300 })),
        'b.cdn.example': [pods.web.ip, '10.99.1.1', '10.99.1.2', '10.99.1.3'].map((value) => ({ type: 'A', value, ttl: 300 })),
      },
    });
    await ask('web', { op: 'listen-tcp', addrs: ['0.0.0.0'], port: 80 });
    daemon = await startDaemon();
  }, 90_000);

  afterAll(async () => {
    await daemon?.stop();
    for (const p of Object.values(peers)) await p?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('no lookup, no connection; the lookup’s answer allows it at once; another subject still cannot; the metrics count it', async () => {
    // The agent binds once the sync that created the learned sets reported; until then answers pass unheld.
    await waitUntilLogged(daemon, 'dns egress: holding DNS answers');
    expect(await connect('client', pods.web.ip)).toBe(false);
    const r = await ask('client', {
      op: 'lookup-connect',
      server: pods.dns.ip,
      name: 'good.example',
      port: 80,
      count: 20,
      timeoutMs: 1000,
    });
    expect(r).toMatchObject({ ok: 20, failures: [], addresses: [pods.web.ip] });
    expect(await connect('other', pods.web.ip)).toBe(false);
    const metrics = (await httpGet(`${daemon.url}/metrics`)).body;
    expect(metricValue(metrics, 'netfence_dns_answers_total')).toBeGreaterThanOrEqual(20);
    expect(metricValue(metrics, 'netfence_dns_addresses_learned_total')).toBeGreaterThanOrEqual(1);
  });

  it('why --live names the address the lookup taught the node, and says nothing was learned for a pod that did not look', async () => {
    const why = async (src: string): Promise<string> => {
      let out = '';
      const args = ['why', '--resources', file, '--live', '--daemon-url', `n1=${daemon.url}`, '--src', src, '--dst', `${pods.web.ip}:80`];
      // The desired answer (the cluster alone) is a drop a lookup would lift: exit 1.
      expect(await main(args, { out: (t) => (out += t), err: (t) => (out += t) })).toBe(1);
      return out.replace(/\s+/g, ' ');
    };
    expect(await why('x/client')).toMatch(
      new RegExp(
        `allowed: ${pods.web.ip.replace(/\./g, '\\.')} learned for good\\.example from x/client's lookup at \\d\\d:\\d\\d:\\d\\d, until `,
      ),
    );
    expect(await why('x/other')).toContain('not learned on n1: no lookup of those names seen');
  });

  it('a name matched through the queried name only: www.shop.example (a CNAME into *.cdn.example) allows nothing', async () => {
    const r = await ask('other', {
      op: 'lookup-connect',
      server: pods.dns.ip,
      name: 'www.shop.example',
      port: 80,
      count: 1,
      timeoutMs: 500,
    });
    expect(r).toMatchObject({ ok: 0, addresses: [pods.web.ip] });
    expect(await connect('other', pods.web.ip)).toBe(false);
  });

  it('a daemon restart keeps the node bound: what the sets hold is counted, only the rest of the bound is granted, the refusals counted', async () => {
    // One entry so far (good.example → web); a.cdn.example adds two: 3 of the 4 places.
    expect(await ask('client', { op: 'lookup-connect', server: pods.dns.ip, name: 'a.cdn.example', port: 80, count: 1 })).toMatchObject({
      ok: 1,
    });
    expect(learnedInKernel()).toEqual(['10.99.0.1', '10.99.0.2', pods.web.ip].sort());

    await daemon.stop();
    daemon = await startDaemon();
    await waitUntilLogged(daemon, 'dns egress: holding DNS answers');
    expect(metricValue((await httpGet(`${daemon.url}/metrics`)).body, 'netfence_dns_learned_entries')).toBe(3);

    // b.cdn.example: the web address again (a refresh, always granted), then three new ones for one place left.
    const r = await ask('client', { op: 'lookup-connect', server: pods.dns.ip, name: 'b.cdn.example', port: 80, count: 1 });
    expect(r).toMatchObject({ ok: 1, failures: [] });
    const learned = learnedInKernel();
    expect(learned).toHaveLength(PER_NODE_MAX);
    expect(learned.filter((a) => a.startsWith('10.99.1.'))).toHaveLength(1);
    const metrics = (await httpGet(`${daemon.url}/metrics`)).body;
    expect(metricValue(metrics, 'netfence_dns_bound_refusals_total{bound="learned-node"}')).toBe(2);
    expect(metricValue(metrics, 'netfence_dns_learned_entries')).toBe(PER_NODE_MAX);
  });
});

async function waitUntilLogged(d: NodeDaemon, text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!d.logs.some((l) => l.includes(text))) {
    if (Date.now() > deadline) throw new Error(`the daemon never logged "${text}": ${d.logs.slice(-10).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
