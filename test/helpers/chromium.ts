// Debian's chromium, headless, driven through its DevTools protocol (a WebSocket: Node's own client), so a
// test can open a page, run script in it, read its console and take a screenshot. No browser download and
// no npm package: the apt package `chromium` (scripts/lib/prereqs.sh installs it). Each browser gets a new
// profile directory and a port the kernel picks; both go when it is closed.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--remote-debugging-port=0',
];

interface Message {
  readonly id?: number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly message: string };
}

export class Browser {
  /** Console errors, uncaught exceptions and error log entries, as text. */
  readonly errors: string[] = [];
  /** Every URL the page requested (after `Network.enable`). */
  readonly requests: string[] = [];
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  private readonly listeners: ((m: Message) => void)[] = [];

  private constructor(
    private readonly proc: ChildProcess,
    private readonly profile: string,
    private readonly socket: WebSocket,
  ) {
    socket.addEventListener('message', (ev: MessageEvent) => {
      const m = JSON.parse(String(ev.data)) as Message;
      if (m.id !== undefined) {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error) w?.reject(new Error(m.error.message));
        else w?.resolve(m);
      }
      if (m.method === 'Runtime.consoleAPICalled' && m.params?.['type'] === 'error')
        this.errors.push(`console.error: ${JSON.stringify(m.params['args'])}`);
      if (m.method === 'Runtime.exceptionThrown') this.errors.push(`exception: ${JSON.stringify(m.params?.['exceptionDetails'])}`);
      if (m.method === 'Log.entryAdded') {
        const entry = m.params?.['entry'] as { level?: string; text?: string; url?: string } | undefined;
        if (entry?.level === 'error') this.errors.push(`log: ${entry.text ?? ''} ${entry.url ?? ''}`);
      }
      if (m.method === 'Network.requestWillBeSent')
        this.requests.push(String((m.params?.['request'] as { url?: string } | undefined)?.url));
      for (const l of this.listeners) l(m);
    });
  }

  static async launch(deadlineMs = 30_000): Promise<Browser> {
    const profile = mkdtempSync(join(tmpdir(), 'nft-chromium-'));
    const proc = spawn(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, 'about:blank'], { stdio: 'ignore' });
    let failed: Error | undefined;
    proc.on('error', (err) => (failed = err));
    try {
      const portFile = join(profile, 'DevToolsActivePort');
      const until = Date.now() + deadlineMs;
      while (!existsSync(portFile) || readFileSync(portFile, 'utf8').split('\n').length < 2) {
        if (failed)
          throw new Error(
            `cannot start ${CHROMIUM} (${failed.message}): install the chromium apt package (scripts/lib/prereqs.sh does, as root)`,
          );
        if (proc.exitCode !== null) throw new Error(`chromium exited with ${proc.exitCode} before it listened`);
        if (Date.now() > until) throw new Error(`chromium did not open its DevTools port within ${deadlineMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const port = readFileSync(portFile, 'utf8').split('\n')[0]!;
      const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
        type: string;
        webSocketDebuggerUrl: string;
      }[];
      const page = targets.find((t) => t.type === 'page');
      if (!page) throw new Error('chromium has no page target');
      const socket = new WebSocket(page.webSocketDebuggerUrl);
      await new Promise<void>((resolve, reject) => {
        socket.addEventListener('open', () => resolve(), { once: true });
        socket.addEventListener('error', () => reject(new Error('cannot connect to chromium')), { once: true });
      });
      const browser = new Browser(proc, profile, socket);
      await browser.send('Runtime.enable');
      await browser.send('Log.enable');
      await browser.send('Page.enable');
      return browser;
    } catch (err) {
      proc.kill('SIGKILL');
      rmSync(profile, { recursive: true, force: true });
      throw err;
    }
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<Message> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Opens `url` and waits for its load event. */
  async open(url: string, deadlineMs = 30_000): Promise<void> {
    const loaded = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${url} did not load within ${deadlineMs} ms`)), deadlineMs);
      this.listeners.push((m) => {
        if (m.method === 'Page.loadEventFired') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await this.send('Page.navigate', { url });
    await loaded;
  }

  /** The value of a script expression in the page. */
  async evaluate<T>(expression: string): Promise<T> {
    const m = await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    const result = m.result as { result?: { value?: T }; exceptionDetails?: unknown } | undefined;
    if (result?.exceptionDetails) throw new Error(`the page threw: ${JSON.stringify(result.exceptionDetails)}`);
    return result?.result?.value as T;
  }

  /** A PNG of the page at this viewport size. */
  async screenshot(width: number, height: number): Promise<Buffer> {
    await this.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    const m = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
    return Buffer.from(String(m.result?.['data']), 'base64');
  }

  async close(): Promise<void> {
    try {
      this.socket.close();
    } finally {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
      if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
      rmSync(this.profile, { recursive: true, force: true });
    }
  }
}
