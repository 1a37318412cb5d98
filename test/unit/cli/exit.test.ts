// A one-shot command exits as soon as its work is done (cli/main.ts), without waiting for V8 to wind the heap
// down, but never before stdout has taken everything it printed: a pipe takes output asynchronously, and a
// reader slower than the command must still get every byte. Needs the build (dist/), like every test that
// runs the command as a process.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main.js';

const CLI = join(process.cwd(), 'dist/cli/main.js');

/** One node, 200 pods (their chains and set members make a ruleset of ~380 kB, many pipe buffers' worth). */
function cluster(): string {
  const pods = Array.from({ length: 200 }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p${i}`, namespace: 'shop', labels: { app: `a${i}` } },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running', podIP: `10.244.1.${i + 2}` },
  }));
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { podCIDR: '10.244.1.0/24' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
      ...pods,
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'deny', namespace: 'shop' },
        spec: { podSelector: {}, policyTypes: ['Ingress'] },
      },
    ],
  });
}

/** Runs the built command with stdout a pipe nobody reads until the command has written it all (it then waits). */
function runBehindSlowReader(argv: readonly string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.pause();
    child.on('error', reject);
    // Read once the command has exited, or has had the time to write everything it had (it then waits for the
    // pipe): either way most of its output is still unread. Reading earlier would only make the test weaker.
    const read = () => {
      child.stdout.on('data', (c: Buffer) => chunks.push(c));
      child.stdout.resume();
    };
    const reading = setTimeout(read, 1000);
    child.on('exit', () => {
      if (!child.stdout.isPaused()) return;
      clearTimeout(reading);
      read();
    });
    child.on('close', (code) => {
      clearTimeout(reading);
      resolve({ code, out: Buffer.concat(chunks).toString('utf8') });
    });
  });
}

describe('a one-shot command exiting', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'nf-exit-'));
    writeFileSync(join(dir, 'cluster.json'), cluster());
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('hands a slow reader every byte it printed, and its exit status', async () => {
    const argv = ['compile', '--resources', join(dir, 'cluster.json'), '--node-name', 'n1'];
    let expected = '';
    const code = await main(argv, { out: (t) => void (expected += t), err: () => undefined }, 80);
    expect(expected.length).toBeGreaterThan(256 * 1024);
    const r = await runBehindSlowReader(argv);
    expect(r.code).toBe(code);
    expect(r.out.length).toBe(expected.length);
    expect(r.out).toBe(expected);
  }, 60_000);

  it('keeps its output and exit status when the reader of stderr has gone', async () => {
    const out = join(dir, 'map.json');
    const argv = ['map', '--resources', join(dir, 'cluster.json'), '--format', 'json', '-o', out];
    // stderr a pipe whose reading end is closed before the command writes its "wrote …" line to it.
    const child = spawn(process.execPath, [CLI, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.destroy();
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    expect(code).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8'))).toHaveProperty('groups');
  }, 60_000);
});
