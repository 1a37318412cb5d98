// `netfence drops --kubeconfig F` (what `kubectl netfence drops` runs) against a daemon that answers badly
// through the API server's pod proxy: a local HTTP server plays the API server, two nodes' netfence pods
// and their /flows. A node whose answer is not a flow list is named with what was wrong (exit 2, no
// stack), the other node's records are still shown, and every string from a daemon is shown with terminal
// controls escaped, in the text, in --json and in the error, as `netfence drops` on one node shows them.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';
import { dropRecord as record, steersTerminal } from '../../helpers/hostile-text.js';

const ESC = '\u001b';
const HOSTILE = `${ESC}[31mred${ESC}]52;c;cm0gLXJmIH4=\u0007 \u009b31m \u202eevil`;

/** What each node's daemon answers on /flows. */
let answers: Record<string, { status: number; body: string }>;

const json = (res: ServerResponse, body: unknown, status = 200): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

describe('netfence drops --kubeconfig against daemons that answer badly', () => {
  let server: Server;
  let dir: string;
  let kubeconfig: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/api/v1/nodes')
        return json(res, { items: [{ metadata: { name: 'node-a' } }, { metadata: { name: 'node-b' } }] });
      if (url.pathname === '/api/v1/namespaces/kube-system/pods') {
        const node = /spec\.nodeName=([^,]+)/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1] ?? '';
        return json(res, { items: [{ metadata: { name: `netfence-${node}` } }] });
      }
      const proxied = /^\/api\/v1\/namespaces\/kube-system\/pods\/netfence-([^:]+):\d+\/proxy\/flows$/.exec(url.pathname);
      const answer = proxied ? answers[proxied[1]!] : undefined;
      if (answer) return json(res, answer.body, answer.status);
      return json(res, { kind: 'Status', code: 404 }, 404);
    });
    setTimeout(() => {
      server.closeAllConnections();
      server.close();
    }, 60_000).unref();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dir = mkdtempSync(join(tmpdir(), 'nf-drops-cluster-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: fake',
        '  cluster:',
        `    server: http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: fake',
        '  user: {token: fake-token}',
        'contexts:',
        '- name: fake',
        '  context: {cluster: fake, user: fake}',
        'current-context: fake',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const drops = async (...args: string[]) => {
    let out = '';
    let err = '';
    const code = await main(['drops', '--kubeconfig', kubeconfig, ...args], { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };

  it('names the node whose answer is not a flow list and what was wrong; still shows the other', async () => {
    answers = {
      'node-a': { status: 200, body: JSON.stringify({ records: [record()] }) },
      'node-b': { status: 200, body: JSON.stringify({ records: [{ seq: 2 }] }) },
    };
    const r = await drops();
    expect(r.code).toBe(2);
    expect(r.out).toContain('[node-a]');
    expect(r.err).toMatch(/cannot read the flow log of node-b: .*answer\.records\[0\]\.time: expected a time in ms since 1970/);
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it("shows a daemon's strings escaped in the text, in --json and in its refusal", async () => {
    answers = {
      'node-a': { status: 200, body: JSON.stringify({ records: [record({ src: { ip: '10.244.2.9', pod: `dev/${HOSTILE}` } })] }) },
      'node-b': { status: 500, body: `no ${HOSTILE}` },
    };
    const text = await drops();
    expect(text.code).toBe(2);
    expect(steersTerminal(text.out)).toBe(false);
    expect(steersTerminal(text.err)).toBe(false);
    expect(text.err).toContain('cannot read the flow log of node-b: answered 500: no \\x1b[31mred');
    const asJson = await drops('--json');
    expect(steersTerminal(asJson.out)).toBe(false);
    // Nothing lost: only the spelling of the characters changed.
    expect((JSON.parse(asJson.out) as { node: string; src: { pod: string } }).src.pod).toBe(`dev/${HOSTILE}`);
  });
});
