// ipBlock excepts at scale and the node budget, against a real daemon: many policies, each "egress to the
// internet except a blocklist" (0.0.0.0/0 or ::/0 except N random host addresses), created at once.
//
// Usage (root): npm run --silent build && node --import ./scripts/register-ts.mjs scripts/bench-excepts.ts \
//                 [--policies 30] [--excepts 2000] [--ports 0] [--family 4|6] [--budget-set-members N] [--budget-rules N]
// --ports N gives each policy's rule N TCP ports, none adjacent (N/15 multiport rules per policy) instead of excepts, to measure
// what a rule costs. A real `netfence daemon` process (dist/cli/main.js) runs in the root namespace with
// `--netns` pointing at a scratch namespace it programs (nothing is written to the root namespace), and watches
// an in-process fake API server (test/fakes) holding one node, one namespace and one pod per policy.
// Throughout, /healthz is asked every 50 ms (5 s timeout, the kubelet's): the slowest answer says how long the event loop was
// blocked. Memory = the daemon's VmRSS / VmHWM from /proc once the kernel stopped changing for 20 s.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../src/dataplane/exec.js';
import { FakeApiServer, type KubeObject } from '../test/fakes/fake-apiserver.js';
import { freePort } from '../test/helpers/free-port.js';
import { sleep, startDaemonProcess, type DaemonProcess } from './demo/daemon-process.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

interface Args {
  policies: number;
  excepts: number;
  ports: number;
  family: 4 | 6;
  budgetSetMembers?: number;
  budgetRules?: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { policies: 30, excepts: 2000, ports: 0, family: 4 };
  for (let i = 0; i < argv.length; i += 2) {
    const value = Number(argv[i + 1]);
    if (!Number.isInteger(value) || value < 0) throw new Error(`${argv[i]} takes a whole number`);
    if (argv[i] === '--policies') args.policies = value;
    else if (argv[i] === '--excepts') args.excepts = value;
    else if (argv[i] === '--ports') args.ports = value;
    else if (argv[i] === '--family' && (value === 4 || value === 6)) args.family = value;
    else if (argv[i] === '--budget-set-members') args.budgetSetMembers = value;
    else if (argv[i] === '--budget-rules') args.budgetRules = value;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return args;
}

/** Deterministic random host addresses of one family. */
function randomHosts(n: number, seed: number, family: 4 | 6): string[] {
  let x = seed >>> 0;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  return Array.from({ length: n }, () => {
    if (family === 4) {
      const v = next();
      return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/32`;
    }
    const groups = Array.from({ length: 8 }, () => (next() >>> 16).toString(16));
    return `${groups.join(':')}/128`;
  });
}

function objects(args: Args): { setup: KubeObject[]; policies: KubeObject[] } {
  const setup: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-1' },
      spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'] },
      status: { addresses: [{ type: 'InternalIP', address: '192.168.0.1' }] },
    },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench', labels: { 'kubernetes.io/metadata.name': 'bench' } } },
  ];
  const policies: KubeObject[] = [];
  for (let i = 0; i < args.policies; i++) {
    setup.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p${i}`, namespace: 'bench', labels: { app: `p${i}` } },
      spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'none' }] },
      status: {
        phase: 'Running',
        podIP: `10.244.1.${10 + i}`,
        podIPs: [{ ip: `10.244.1.${10 + i}` }, { ip: `fd00:10:244:1::${(10 + i).toString(16)}` }],
      },
    });
    const to =
      args.ports > 0
        ? { ports: Array.from({ length: args.ports }, (_, p) => ({ protocol: 'TCP', port: 1000 + 2 * p })) }
        : { to: [{ ipBlock: { cidr: args.family === 4 ? '0.0.0.0/0' : '::/0', except: randomHosts(args.excepts, i + 1, args.family) } }] };
    policies.push({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      // One second apart: the node budget admits the oldest first.
      metadata: { name: `blocklist-${i}`, namespace: 'bench', creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() },
      spec: { podSelector: { matchLabels: { app: `p${i}` } }, policyTypes: ['Egress'], egress: [to] },
    });
  }
  return { setup, policies };
}

function procStatusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? NaN) / 102.4) / 10;
}

// In a process of its own: this script's event loop is busy serving the fake API server and reading the
// kernel back, which would show up as a slow answer that the daemon never gave.
const HEALTH_POLLER = `
import json, os, sys, time, urllib.request
url, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
worst, failures, asked = 0.0, 0, 0
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        ok = urllib.request.urlopen(url, timeout=5).status == 200
    except Exception:
        ok = False
    worst = max(worst, time.monotonic() - t0)
    asked += 1
    failures += 0 if ok else 1
    time.sleep(0.05)
json.dump({"maxMs": round(worst * 1000), "failures": failures, "asked": asked}, open(out, "w"))
`;

/** Asks /healthz every 50 ms until stopped, with the kubelet's 5 s probe timeout (deploy/daemonset.yaml): the slowest answer and how many failed. */
async function pollHealth(url: string, dir: string): Promise<{ stop: () => Promise<{ maxMs: number; failures: number; asked: number }> }> {
  const stopFile = join(dir, 'health.stop');
  const outFile = join(dir, 'health.json');
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  await run('sh', [
    '-c',
    `python3 -c ${q(HEALTH_POLLER)} ${q(`${url}/healthz`)} ${q(stopFile)} ${q(outFile)} </dev/null >/dev/null 2>&1 &`,
  ]);
  return {
    stop: async () => {
      writeFileSync(stopFile, '');
      for (let i = 0; i < 100 && !existsSync(outFile); i++) await sleep(50);
      return JSON.parse(readFileSync(outFile, 'utf8')) as { maxMs: number; failures: number; asked: number };
    },
  };
}

/** ipset members of ours in the namespace, and iptables rules in our policy chains. */
async function programmed(netns: string, family: 4 | 6): Promise<{ members: number; rules: number }> {
  const sets = (await run('ipset', ['save'], { netns })).stdout;
  const save = (await run(family === 4 ? 'iptables-save' : 'ip6tables-save', ['-t', 'filter'], { netns })).stdout;
  return {
    members: sets.split('\n').filter((l) => /^add nf[46]/.test(l)).length,
    rules: save.split('\n').filter((l) => /^-A nf-p[io]-/.test(l)).length,
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const command = `node --import ./scripts/register-ts.mjs scripts/bench-excepts.ts ${process.argv.slice(2).join(' ')}`.trim();
  const tmp = mkdtempSync(join(tmpdir(), 'nft-bench-excepts-'));
  const netns = `nft-be-${Math.random().toString(16).slice(2, 8)}`;
  const server = new FakeApiServer();
  let daemon: DaemonProcess | undefined;
  try {
    await run('ip', ['netns', 'add', netns]);
    await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    await server.start();
    const { setup, policies } = objects(args);
    for (const obj of setup) server.create(obj);
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const budget = [
      ...(args.budgetSetMembers !== undefined ? ['--budget-set-members', String(args.budgetSetMembers)] : []),
      ...(args.budgetRules !== undefined ? ['--budget-rules', String(args.budgetRules)] : []),
    ];
    const logFile = join(tmp, 'daemon.log');
    daemon = await startDaemonProcess(
      CLI,
      [
        ...['--node-name', 'node-1', '--kubeconfig', server.writeKubeconfig(tmp), '--netns', netns],
        ...['--listen-address', `127.0.0.1:${port}`, '--log-format', 'json', '--flannel-subnet-env', join(tmp, 'none.env')],
        ...['--no-anti-spoofing', '--no-flow-logs', ...budget],
      ],
      { netns: undefined, logFile },
    );
    const startedAt = Date.now();
    while (
      (await fetch(`${url}/readyz`).then(
        (r) => r.status,
        () => 0,
      )) !== 200
    ) {
      if (!daemon.alive() || Date.now() - startedAt > 120_000) throw new Error(`daemon not ready:\n${daemon.tail(20).join('\n')}`);
      await sleep(50);
    }
    const rssBefore = procStatusMiB(daemon.pid, 'VmRSS');
    const health = await pollHealth(url, tmp);
    const createdAt = Date.now();
    for (const obj of policies) server.create(obj);
    // Until the kernel stops changing for 20 s (and has changed at least once).
    let last = await programmed(netns, args.family);
    let stableSince = Date.now();
    let changedAt = createdAt;
    const initial = last;
    while (
      Date.now() - stableSince < 3000 ||
      (last.members === initial.members && last.rules === initial.rules && Date.now() - createdAt < 120_000)
    ) {
      await sleep(250);
      const now = await programmed(netns, args.family);
      if (now.members !== last.members || now.rules !== last.rules) {
        last = now;
        stableSince = changedAt = Date.now();
      }
      if (!daemon.alive()) throw new Error(`daemon exited:\n${daemon.tail(20).join('\n')}`);
    }
    const healthStats = await health.stop();
    const rss = procStatusMiB(daemon.pid, 'VmRSS');
    const hwm = procStatusMiB(daemon.pid, 'VmHWM');
    const log = readFileSync(logFile, 'utf8');
    const refused = new Set([...log.matchAll(/NetworkPolicy (bench\/blocklist-\d+)[^\n]*node's budget/g)].map((m) => m[1]));
    console.log(`command: ${command}`);
    console.log(
      `policies ${args.policies} × ${args.ports > 0 ? `${args.ports} ports` : `${args.excepts} IPv${args.family} excepts`}; budget ${budget.join(' ') || 'default'}`,
    );
    console.log(
      `programmed: ${last.members} set members, ${last.rules} policy rules; ${(changedAt - createdAt) / 1000} s after creating the policies`,
    );
    console.log(`refused by the node budget: ${refused.size} policies`);
    console.log(`daemon RSS: ${rssBefore} MiB ready, ${rss} MiB after, peak (VmHWM) ${hwm} MiB`);
    console.log(`/healthz: ${healthStats.asked} asked, slowest ${healthStats.maxMs} ms, ${healthStats.failures} failed or over 5 s`);
  } finally {
    await daemon?.stop();
    await server.stop();
    await run('ip', ['netns', 'del', netns]).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
