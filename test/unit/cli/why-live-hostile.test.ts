// `netfence why --live` against something hostile answering on a daemon's port (anything that can bind it, or
// a proxy in between): a local HTTP server plays both nodes' daemons. Its answers are read as `netfence drops`
// reads them: the body bounded (an endless /flows used to be read whole: 400 MB took 1.36 GB), the flow list
// checked, and every string shown with terminal controls escaped, in the text and in --json.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_FLOWS_BODY_BYTES } from '../../../src/commands/flows-answer.js';
import { main } from '../../../src/cli/main.js';
import { steersTerminal } from '../../helpers/hostile-text.js';

const CLUSTER = `
apiVersion: v1
kind: Node
metadata: {name: node-a}
spec: {podCIDR: 10.244.1.0/24}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
spec: {podCIDR: 10.244.2.0/24}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: Pod, metadata: {name: api, namespace: shop, labels: {app: api}}, spec: {nodeName: node-a}, status: {phase: Running, podIP: 10.244.1.11}}
---
{apiVersion: v1, kind: Pod, metadata: {name: db, namespace: shop, labels: {app: db}}, spec: {nodeName: node-b}, status: {phase: Running, podIP: 10.244.2.20}}
`;

/** Never more than this per answer, whatever the client does: the server is bounded on its own. */
const SERVER_CAP = 8 * MAX_FLOWS_BODY_BYTES;
const ESC = '\u001b';
/** Colour, a line erase, a cursor move, a window-title OSC, a clipboard OSC 52, a C1 CSI, a bidi override. */
const HOSTILE = `${ESC}[31mred${ESC}[2K${ESC}[1A ${ESC}]0;owned\u0007 ${ESC}]52;c;cm0gLXJmIH4=\u0007 \u009b31m \u202eevil`;

/** Streams `[` until the client goes away or SERVER_CAP is reached; counts what it wrote. */
function endless(res: ServerResponse, sent: { bytes: number }): void {
  const chunk = Buffer.alloc(64 * 1024, '[');
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const pump = (): void => {
    while (sent.bytes < SERVER_CAP && !res.destroyed) {
      sent.bytes += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

const record = (over: Record<string, unknown> = {}) => ({
  seq: 1,
  time: Date.now(),
  src: { ip: '10.244.1.11', pod: 'shop/api' },
  dst: { ip: '10.244.2.20', pod: 'shop/db' },
  protocol: 'tcp',
  port: 5432,
  direction: 'ingress',
  reason: 'isolated',
  pod: 'shop/db',
  policies: ['shop/db'],
  because: 'shop/db is isolated for ingress',
  count: 1,
  lastSeen: Date.now(),
  ...over,
});

describe('why --live against hostile daemons', () => {
  let server: Server;
  let base: string;
  let dir: string;
  let file: string;
  const sent = { bytes: 0 };
  /** What each node's stand-in does with /flows (node-a answers a clean empty list). */
  let flowsOfB: (res: ServerResponse) => void;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const [, node, path] = /^\/(node-[ab])(\/[a-z]+)/.exec(req.url ?? '') ?? [];
      if (path === '/readyz') {
        res.writeHead(node === 'node-b' ? 503 : 200, { 'Content-Type': 'text/plain' });
        return void res.end(node === 'node-b' ? `not ready ${HOSTILE}\n` : 'ok\n');
      }
      if (path === '/flows' && node === 'node-b') return flowsOfB(res);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"records":[]}');
    });
    setTimeout(() => {
      server.closeAllConnections();
      server.close();
    }, 60_000).unref();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(join(tmpdir(), 'nft-why-hostile-'));
    file = join(dir, 'cluster.yaml');
    writeFileSync(file, CLUSTER);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const why = async (...extra: string[]) => {
    let out = '';
    let err = '';
    const code = await main(
      [
        'why',
        '--resources',
        file,
        '--live',
        '--daemon-url',
        `node-a=${base}/node-a`,
        '--daemon-url',
        `node-b=${base}/node-b`,
        '--src',
        'shop/api',
        '--dst',
        'shop/db:5432',
        ...extra,
      ],
      { out: (t) => (out += t), err: (t) => (err += t) },
    );
    return { code, out, err };
  };

  it('an endless /flows is refused at the limit, naming the node and the limit: exit 2, the rest never read', async () => {
    flowsOfB = (res) => endless(res, sent);
    const r = await why();
    expect(r.code).toBe(2);
    expect(r.err).toContain(`cannot reach the daemon on node-b: the answer from ${base}/node-b/flows?pod=shop%2Fdb is larger than`);
    expect(r.err).toContain(`${MAX_FLOWS_BODY_BYTES} bytes`);
    // The client stopped reading at the limit: what the server got out is the limit plus the sockets' buffers.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sent.bytes).toBeLessThan(MAX_FLOWS_BODY_BYTES + 8 * 1024 * 1024);
  });

  it('a body that is not a flow list: an error naming the node and the field, no stack', async () => {
    flowsOfB = (res) => res.writeHead(200).end(JSON.stringify({ records: [record({ src: { ip: 7 } })] }));
    const r = await why();
    expect(r.code).toBe(2);
    expect(r.err).toContain('node-b /flows is not a flow list: answer.records[0].src.ip: expected a string, got number');
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('escape sequences in /readyz and in the flow records reach neither the text nor --json output', async () => {
    flowsOfB = (res) =>
      res
        .writeHead(200)
        .end(JSON.stringify({ records: [record({ because: `because ${HOSTILE}`, src: { ip: '10.244.1.11', pod: HOSTILE } })] }));
    const text = await why();
    // No policy: the desired answer is allowed, and node-b's recorded drop is a disagreement.
    expect(text.code).toBe(0);
    expect(text.out).toContain('DISAGREES');
    expect(text.out).toContain('not ready \\x1b[31mred\\x1b[2K');
    expect(text.out).toContain('\\u202eevil');
    expect(steersTerminal(text.out)).toBe(false);
    expect(steersTerminal(text.err)).toBe(false);
    const json = await why('--json');
    expect(json.code).toBe(0);
    expect(steersTerminal(json.out)).toBe(false);
    // The values themselves are kept: JSON escapes are the same characters.
    const live = (JSON.parse(json.out) as { live: { nodes: { node: string; drops?: { because: string }[] }[] } }).live;
    expect(live.nodes.find((n) => n.node === 'node-b')!.drops![0]!.because).toBe(`because ${HOSTILE}`);
  });

  it('a proxy error quoting hostile text: shown escaped', async () => {
    flowsOfB = (res) => res.writeHead(500).end(`no ${HOSTILE}`);
    const r = await why();
    expect(r.out).toContain('no flow log from node-b (/flows 500: no \\x1b[31mred');
    expect(steersTerminal(r.out)).toBe(false);
  });
});
