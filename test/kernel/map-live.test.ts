// `netfence map --live` with real packets: two sandbox nodes, a daemon on each logging flows, one API
// server. A denied connection between two groups the map draws no connection between, a denied port of a
// connection the map lists, and a connection an audited policy would deny are attempted; the map read from
// the API with the daemons' flow logs must show each record on its pair of groups (and agreeing with the
// map, since the kernel enforces what the map was computed from), in JSON and in the HTML page opened in
// headless chromium (no console error). A node whose daemon cannot be read is named, exit 2.

import { jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { mapCommand } from '../../src/cli/map.js';
import type { LiveOverlay } from '../../src/map/index.js';
import type { FlowRecord } from '../../src/observe/flow-log.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import { Browser } from '../helpers/chromium.js';
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
  { namespace: 'shop', name: 'db', node: 'n2' },
  { namespace: 'other', name: 'client', node: 'n2' },
] as const;

const POLICIES: KubeObject[] = [
  // shop/db admits shop/web on TCP 80 only: other/client is dropped, and so is shop/web on TCP 81.
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace: 'shop', name: 'db' },
    spec: {
      podSelector: { matchLabels: { app: 'db' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
    },
  },
  // Audited: it would isolate shop/web for ingress; other/client → shop/web is allowed now, would be denied.
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { namespace: 'shop', name: 'web-lockdown', annotations: { 'netfence.io/mode': 'audit' } },
    spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress'] },
  },
];

describeKernel('map --live: the flow logs on the map', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  const daemons: NodeDaemon[] = [];
  const pod = (key: string): SandboxPod => sandbox.pods().find((p) => p.key === key)!;
  const urls = (): string[] => daemons.flatMap((d) => ['--daemon-url', `${d.node.name}=${d.url}`]);
  const map = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await mapCommand(['--kubeconfig', kubeconfig, '--live', ...args], {
      out: (t) => void (out += t),
      err: (t) => void (err += t),
    });
    return { code, out, err };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-map-live-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map((p) => sandbox.addPod(p)));
    server = new FakeApiServer();
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const ns of ['shop', 'other']) server.create(namespaceObject(ns));
    for (const p of sandbox.pods()) server.create(podObject(p, { app: p.key.split('/')[1]! }));
    for (const p of POLICIES) server.create(p);
    kubeconfig = server.writeKubeconfig(dir);
    for (const node of sandbox.nodes()) daemons.push(await startNodeDaemon(node, { kubeconfig }, { 'batch-window-ms': '10' }));
    await Promise.all(daemons.map((d) => waitReady(d)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('places each drop and would-deny on its pair of groups, in JSON and in the page', async () => {
    const records = async (query: string): Promise<FlowRecord[]> =>
      (
        await Promise.all(
          daemons.map(async (d) => (JSON.parse((await httpGet(`${d.url}/flows${query}`)).body) as { records: FlowRecord[] }).records),
        )
      ).flat();
    const seen = (rs: FlowRecord[], src: string, dst: string, port: number): boolean =>
      rs.some((r) => r.src.pod === src && r.dst.pod === dst && r.port === port);
    await waitUntil(
      'the two drops and the would-deny in the flow logs',
      async () => {
        const [toDb, toDb81, toWeb] = await Promise.all([
          sandbox.probe('other/client', { protocol: 'TCP', ip: pod('shop/db').ip, port: 80, timeoutMs: 500 }),
          sandbox.probe('shop/web', { protocol: 'TCP', ip: pod('shop/db').ip, port: 81, timeoutMs: 500 }),
          sandbox.probe('other/client', { protocol: 'TCP', ip: pod('shop/web').ip, port: 80, timeoutMs: 500 }),
        ]);
        expect([toDb.ok, toDb81.ok, toWeb.ok]).toEqual([false, false, true]);
        const [drops, audit] = await Promise.all([records(''), records('?audit=true')]);
        return (
          seen(drops, 'other/client', 'shop/db', 80) &&
          seen(drops, 'shop/web', 'shop/db', 81) &&
          audit.some((r) => r.reason === 'would-deny' && r.src.pod === 'other/client' && r.dst.pod === 'shop/web')
        );
      },
      20_000,
    );

    const json = await map(...urls(), '--format', 'json');
    expect(json.err).toBe('');
    expect(json.code).toBe(0);
    const { live, edges } = JSON.parse(json.out) as { live: LiveOverlay; edges: { from: string; to: string }[] };
    expect(live.nodes.map((n) => [n.node, n.error])).toEqual([
      ['n1', undefined],
      ['n2', undefined],
    ]);
    const pair = (from: string, to: string) => live.edges.find((e) => e.from === from && e.to === to);
    // No connection other/client → shop/db on the map: the drop is drawn on its own.
    expect(pair('other/client', 'shop/db')).toMatchObject({ onMap: 'none', wouldDeny: 0, contradictions: 0 });
    expect(pair('other/client', 'shop/db')!.drops).toBeGreaterThan(0);
    // shop/web → shop/db is a listed connection (TCP 80); the drop of 81 is on it.
    expect(edges.some((e) => e.from === 'shop/web' && e.to === 'shop/db')).toBe(true);
    expect(pair('shop/web', 'shop/db')).toMatchObject({ onMap: 'edge', contradictions: 0 });
    expect(pair('shop/web', 'shop/db')!.samples.map((s) => s.connection)).toContain('tcp/81');
    expect(pair('shop/web', 'shop/db')!.samples.every((s) => s.direction === 'ingress' && s.node === 'n2')).toBe(true);
    // The audited lockdown: allowed on the map (its chains judge shop/web's ingress, so the connection is listed), would be denied.
    expect(pair('other/client', 'shop/web')).toMatchObject({ onMap: 'edge', drops: 0, contradictions: 0 });
    expect(pair('other/client', 'shop/web')!.wouldDeny).toBeGreaterThan(0);
    expect(pair('other/client', 'shop/web')!.samples[0]).toMatchObject({ reason: 'would-deny', connection: 'tcp/80', node: 'n1' });

    const page = join(dir, 'map.html');
    expect((await map(...urls(), '--format', 'html', '-o', page)).code).toBe(0);
    const browser = await Browser.launch();
    try {
      await browser.send('Network.enable');
      await browser.open(`file://${page}`);
      expect(await browser.evaluate<string>('document.body.dataset.ready')).toBe('true');
      const drawn = await browser.evaluate<string[]>(
        "[...document.querySelectorAll('.edge.live')].map((e) => e.dataset.from + ' -> ' + e.dataset.to + (e.classList.contains('unlisted') ? ' (unlisted)' : '') + ' ' + (e.classList.contains('dropped') ? 'dropped' : 'audited'))",
      );
      expect(drawn.sort()).toEqual([
        'other/client -> shop/db (unlisted) dropped',
        'other/client -> shop/web audited',
        'shop/web -> shop/db dropped',
      ]);
      const click = async (from: string, to: string): Promise<string> => {
        await browser.evaluate(
          `document.querySelector('.edge.live[data-from="${from}"][data-to="${to}"]').dispatchEvent(new MouseEvent('click', { bubbles: true }))`,
        );
        return browser.evaluate<string>("document.getElementById('details').textContent");
      };
      const webDb = await click('shop/web', 'shop/db');
      expect(webDb).toContain('allowed: tcp/80');
      expect(webDb).toContain('Flow logs');
      expect(webDb).toMatch(/on n2: tcp\/81 shop\/web \(10\.244\.1\.\d+\) → shop\/db \(10\.244\.2\.\d+\), ingress, isolated/);
      const clientWeb = await click('other/client', 'shop/web');
      expect(clientWeb).toContain('allowed: tcp (all ports)');
      expect(clientWeb).toContain('would-deny');
      expect(clientWeb).toContain('shop/web-lockdown');
      mkdirSync(resolve('.test-out'), { recursive: true });
      writeFileSync(resolve('.test-out/map-live.png'), await browser.screenshot(1400, 800));
      expect(browser.errors).toEqual([]);
      expect(browser.requests.filter((url) => !url.startsWith('file://'))).toEqual([]);
    } finally {
      await browser.close();
    }
    expect(readFileSync(page, 'utf8')).toContain('n2: ');
  });

  it('names a node whose flow log cannot be read, writes the map anyway, exit 2', async () => {
    // n1's daemon is given; n2's would be asked through the API server's pod proxy, which finds no netfence pod.
    const md = await map('--daemon-url', `n1=${daemons[0]!.url}`, '--format', 'md');
    expect(md.code).toBe(2);
    expect(md.out).toContain('## Live: the flow logs');
    expect(md.out).toMatch(/- n2: \*\*not read\*\*: .*no netfence pod/);
    expect(md.err).toMatch(/netfence map --live: cannot read the flow log of n2: .*no netfence pod/);
  });
});
