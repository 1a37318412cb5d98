// What `netfence why --live` holds when a daemon's port answers /flows with an endless body: a local HTTP
// server streams MiB of `[` to /flows (and `ok` to /readyz) for two nodes, `netfence why --live` is run against
// it as its own process, and its peak RSS (VmHWM, from /usr/bin/time -v's "Maximum resident set size"), exit
// code, wall time and the bytes the server got out are printed.
//
// Usage: node --import ./scripts/register-ts.mjs scripts/measure-why-live-body.ts [--mib 400] [--cli dist/cli/main.js]
// (after `npm run build`; --cli points at another build to measure it: a checkout of an earlier commit, built).

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { mib: { type: 'string', default: '400' }, cli: { type: 'string', default: 'dist/cli/main.js' } },
});
const BODY = Number(values.mib) * 1024 * 1024;

const CLUSTER = `
{apiVersion: v1, kind: Node, metadata: {name: node-a}, spec: {podCIDR: 10.244.1.0/24}}
---
{apiVersion: v1, kind: Node, metadata: {name: node-b}, spec: {podCIDR: 10.244.2.0/24}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shop}}
---
{apiVersion: v1, kind: Pod, metadata: {name: api, namespace: shop}, spec: {nodeName: node-a}, status: {phase: Running, podIP: 10.244.1.11}}
---
{apiVersion: v1, kind: Pod, metadata: {name: db, namespace: shop}, spec: {nodeName: node-b}, status: {phase: Running, podIP: 10.244.2.20}}
`;

let sent = 0;
const chunk = Buffer.alloc(1024 * 1024, '[');
const server = createServer((req, res) => {
  if (req.url?.includes('/readyz')) return void res.end('ok\n');
  res.writeHead(200, { 'Content-Type': 'application/json' });
  let own = 0;
  const pump = (): void => {
    while (own < BODY && !res.destroyed) {
      own += chunk.length;
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const dir = mkdtempSync(join(tmpdir(), 'why-live-body-'));
const file = join(dir, 'cluster.yaml');
writeFileSync(file, CLUSTER);
const args = ['-v', process.execPath, resolve(values.cli), 'why', '--resources', file, '--live'];
args.push('--daemon-url', `node-a=${base}`, '--daemon-url', `node-b=${base}`, '--src', 'shop/api', '--dst', 'shop/db:5432');
const started = Date.now();
const child = spawn('/usr/bin/time', args, { stdio: ['ignore', 'pipe', 'pipe'] });
let stderr = '';
child.stdout.resume();
child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
const code = await new Promise<number | null>((r) => child.once('exit', r));
if (process.env['WHY_LIVE_BODY_STDERR']) writeFileSync(process.env['WHY_LIVE_BODY_STDERR'], stderr);
const peakKiB = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1] ?? NaN);
const said =
  stderr.split('\n').find((l) => l.includes('cannot reach the daemon')) ??
  stderr
    .split('\n')
    .filter((l) => /Error|error/.test(l))
    .slice(0, 2)
    .join(' | ');
console.log(
  `${values.mib} MiB bodies on two nodes: exit ${code}, ${((Date.now() - started) / 1000).toFixed(1)} s, peak RSS ${(peakKiB / 1024).toFixed(0)} MiB, server sent ${(sent / 1024 / 1024).toFixed(0)} MiB\n  ${said.slice(0, 240)}`,
);
server.closeAllConnections();
server.close();
rmSync(dir, { recursive: true, force: true });
