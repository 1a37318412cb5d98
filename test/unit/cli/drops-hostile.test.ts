// `netfence drops` against something hostile or broken answering on the daemon's port: a local HTTP
// server on 127.0.0.1 plays it, one behaviour per path prefix (`--url http://127.0.0.1:P/<case>`). An
// endless body is refused at the limit, bad JSON and wrong shapes are errors naming the URL and the
// field (exit 2, no stack), and terminal control sequences in any field are shown escaped, never sent.

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_FLOWS_BODY_BYTES } from '../../../src/commands/flows-answer.js';
import { main } from '../../../src/cli/main.js';
import { dropRecord as record, steersTerminal } from '../../helpers/hostile-text.js';

/** Never more than this per answer, whatever the client does: the server is bounded on its own. */
const SERVER_CAP = 4 * MAX_FLOWS_BODY_BYTES;

const ESC = '\u001b';
/** Colour, a cursor move plus line erase, a window-title OSC, a C1 CSI, a bidi override. */
const HOSTILE = `${ESC}[31mred${ESC}[2K${ESC}[1A ${ESC}]0;owned\u0007 \u009b31m \u202eevil`;

/** Streams `x` until the client goes away or SERVER_CAP is reached; counts what it wrote. */
function endless(res: ServerResponse, sent: { bytes: number }): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
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

const json = (res: ServerResponse, body: unknown, status = 200): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

describe('netfence drops against a hostile /flows', () => {
  let server: Server;
  let base: string;
  const sent = { bytes: 0 };

  beforeAll(async () => {
    server = createServer((req, res) => {
      switch (req.url?.split('/')[1]) {
        case 'endless':
          return endless(res, sent);
        case 'declared':
          res.writeHead(200, { 'Content-Length': String(SERVER_CAP) });
          return void res.write('{"records":[');
        case 'not-json':
          return json(res, `{"records": [${HOSTILE}`);
        case 'wrong-shape':
          return json(res, { records: [record(), record({ seq: 2, src: { ip: 7 } })] });
        case 'no-records':
          return json(res, { flows: [] });
        case 'bad-time':
          return json(res, { records: [record({ time: 1e20 })] });
        case 'bad-icmp':
          return json(res, { records: [record({ protocol: 'icmp', icmp: { type: `8${ESC}[2J`, code: 0 } })] });
        case 'escapes':
          return json(res, {
            records: [
              record({
                src: { ip: '10.244.2.9', pod: `dev/${HOSTILE}` },
                dst: { ip: `10.244.1.5${ESC}[8m`, where: `outside${ESC}]52;c;cm0gLXJmIH4=\u0007` },
                protocol: `tcp${ESC}[H`,
                direction: `ingress\r\u2066`,
                because: `because ${HOSTILE}\nsecond line\\x1b`,
              }),
            ],
          });
        case 'query-refused':
          return json(res, { error: `since: expected a record seq ${HOSTILE}` });
        case 'refused':
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          return void res.end(`no ${HOSTILE}\n`);
        default:
          return json(res, { records: [] }, 404);
      }
    });
    // Whatever happens to the test, the server does not outlive it by long.
    setTimeout(() => {
      server.closeAllConnections();
      server.close();
    }, 60_000).unref();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const drops = async (path: string, ...args: string[]) => {
    let out = '';
    let err = '';
    const code = await main(['drops', '--url', `${base}/${path}`, ...args], { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };
  const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);

  it('refuses an endless body at the limit, naming the URL and the limit, and stops reading', async () => {
    const r = await drops('endless');
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${base}/endless/flows?`);
    expect(r.err).toContain(`larger than ${MAX_FLOWS_BODY_BYTES} bytes`);
    noStack(r.err);
    expect(r.out).toBe('');
    // What the server got out before the client hung up: the limit plus what the socket buffers held.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sent.bytes).toBeLessThan(MAX_FLOWS_BODY_BYTES + 8 * 1024 * 1024);
  });

  it('refuses a body whose declared length passes the limit without reading it', async () => {
    const r = await drops('declared');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/larger than 16777216 bytes/);
  });

  it.each([
    ['not-json', /the answer from \S+\/not-json\/flows\S* is not JSON \(/],
    ['wrong-shape', /\/wrong-shape\/flows\S* is not a flow list: answer\.records\[1\]\.src\.ip: expected a string, got number/],
    ['no-records', /is not a flow list: answer\.records: expected an array, got undefined/],
    ['bad-time', /answer\.records\[0\]\.time: expected a time in ms since 1970, got number/],
    ['bad-icmp', /answer\.records\[0\]\.icmp\.type: expected a number 0-255, got string/],
  ])('%s: a clear error saying what and where, exit 2, no stack', async (path, message) => {
    const r = await drops(path);
    expect({ code: r.code, out: r.out }).toEqual({ code: 2, out: '' });
    expect(r.err).toMatch(message);
    expect(r.err).not.toContain(ESC);
    noStack(r.err);
  });

  it('shows control characters, escape sequences, C1 controls and bidi overrides escaped, in text and in --json', async () => {
    const text = await drops('escapes');
    expect(text.code).toBe(0);
    expect(steersTerminal(text.out)).toBe(false);
    // Lines are wrapped at 80 columns: compare with the wrapping undone.
    const flat = text.out.replace(/\s+/g, ' ');
    expect(flat).toContain('dev/\\x1b[31mred\\x1b[2K\\x1b[1A \\x1b]0;owned\\x07 \\x9b31m \\u202eevil');
    expect(flat).toContain('tcp\\x1b[H/80');
    expect(flat).toContain('ingress\\x0d\\u2066');
    expect(flat).toContain('10.244.1.5\\x1b[8m (outside\\x1b]52;c;cm0gLXJmIH4=\\x07)');
    // A backslash already in the text is doubled, so it cannot pass for an escape.
    expect(flat).toContain('\\x0asecond line\\\\x1b');
    const asJson = await drops('escapes', '--json');
    expect(steersTerminal(asJson.out)).toBe(false);
    // The same value, nothing lost: only the spelling of the characters changed.
    expect((JSON.parse(asJson.out) as { src: { pod: string } }).src.pod).toBe(`dev/${HOSTILE}`);
  });

  it('says what the daemon refused in the query; refuses a filter the daemon would refuse before asking', async () => {
    const r = await drops('query-refused');
    expect(r.code).toBe(2);
    expect(r.err).toContain(`the daemon at ${base}/query-refused/flows? refused the query: since: expected a record seq \\x1b[31mred`);
    expect(r.err).not.toContain(ESC);
    const bad = await drops('escapes', '--pod', 'Prod/DB');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--pod: expected namespace\/name of a pod/);
  });

  it("quotes a refusal's body made safe and short", async () => {
    const r = await drops('refused');
    expect(r.code).toBe(2);
    expect(r.err).toContain(`the daemon at ${base}/refused/flows? answered 500: no \\x1b[31mred`);
    expect(r.err).not.toContain(ESC);
    noStack(r.err);
  });
});
