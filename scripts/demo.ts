// `npm run demo`: a 2-node flannel-like sandbox (network namespaces), `netfence daemon` running inside
// each node and watching a folder of manifests, and TCP 80 reachability matrices before and after the
// example policies in scripts/demo/. Then a pending change is previewed with `netfence diff` and
// applied, and finally two ClusterNetworkPolicies (scripts/demo/cluster-policies/: one Admin guardrail,
// one Baseline default) show the tiers around NetworkPolicy, with `netfence trace` naming the CNP; last, a
// default-deny in audit mode shows the flows it would break (`netfence drops --audit`), then is enforced; the
// demo ends with a map of its cluster written to a file (`netfence map --format html`) and a `netfence map
// --diff` of that last change, and one ClusterNetworkPolicy `domainNames` rule at work (a DNS server pod, a
// lookup with `dig`, the connection it allows, `netfence trace` and `netfence why --live` naming the learned
// address). Everything it creates (namespaces, daemons, temp files; not the map) is removed at the end, also on
// failure and Ctrl-C. Exit 0 only when every expected matrix was reached.
//
// `--dual-stack`: the same cluster dual-stack, as flannel's EnableIPv6 builds it (an IPv6 /64 per node
// out of fd00:10:244::/56, cni0 holding both gateways); every matrix is then shown on IPv4 and on IPv6,
// the IPv6 one probed with every pod's neighbour cache flushed first (neighbour discovery must pass
// the policies: docs/dataplane.md, "IPv6 and dual-stack").
//
// Run as root after `npm run build`: node --import ./scripts/register-ts.mjs scripts/demo.ts [--dual-stack]

import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { run } from '../src/dataplane/exec.js';
import { createSandbox, formatMatrix, matrixOf, waitForMatrix, type Matrix, type Sandbox, type SandboxNode } from '../sandbox/index.js';
import { httpStatusIn, sleep, startDaemonProcess, terminateNow, type DaemonProcess } from './demo/daemon-process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const BUNDLE = join(ROOT, 'scripts', 'demo');
const PORT = 80;
const LISTEN = '127.0.0.1:9476';
const DUAL_STACK = process.argv.slice(2).includes('--dual-stack');
const FAMILIES = DUAL_STACK ? ([4, 6] as const) : ([4] as const);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];

interface DemoPod {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly namedPorts?: readonly { readonly name: string; readonly containerPort: number }[];
}

const PODS: readonly DemoPod[] = [
  { namespace: 'prod', name: 'db', node: 'n1', labels: { role: 'db' } },
  { namespace: 'prod', name: 'web', node: 'n1', labels: { role: 'frontend' } },
  { namespace: 'prod', name: 'api', node: 'n2', labels: { role: 'backend' }, namedPorts: [{ name: 'http', containerPort: 80 }] },
  { namespace: 'dev', name: 'client', node: 'n2', labels: { app: 'client' } },
  { namespace: 'other', name: 'web', node: 'n2', labels: { role: 'frontend' } },
];
const KEYS = PODS.map((p) => `${p.namespace}/${p.name}`);

/** What the policies in scripts/demo/policies allow (a pod always reaches itself). */
function withPolicies(from: string, to: string): boolean {
  if (from === to) return true;
  if (from === 'prod/db') return false; // db may only talk to 10.0.0.0/24:5978 (egress)
  if (to === 'prod/db') return from === 'prod/web' || from === 'dev/client'; // frontend of prod, project=myproject
  if (to === 'prod/web') return false; // default deny
  if (to === 'prod/api') return from === 'prod/web'; // named port "http", frontend of prod only
  return true; // dev and other have no policies
}

/** …plus the pending web-public policy. */
function withPending(from: string, to: string): boolean {
  if (to === 'prod/web' && from !== 'prod/db') return true;
  return withPolicies(from, to);
}

/**
 * …plus the ClusterNetworkPolicies. "Policy tiers are evaluated in this order: Admin, NetworkPolicy,
 * Baseline": the Admin Deny of dev → prod wins over prod/db's NetworkPolicy; the Baseline Deny of
 * other → anywhere applies only where no NetworkPolicy selects the destination ("further evaluation only
 * happens for Pods not selected by a v1.NetworkPolicy"), so other/web still reaches prod/web.
 */
function withGuardrails(from: string, to: string): boolean {
  if (from === to) return true;
  if (from.startsWith('dev/') && to.startsWith('prod/')) return false; // Admin: dev-stays-out-of-prod
  if (to.startsWith('prod/')) return withPending(from, to); // every prod pod is selected by a NetworkPolicy
  if (from.startsWith('other/')) return false; // Baseline: isolate-other
  return withPending(from, to);
}

/** …plus a default-deny of ingress in dev, enforced: nothing enters dev/client (other/web was already kept out by the Baseline). */
function withDevDefaultDeny(from: string, to: string): boolean {
  if (to === 'dev/client') return from === to;
  return withGuardrails(from, to);
}

const DEV_DEFAULT_DENY = (audit: boolean): string =>
  stringify({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'default-deny', namespace: 'dev', ...(audit ? { annotations: { 'netfence.io/mode': 'audit' } } : {}) },
    spec: { podSelector: {}, policyTypes: ['Ingress'] },
  });

const out = (text = ''): void => void process.stdout.write(`${text}\n`);
const bold = (text: string): string => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[0m` : text);
const demoStart = Date.now();
/** Numbered step heading, with the time since the demo started. */
const heading = (n: number, text: string): void => out(`\n${bold(`${n}. ${text}`)}  [${((Date.now() - demoStart) / 1000).toFixed(1)} s]`);

function clusterManifests(sandbox: Sandbox): string {
  const docs: unknown[] = sandbox.nodes().map((n) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: n.name },
    spec: { podCIDR: n.podCidr, podCIDRs: [n.podCidr, ...(n.ipv6 ? [n.ipv6.podCidr] : [])] },
    status: {
      addresses: [{ type: 'InternalIP', address: n.underlayIp }, ...(n.ipv6 ? [{ type: 'InternalIP', address: n.ipv6.underlayIp }] : [])],
    },
  }));
  for (const p of PODS) {
    const ips = sandbox.pods().find((sp) => sp.key === `${p.namespace}/${p.name}`)?.ips ?? [];
    docs.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
      spec: {
        nodeName: p.node,
        containers: [{ name: 'app', image: 'demo', ports: (p.namedPorts ?? []).map((np) => ({ ...np, protocol: 'TCP' })) }],
      },
      status: { phase: 'Running', podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
    });
  }
  return docs.map((d) => stringify(d)).join('---\n');
}

/** Probes until the matrix is `expected` (the daemons converge asynchronously); prints it, per family. */
async function showMatrix(sandbox: Sandbox, expected: Matrix, deadlineMs = 15_000): Promise<boolean> {
  let ok = true;
  for (const family of FAMILIES) ok = (await showFamilyMatrix(sandbox, expected, family, deadlineMs)) && ok;
  return ok;
}

async function showFamilyMatrix(sandbox: Sandbox, expected: Matrix, family: 4 | 6, deadlineMs: number): Promise<boolean> {
  const started = Date.now();
  // IPv6 rounds start from cold neighbour caches: neighbour discovery has to get through every time.
  const cold = async (): Promise<void> => {
    await Promise.all(sandbox.pods().map((p) => run('ip', ['-6', 'neigh', 'flush', 'all'], { netns: p.netns })));
  };
  const v6 = family === 6 ? { beforeRound: cold } : {};
  if (DUAL_STACK) out(`    IPv${family}${family === 6 ? ' (neighbour caches flushed before each round)' : ''}:`);
  const result = await waitForMatrix(sandbox, expected, { protocol: 'TCP', port: PORT, deadlineMs, timeoutMs: 300, family, ...v6 });
  if (result.ok) {
    out(formatMatrix(result.observed, { indent: '    ' }));
    out(`    (rows: from, columns: to; . = connected, X = blocked; reached in ${Date.now() - started} ms)`);
    return true;
  }
  out(formatMatrix(result.observed, { expected, indent: '    ' }));
  out(`    NOT reached after ${result.rounds} rounds (${Date.now() - started} ms)`);
  return false;
}

/** Runs a one-shot netfence command and returns its output and exit code (1 from `diff` is an answer, not an error). */
async function netfence(args: readonly string[], netns?: string): Promise<{ code: number; output: string }> {
  const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
  const { stdout } = await run('sh', ['-c', `${quoted} 2>&1; echo "exit=$?"`], { netns });
  const lines = stdout.trimEnd().split('\n');
  const code = Number((lines.pop() ?? '').replace('exit=', ''));
  return { code, output: lines.join('\n') };
}

async function waitReady(daemon: DaemonProcess, node: SandboxNode, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!daemon.alive()) throw new Error(`the daemon on ${node.name} exited:\n${daemon.tail(15).join('\n')}`);
    if ((await httpStatusIn(node.netns, `http://${LISTEN}/readyz`)) === 200) return;
    if (Date.now() > deadline)
      throw new Error(`the daemon on ${node.name} is not ready after ${timeoutMs} ms:\n${daemon.tail(15).join('\n')}`);
    await sleep(100);
  }
}

async function main(): Promise<number> {
  const tmp = mkdtempSync(join(tmpdir(), 'netfence-demo-'));
  const watched = join(tmp, 'cluster');
  mkdirSync(watched);
  const daemons: DaemonProcess[] = [];
  let sandbox: Sandbox | undefined;
  let resolverPid: number | undefined;

  // Ctrl-C: stop the daemons by pid and drop the temp dir; exiting runs the sandbox's own exit
  // handler, which kills its agents and deletes its namespaces.
  const interrupted = (): void => {
    for (const d of daemons) terminateNow(d);
    rmSync(tmp, { recursive: true, force: true });
    out('\ninterrupted: daemons stopped, sandbox removed');
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  let ok = true;
  try {
    heading(1, `Sandbox: 2 nodes (network namespaces, flannel-like host-gw${DUAL_STACK ? ', dual-stack' : ''}), 5 pods, 3 namespaces`);
    sandbox = await createSandbox({ nodes: NODES, ...(DUAL_STACK ? { ipv6: {} } : {}) }, { ports: [PORT] });
    for (const p of PODS) await sandbox.addPod({ namespace: p.namespace, name: p.name, node: p.node });
    for (const node of DUAL_STACK ? sandbox.nodes() : [])
      out(
        `    ${node.name}: pod CIDRs ${node.podCidr} and ${node.ipv6?.podCidr ?? ''}, cni0 ${node.gatewayIp} and ${node.ipv6?.gatewayIp ?? ''}`,
      );
    for (const p of PODS) {
      const key = `${p.namespace}/${p.name}`;
      const addresses = FAMILIES.map((f) => sandbox!.addressOf(key, f).padEnd(f === 4 ? 12 : 20)).join(' ');
      out(
        `    ${key.padEnd(12)} ${p.node}  ${addresses} ${Object.entries(p.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`,
      );
    }
    writeFileSync(join(watched, 'cluster.yaml'), clusterManifests(sandbox));
    copyFileSync(join(BUNDLE, 'cluster', 'namespaces.yaml'), join(watched, 'namespaces.yaml'));

    heading(2, `netfence daemon on each node, watching ${watched}`);
    for (const node of sandbox.nodes()) {
      const flannelDir = join(tmp, 'flannel', node.name);
      mkdirSync(flannelDir, { recursive: true });
      writeFileSync(join(flannelDir, 'subnet.env'), node.subnetEnv);
      const args = ['--node-name', node.name, '--resources', watched, '--listen-address', LISTEN, '--log-format', 'text'];
      args.push('--flannel-subnet-env', join(flannelDir, 'subnet.env'));
      daemons.push(await startDaemonProcess(CLI, args, { netns: node.netns, logFile: join(tmp, `daemon-${node.name}.log`) }));
    }
    await Promise.all(sandbox.nodes().map((node, i) => waitReady(daemons[i]!, node)));
    for (const [i, node] of sandbox.nodes().entries()) out(`    ${node.name}: pid ${daemons[i]!.pid}, /readyz 200 (netns ${node.netns})`);

    heading(3, `TCP ${PORT} reachability, no policies: everything is open`);
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, true))) && ok;

    heading(4, 'Adding the example policies to the watched folder');
    for (const file of readdirSync(join(BUNDLE, 'policies')).sort()) {
      copyFileSync(join(BUNDLE, 'policies', file), join(watched, file));
      out(`    + ${file}`);
    }
    out('    default-deny-ingress: nothing enters prod unless allowed');
    out('    db: from prod role=frontend and namespaces project=myproject (dev); db itself may only reach 10.0.0.0/24:5978');
    out('    api-from-frontend: named port "http", from prod role=frontend only (not other/web)');
    if (DUAL_STACK) out("    on IPv6 the matrix is the same: db's egress ipBlock is IPv4, so over IPv6 db reaches nothing either");
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, withPolicies))) && ok;

    heading(5, 'Previewing a pending change on n1 with `netfence diff` (nothing is written)');
    const n1 = sandbox.nodes()[0]!;
    const diffArgs = [
      'diff',
      '--netns',
      n1.netns,
      '--node-name',
      n1.name,
      '--flannel-subnet-env',
      join(tmp, 'flannel', n1.name, 'subnet.env'),
    ];
    const now = await netfence([...diffArgs, '--resources', watched]);
    out(`    current folder: exit ${now.code} (${now.output.split('\n').at(-1) ?? ''})`);
    const pending = join(BUNDLE, 'pending', '40-web-public.yaml');
    const diff = await netfence([...diffArgs, '--resources', watched, '--resources', pending]);
    out(`    with ${basename(pending)} (prod/web accepts TCP ${PORT} from every namespace): exit ${diff.code} (1 = differs)`);
    const lines = diff.output.split('\n');
    const shown = lines.slice(0, 30);
    for (const line of shown) out(`    | ${line}`);
    if (lines.length > shown.length) out(`    | … ${lines.length - shown.length} more lines`);
    if (now.code !== 0 || diff.code !== 1) {
      out('    unexpected: the current folder should be in sync (exit 0) and the pending change should differ (exit 1)');
      ok = false;
    }

    heading(6, 'Applying it (copying it into the watched folder)');
    copyFileSync(pending, join(watched, basename(pending)));
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, withPending))) && ok;

    heading(7, 'Cluster-wide guardrails: one Admin and one Baseline ClusterNetworkPolicy');
    for (const file of readdirSync(join(BUNDLE, 'cluster-policies')).sort()) {
      copyFileSync(join(BUNDLE, 'cluster-policies', file), join(watched, file));
      out(`    + ${file}`);
    }
    out("    Admin dev-stays-out-of-prod: dev may not enter prod, whatever prod/db's NetworkPolicy admits");
    out('    Baseline isolate-other: other may not enter any namespace, unless a NetworkPolicy there decides');
    out("      (prod/web's does: other/web still reaches it; dev/client has none: blocked)");
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, withGuardrails))) && ok;
    const trace = await netfence([
      'trace',
      '--netns',
      n1.netns,
      '--node-name',
      n1.name,
      '--src',
      sandbox.addressOf('dev/client'),
      '--dst',
      sandbox.addressOf('prod/db'),
      '--proto',
      'tcp',
      '--port',
      String(PORT),
    ]);
    const verdict = trace.output.split('\n').findIndex((l) => l.startsWith('verdict'));
    out(`    netfence trace dev/client -> prod/db on n1: exit ${trace.code}`);
    for (const line of trace.output.split('\n').slice(verdict, verdict + 2)) out(`    | ${line}`);
    if (trace.code !== 1 || !/ClusterNetworkPolicy dev-stays-out-of-prod/.test(trace.output)) {
      out('    unexpected: the trace should name the Admin ClusterNetworkPolicy and exit 1 (dropped); it printed:');
      for (const line of trace.output.split('\n').slice(-25)) out(`    | ${line}`);
      ok = false;
    }

    heading(8, 'Audit mode: a default-deny for dev, annotated netfence.io/mode: audit');
    const devDeny = join(watched, '90-dev-default-deny.yaml');
    writeFileSync(devDeny, DEV_DEFAULT_DENY(true));
    out('    + 90-dev-default-deny.yaml (podSelector {}, Ingress, netfence.io/mode: audit): programmed, not enforced');
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, withGuardrails))) && ok;
    const n2 = sandbox.nodes()[1]!;
    const wouldBreak = KEYS.filter((from) => withGuardrails(from, 'dev/client') && !withDevDefaultDeny(from, 'dev/client'));
    let audit = { code: 0, output: '' };
    const flat = (text: string): string => text.replace(/\s+/g, ' ');
    const named = (): boolean => wouldBreak.every((from) => flat(audit.output).includes(`${from} (`));
    // Probing again until the daemon has programmed the policy and logged each flow once (the same matrix still).
    for (let i = 0; i < 20 && !named(); i++) {
      await waitForMatrix(sandbox, matrixOf(KEYS, ['dev/client'], withGuardrails), {
        protocol: 'TCP',
        port: PORT,
        deadlineMs: 5000,
        timeoutMs: 500,
      });
      audit = await netfence(['drops', '--audit', '--url', `http://${LISTEN}`, '--namespace', 'dev'], n2.netns);
    }
    out(`    netfence drops --audit on n2 (the flows it would break, all still connecting): exit ${audit.code}`);
    for (const line of audit.output.split('\n')) out(`    | ${line}`);
    if (!named() || !flat(audit.output).includes('would be DROPPED by dev/default-deny (audit)')) {
      out(`    unexpected: the audit log should name ${wouldBreak.join(', ')} -> dev/client, would be dropped by dev/default-deny`);
      ok = false;
    }

    heading(9, 'Enforcing it: the annotation removed');
    // The folder as it was before this last change, for `netfence map --diff` below.
    const before = join(tmp, 'before-enforcing');
    mkdirSync(before);
    for (const f of readdirSync(watched)) copyFileSync(join(watched, f), join(before, f));
    writeFileSync(devDeny, DEV_DEFAULT_DENY(false));
    out(`    now blocked: ${wouldBreak.map((f) => `${f} -> dev/client`).join(', ')} (exactly what the audit named)`);
    ok = (await showMatrix(sandbox, matrixOf(KEYS, KEYS, withDevDefaultDeny))) && ok;

    heading(10, 'The map of the cluster, and what the last change opened and closed');
    const mapFile = join(tmpdir(), 'netfence-demo-map.html');
    const map = await netfence(['map', '--resources', watched, '--format', 'html', '-o', mapFile]);
    out(`    netfence map --resources <watched folder> --format html -o ${mapFile}: exit ${map.code}`);
    out(`    (one self-contained page: open it in a browser; click a group or an arrow for the rule and the why text)`);
    const table = await netfence(['map', '--resources', watched, '--format', 'md']);
    for (const line of table.output
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.includes('world:'))
      .slice(0, 14))
      out(`    ${line}`);
    const mapDiff = await netfence(['map', '--diff', before, watched, '--format', 'text']);
    out(`    netfence map --diff <before enforcing> <now> (exit 0 no change, 1 changes): exit ${mapDiff.code}`);
    for (const line of mapDiff.output.split('\n')) out(`    | ${line}`);
    const closedAll =
      mapDiff.output.includes('-> dev/client') && wouldBreak.every((from) => mapDiff.output.includes(`${from.split('/')[0]}/`));
    if (map.code !== 0 || table.code !== 0 || mapDiff.code !== 1 || !mapDiff.output.includes('dev/default-deny') || !closedAll) {
      out('    unexpected: the map should be written and the diff should name dev/default-deny closing the connections the audit named');
      ok = false;
    }

    heading(11, 'Egress by DNS name: dev may reach web.other.example, and only after looking it up');
    ok = (await dnsEgressStep(sandbox, watched, tmp, (pid) => (resolverPid = pid))) && ok;
  } catch (err) {
    out(`\nFAILED: ${(err as Error).message}`);
    ok = false;
  } finally {
    heading(12, 'Cleaning up');
    if (resolverPid !== undefined) await run('kill', [String(resolverPid)]).catch(() => undefined);
    const stopped = await Promise.all(daemons.map((d) => d.stop()));
    if (!ok)
      for (const d of daemons)
        out(
          `    last lines of ${d.logFile}:\n${d
            .tail(10)
            .map((l) => `      ${l}`)
            .join('\n')}`,
        );
    out(`    daemons: SIGTERM → ${stopped.join(', ') || 'none started'} (their rules would stay; the namespaces go)`);
    await sandbox?.destroy();
    rmSync(tmp, { recursive: true, force: true });
    out(`    sandbox ${sandbox?.prefix ?? ''}* removed`);
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  out(`\n${ok ? 'OK: every expected matrix was reached' : 'FAILED: see above'} (${((Date.now() - demoStart) / 1000).toFixed(1)} s)`);
  return ok ? 0 : 1;
}

/**
 * One ClusterNetworkPolicy with a `domainNames` rule: dev's pods may reach web.other.example on TCP 80 (and the
 * resolver), nothing else. A DNS server pod (dnsmasq) answers web.other.example with other/web's address. Before
 * the lookup dev/client cannot connect; `dig` from dev/client, and the connection it allows goes through; the
 * trace on the node names the learned address, its name, the pod whose lookup it was and until when, and so does
 * `why --live` (the cluster's answer, then the node daemon's /learned).
 */
async function dnsEgressStep(sandbox: Sandbox, watched: string, tmp: string, started: (pid: number) => void): Promise<boolean> {
  const resolver = await sandbox.addPod({ namespace: 'dns', name: 'resolver', node: 'n1' });
  const web = sandbox.addressOf('other/web');
  const client = sandbox.addressOf('dev/client');
  const pidFile = join(tmp, 'dnsmasq.pid');
  await run(
    'dnsmasq',
    [
      '--no-resolv',
      '--no-hosts',
      '--bind-interfaces',
      `--listen-address=${resolver.ip}`,
      `--address=/web.other.example/${web}`,
      '--local-ttl=60',
      `--pid-file=${pidFile}`,
    ],
    { netns: resolver.netns },
  );
  started(Number((await run('cat', [pidFile])).stdout.trim()));
  out(`    dns/resolver on n1 (${resolver.ip}): dnsmasq answering web.other.example with other/web's address ${web}, TTL 60 s`);
  writeFileSync(
    join(watched, '95-dev-egress-by-name.yaml'),
    [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dns' } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'resolver', namespace: 'dns', labels: { app: 'resolver' } },
        spec: { nodeName: 'n1' },
        status: { phase: 'Running', podIP: resolver.ip, podIPs: [{ ip: resolver.ip }] },
      },
      {
        apiVersion: 'policy.networking.k8s.io/v1alpha2',
        kind: 'ClusterNetworkPolicy',
        metadata: { name: 'dev-egress-by-name' },
        spec: {
          tier: 'Admin',
          priority: 20,
          subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'dev' } } },
          egress: [
            { name: 'dns', action: 'Accept', to: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'resolver' } } } }] },
            {
              name: 'web',
              action: 'Accept',
              to: [{ domainNames: ['web.other.example'] }],
              protocols: [{ tcp: { destinationPort: { number: PORT } } }],
            },
            { name: 'nothing-else', action: 'Deny', to: [{ networks: ['0.0.0.0/0'] }] },
          ],
        },
      },
    ]
      .map((d) => stringify(d))
      .join('---\n'),
  );
  out('    + 95-dev-egress-by-name.yaml: Admin ClusterNetworkPolicy for dev: Accept the resolver, Accept domainNames');
  out(`      [web.other.example] on TCP ${PORT}, Deny everything else`);
  const blocked = await waitForMatrix(sandbox, matrixOf(['dev/client'], ['other/web'], false), {
    protocol: 'TCP',
    port: PORT,
    deadlineMs: 15_000,
    timeoutMs: 500,
  });
  out(`    before any lookup: dev/client -> other/web:${PORT} ${blocked.ok ? 'blocked' : 'NOT blocked'}`);
  const dig = await run('dig', [`@${resolver.ip}`, 'web.other.example', '+short', '+tries=1', '+time=2'], {
    netns: sandbox.podNetns('dev/client'),
  });
  out(`    dig @${resolver.ip} web.other.example +short (from dev/client): ${dig.stdout.trim()}`);
  const probe = await sandbox.probe('dev/client', { protocol: 'TCP', port: PORT, ip: web, timeoutMs: 1000 });
  out(`    then dev/client -> ${web}:${PORT}: ${probe.ok ? 'connected' : 'blocked'} (the answer was held until its address was learned)`);
  const n2 = sandbox.nodes()[1]!;
  const trace = await netfence([
    'trace',
    '--netns',
    n2.netns,
    '--node-name',
    n2.name,
    '--src',
    client,
    '--dst',
    web,
    '--proto',
    'tcp',
    '--port',
    String(PORT),
  ]);
  const lines = trace.output.split('\n');
  const verdict = lines.findIndex((l) => l.startsWith('verdict'));
  out(`    netfence trace dev/client -> other/web on n2: exit ${trace.code}`);
  const learned = lines.findIndex((l) => l.includes('learned for'));
  for (const line of [lines[verdict], ...(learned >= 0 ? lines.slice(learned, learned + 2) : [])]) out(`    | ${line ?? ''}`);
  // `why` judges from the cluster alone (a lookup would allow it); --live asks n2's daemon what its kernel learned.
  const why = await netfence(
    [
      'why',
      '--resources',
      watched,
      '--live',
      '--daemon-url',
      `${n2.name}=http://${LISTEN}`,
      '--src',
      'dev/client',
      '--dst',
      `other/web:${PORT}`,
    ],
    n2.netns,
  );
  out(`    netfence why --live dev/client -> other/web:${PORT} (exit 1: the cluster alone drops it): exit ${why.code}`);
  const whyLines = why.output.split('\n');
  const from = whyLines.findIndex((l) => /egress\s+DROPPED/.test(l));
  for (const line of whyLines.slice(Math.max(from, 0), Math.max(from, 0) + 10)) out(`    | ${line}`);
  const whyNamed = why.output.replace(/\s+/g, ' ').includes(`allowed: ${web} learned for web.other.example from dev/client's lookup`);
  const other = await sandbox.probe('dev/client', { protocol: 'TCP', port: PORT, ip: sandbox.addressOf('prod/web'), timeoutMs: 500 });
  out(`    dev/client -> prod/web:${PORT} (no name of the rule resolves to it): ${other.ok ? 'connected' : 'blocked'}`);
  const named = trace.output.replace(/\s+/g, ' ').includes(`${web} learned for web.other.example from dev/client's lookup`);
  if (!blocked.ok || dig.stdout.trim() !== web || !probe.ok || other.ok || trace.code !== 0 || !named || why.code !== 1 || !whyNamed) {
    out(
      '    unexpected: blocked before the lookup, the lookup answered, connected after it, trace and why --live naming the learned address',
    );
    for (const line of whyLines.slice(-20)) out(`    | ${line}`);
    for (const line of lines.slice(-20)) out(`    | ${line}`);
    return false;
  }
  return true;
}

process.exitCode = await main();
