// Data-plane rows of `npm run bench`: new TCP connections per second between two pods on one sandbox node
// with the tier's full ruleset installed on that node, against the same node with no netfence state (only
// flannel's rules; conntrack on in both), and how many rules the first packet of that connection walks.
//
// The two sandbox pods are part of the compiled cluster: they join the generated snapshot as local pods
// of the measured node (same name and pod CIDR as the sandbox node), in their own namespace, with an
// ingress policy on the server and an egress policy on the client that allow exactly TCP 80, so the
// first packet runs both pods' dispatch, workload and policy chains among the tier's other local pods.
// Load: a Python connect / read-until-EOF / RST-close loop in the client pod's netns against the pod
// agent on the server (which accepts and closes), for a fixed time; ×1 and ×4 client processes.
// Modes are interleaved (rules, none, none, rules, …) on the same pods.
// crr-flowlog: the same ruleset compiled with the flow-log NFLOG rules (and the group read by a reader in
// the node, as the daemon does) against compiled without them, ×1 client: the log rules sit only in front
// of drops, so allowed connections should not see them.
//
// Usage (root): node --import ./scripts/register-ts.mjs scripts/bench-dataplane.ts [--tier large] [--runs 3] [--seconds 2] [--seed 1] [--only <row>]

import { generateCluster } from './bench-lib/generator.js';
import { firstPacketBound } from './bench-lib/first-packet.js';
import { compile } from '../src/compile/index.js';
import { run } from '../src/dataplane/exec.js';
import { openKernel } from '../src/dataplane/kernel.js';
import { startNflogReader } from '../src/dataplane/nflog.js';
import {
  DEFAULT_FLOW_LOG,
  emptyFamilyState,
  type ClusterSnapshot,
  type DesiredState,
  type NetworkPolicy,
  type Pod,
} from '../src/model/index.js';
import { Syncer } from '../src/reconcile/syncer.js';
import { parseIpsetSave } from '../src/render/index.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../sandbox/index.js';
import { loadRuleset, packetFor, tracePacket } from '../src/trace/index.js';
import { silentLogger } from './lib/bench-kernel-port.js';
import { fmtInt, median } from './lib/bench-stats.js';
import { parseBenchFlags, runAsScript, type BenchFlags } from './lib/bench-args.js';
import { failedRow, renderTable, tsNode, type BenchRow } from './lib/bench-table.js';

export interface DataplaneBenchOptions extends BenchFlags {
  readonly progress?: (msg: string) => void;
}

export const DATAPLANE_ROWS: readonly string[] = ['crr-x1', 'crr-x4', 'first-packet', 'crr-flowlog'];
const CONCURRENCY = { 'crr-x1': 1, 'crr-x4': 4 } as const;
const NAMESPACE = 'bench-dp';
const PORT = 80;

/** Bounded by time; SO_LINGER 0 closes with RST, so neither side keeps TIME_WAIT sockets between runs. */
const CLIENT = `
import json, socket, struct, sys, time
ip, port, dur = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
linger = struct.pack('ii', 1, 0)
n = errors = 0
t0 = time.monotonic(); end = t0 + dur
while time.monotonic() < end:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
    s.settimeout(1.0)
    try:
        s.connect((ip, port)); s.recv(1); n += 1
    except OSError:
        errors += 1
    finally:
        s.close()
print(json.dumps({"n": n, "errors": errors, "s": time.monotonic() - t0}))
`;

/** Connections per second summed over `parallel` client processes running at the same time. */
async function connectionRate(client: SandboxPod, server: SandboxPod, parallel: number, seconds: number): Promise<number> {
  const results = await Promise.all(
    Array.from({ length: parallel }, () =>
      run('python3', ['-c', CLIENT, server.ip, String(PORT), String(seconds)], { netns: client.netns, timeoutMs: (seconds + 10) * 1000 }),
    ),
  );
  let rate = 0;
  for (const r of results) {
    const { n, errors, s } = JSON.parse(r.stdout) as { n: number; errors: number; s: number };
    if (errors > 0) throw new Error(`${errors} of ${n + errors} connections from ${client.key} to ${server.ip}:${PORT} failed`);
    rate += n / s;
  }
  return rate;
}

function freeHosts(snapshot: ClusterSnapshot, prefix: string, count: number): string[] {
  const used = new Set(snapshot.pods.flatMap((p) => p.ips));
  const out: string[] = [];
  for (let host = 254; host >= 2 && out.length < count; host--) if (!used.has(`${prefix}.${host}`)) out.push(`${prefix}.${host}`);
  if (out.length < count) throw new Error(`no ${count} free addresses in ${prefix}.0/24`);
  return out;
}

/** The generated cluster plus the two sandbox pods and the two policies that let client reach server on TCP 80 only. */
function withBenchPods(snapshot: ClusterSnapshot, node: string, client: SandboxPod, server: SandboxPod): ClusterSnapshot {
  const pod = (p: SandboxPod, app: string): Pod => ({
    namespace: NAMESPACE,
    name: p.name,
    labels: { app },
    nodeName: node,
    hostNetwork: false,
    phase: 'Running',
    ips: [p.ip],
    ports: [{ name: 'http', containerPort: PORT, protocol: 'TCP' }],
  });
  const sel = (app: string) => ({ matchLabels: { app }, matchExpressions: [] });
  const policies: NetworkPolicy[] = [
    {
      namespace: NAMESPACE,
      name: 'server-ingress',
      podSelector: sel('crr-server'),
      policyTypes: ['Ingress'],
      ingress: [{ peers: [{ podSelector: sel('crr-client') }], ports: [{ protocol: 'TCP', port: PORT }] }],
    },
    {
      namespace: NAMESPACE,
      name: 'client-egress',
      podSelector: sel('crr-client'),
      policyTypes: ['Egress'],
      egress: [{ peers: [{ podSelector: sel('crr-server') }], ports: [{ protocol: 'TCP', port: PORT }] }],
    },
  ];
  return {
    ...snapshot,
    namespaces: [
      ...snapshot.namespaces,
      { name: NAMESPACE, labels: { 'kubernetes.io/metadata.name': NAMESPACE, team: 'platform', env: 'prod' } },
    ],
    pods: [...snapshot.pods, pod(client, 'crr-client'), pod(server, 'crr-server')],
    policies: [...snapshot.policies, ...policies],
  };
}

const NO_RULES: DesiredState = { v4: emptyFamilyState(4), v6: emptyFamilyState(6) };

export async function dataplaneBench(o: DataplaneBenchOptions): Promise<BenchRow[]> {
  const args = ['--tier', o.tier, '--runs', String(o.runs), '--seconds', String(o.seconds), '--seed', String(o.seed)];
  const command = (row: string) => tsNode('scripts/bench-dataplane.ts', [...args, '--only', row]);
  const wanted = (row: string) => o.only === undefined || o.only === row;
  const say = o.progress ?? (() => {});
  const { snapshot, settings } = generateCluster({ tier: o.tier, seed: o.seed, node: 'node-1' });
  const podCidr = settings.podCidrs[0]!;
  const prefix = podCidr.replace(/\.0\/24$/, '');
  let sb: Sandbox | undefined;
  const rows: BenchRow[] = [];
  try {
    say('data plane: building the sandbox node and pods');
    sb = await createSandbox({ nodes: [{ name: settings.nodeName, podCidr }] }, { ports: [PORT, PORT + 1] });
    const [clientIp, serverIp] = freeHosts(snapshot, prefix, 2);
    const client = await sb.addPod({ namespace: NAMESPACE, name: 'crr-client', node: settings.nodeName, ip: clientIp! });
    const server = await sb.addPod({ namespace: NAMESPACE, name: 'crr-server', node: settings.nodeName, ip: serverIp! });
    const cluster = withBenchPods(snapshot, settings.nodeName, client, server);
    const desired = compile(cluster, settings).desired;
    const nodeNetns = sb.nodeNetns(settings.nodeName);
    const kernel = await openKernel({ netns: nodeNetns, backend: 'nft', ipv6: true });
    const syncer = new Syncer(kernel, { chainPrefix: settings.chainPrefix, ipsetPrefix: settings.ipsetPrefix }, silentLogger);

    const setMode = async (mode: 'rules' | 'none') => {
      await syncer.sync(mode === 'rules' ? desired : NO_RULES);
      // Old flows' conntrack entries would only make the table bigger for whichever mode runs later.
      await run('conntrack', ['-F'], { netns: nodeNetns }).catch(() => undefined);
    };

    // The rules must be doing something: TCP 80 allowed, TCP 81 (served too) dropped.
    await setMode('rules');
    const probe = (port: number) => sb!.probe(client.key, { protocol: 'TCP', ip: server.ip, port, timeoutMs: 500 });
    const [open, closed] = [await probe(PORT), await probe(PORT + 1)];
    if (!open.ok || closed.ok)
      throw new Error(
        `rules not in force: TCP ${PORT} ${open.ok ? 'open' : 'blocked'}, TCP ${PORT + 1} ${closed.ok ? 'open' : 'blocked'} (expected open, blocked)`,
      );

    if (wanted('first-packet')) {
      const saved = (await run('iptables-nft-save', ['-t', 'filter'], { netns: nodeNetns })).stdout;
      const sets = parseIpsetSave((await run('ipset', ['save'], { netns: nodeNetns })).stdout);
      const packet = packetFor(
        { src: client.ip, dst: server.ip, proto: 'tcp', dport: PORT },
        { bridge: settings.bridge, uplink: 'eth0', podCidrs: settings.podCidrs },
      );
      const trace = tracePacket(loadRuleset(saved), sets, packet, { chainPrefix: settings.chainPrefix });
      const rules = trace.steps.filter((s) => s.result !== 'policy');
      const owned = rules.filter((s) => s.owned);
      const setMatches = owned.filter((s) => s.text.includes('--match-set')).length;
      const bound = firstPacketBound(desired.v4);
      rows.push({
        id: 'first-packet',
        what: `rules the first packet client → server TCP ${PORT} traverses on the node (tracePacket over the node's iptables-nft-save and ipset save)`,
        value: `${rules.length} rules`,
        verdict: 'info',
        detail: `${owned.length} in netfence chains (${setMatches} ipset matches), ${rules.length - owned.length} foreign (FORWARD, flannel); verdict ${trace.verdict}; static worst case over every local pod pair (scripts/bench-lib/first-packet.ts): ${bound.total} rules; node: ${fmtInt(desired.v4.chains.reduce((s, c) => s + c.rules.length, 0))} rules in ${fmtInt(desired.v4.chains.length)} chains, ${fmtInt(desired.v4.ipsets.length)} sets`,
        command: command('first-packet'),
      });
    }

    const loads = (['crr-x1', 'crr-x4'] as const).filter(wanted);
    if (loads.length > 0) {
      const rates: Record<string, { rules: number[]; none: number[] }> = Object.fromEntries(loads.map((l) => [l, { rules: [], none: [] }]));
      for (let i = 0; i < o.runs; i++) {
        for (const mode of i % 2 === 0 ? (['rules', 'none'] as const) : (['none', 'rules'] as const)) {
          say(`data plane: run ${i + 1}/${o.runs}, ${mode}`);
          await setMode(mode);
          for (const load of loads) rates[load]![mode].push(await connectionRate(client, server, CONCURRENCY[load], o.seconds));
        }
      }
      for (const load of loads) {
        const withRules = median(rates[load]!.rules);
        const none = median(rates[load]!.none);
        const share = withRules / none;
        rows.push({
          id: load,
          what: `new TCP connections/s, pod → pod on one node, ${CONCURRENCY[load]} client process${CONCURRENCY[load] > 1 ? 'es' : ''} (connect, read to EOF, RST close), ${o.tier} ruleset installed vs no netfence state`,
          value: `${fmtInt(Math.round(withRules))} /s`,
          floor: `${fmtInt(Math.round(none))} /s`,
          ratio: `${(share * 100).toFixed(0)} %`,
          target: '≥ 90 %',
          verdict: share >= 0.9 ? 'met' : 'missed',
          detail: `medians of ${o.runs} × ${o.seconds} s per mode, interleaved; all runs rules ${rates[load]!.rules.map((r) => Math.round(r)).join(', ')} / none ${rates[load]!.none.map((r) => Math.round(r)).join(', ')}; TCP ${PORT + 1} checked blocked with rules`,
          command: command(load),
        });
      }
    }

    if (wanted('crr-flowlog')) {
      const logged = compile(cluster, { ...settings, flowLog: DEFAULT_FLOW_LOG }).desired;
      const unlogged = compile(cluster, { ...settings, flowLog: undefined }).desired;
      const reader = await startNflogReader({ group: DEFAULT_FLOW_LOG.group, netns: nodeNetns, onPacket: () => undefined });
      try {
        const rates = { logged: [] as number[], unlogged: [] as number[] };
        // The rules the first packet of the allowed connection walks in the kernel's ruleset, per mode.
        const walked = { logged: 0, unlogged: 0 };
        const allowedWalk = async (): Promise<number> => {
          const saved = (await run('iptables-nft-save', ['-t', 'filter'], { netns: nodeNetns })).stdout;
          const sets = parseIpsetSave((await run('ipset', ['save'], { netns: nodeNetns })).stdout);
          const packet = packetFor(
            { src: client.ip, dst: server.ip, proto: 'tcp', dport: PORT },
            { bridge: settings.bridge, uplink: 'eth0', podCidrs: settings.podCidrs },
          );
          return tracePacket(loadRuleset(saved), sets, packet, { chainPrefix: settings.chainPrefix }).steps.filter(
            (st) => st.result !== 'policy',
          ).length;
        };
        for (let i = 0; i < o.runs; i++) {
          for (const mode of i % 2 === 0 ? (['logged', 'unlogged'] as const) : (['unlogged', 'logged'] as const)) {
            say(`data plane: flow log run ${i + 1}/${o.runs}, ${mode}`);
            await syncer.sync(mode === 'logged' ? logged : unlogged);
            await run('conntrack', ['-F'], { netns: nodeNetns }).catch(() => undefined);
            if (i === 0) walked[mode] = await allowedWalk();
            rates[mode].push(await connectionRate(client, server, 1, o.seconds));
          }
        }
        const [withLog, without] = [median(rates.logged), median(rates.unlogged)];
        const nflogRules = logged.v4.chains.reduce((n, c) => n + c.rules.filter((r) => r.action.kind === 'nflog').length, 0);
        rows.push({
          id: 'crr-flowlog',
          what: `new TCP connections/s (allowed), pod → pod on one node, 1 client process, ${o.tier} ruleset with flow-log NFLOG rules (group read) vs the same ruleset without them`,
          value: `${fmtInt(Math.round(withLog))} /s`,
          floor: `${fmtInt(Math.round(without))} /s`,
          ratio: `${((withLog / without) * 100).toFixed(0)} %`,
          target: '≥ 95 %',
          verdict: withLog / without >= 0.95 ? 'met' : 'missed',
          detail: `medians of ${o.runs} × ${o.seconds} s per mode, interleaved; all runs logged ${rates.logged.map((r) => Math.round(r)).join(', ')} / unlogged ${rates.unlogged.map((r) => Math.round(r)).join(', ')}; ${fmtInt(nflogRules)} NFLOG rules on the node, all in front of drops; the allowed first packet walks ${walked.logged} rules with them, ${walked.unlogged} without (tracePacket over iptables-nft-save)`,
          command: command('crr-flowlog'),
        });
      } finally {
        await reader.stop();
      }
    }
  } catch (err) {
    for (const id of DATAPLANE_ROWS.filter(wanted))
      if (!rows.some((r) => r.id === id)) rows.push(failedRow(id, 'data plane', err, command(id)));
  } finally {
    await sb?.destroy();
  }
  return rows;
}

function parseArgs(argv: readonly string[]): DataplaneBenchOptions {
  const { tier, seed, runs, seconds, only } = parseBenchFlags(argv, { runs: 3, seconds: 2 }, DATAPLANE_ROWS);
  return { tier, seed, runs, seconds, only, progress: (m) => console.error(`… ${m}`) };
}

await runAsScript(import.meta.url, 'bench-dataplane needs root (it builds a sandbox of network namespaces)', async () => {
  console.log(renderTable(await dataplaneBench(parseArgs(process.argv.slice(2)))));
});
