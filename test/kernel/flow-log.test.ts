// The flow log end to end, with real packets: two sandbox nodes, a daemon on each (in-process, its
// NFLOG reader started inside the node's network namespace), one API server. A denied probe shows up
// in the daemon's log and in `netfence drops` naming both pods and the reason within 2 s; an allowed
// probe does not; a flood of one denied flow stays a bounded number of kernel messages and log lines.
// Also the reader on its own: real kernel messages parsed field by field, and a clear error when the
// group is taken.

import { jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropsCommand } from '../../src/cli/drops.js';
import { main } from '../../src/cli/main.js';
import type { InspectReport } from '../../src/inspect/index.js';
import { run } from '../../src/dataplane/exec.js';
import { NflogBindError, startNflogReader, type NflogPacket } from '../../src/dataplane/nflog.js';
import type { FlowRecord } from '../../src/observe/flow-log.js';
import { createSandbox, type Sandbox, type SandboxPod } from '../../sandbox/index.js';
import { FakeApiServer, type KubeObject } from '../fakes/fake-apiserver.js';
import {
  httpGet,
  metricValue,
  namespaceObject,
  nodeObject,
  podObject,
  startNodeDaemon,
  waitReady,
  waitUntil,
  type NodeDaemon,
} from '../helpers/daemon-harness.js';
import { flowLineErrors } from '../helpers/flow-record-schema.js';
import { createNetns, describeKernel, type Netns } from '../helpers/netns.js';

jest.setTimeout(90_000);

const NODES = [
  { name: 'n1', podCidr: '10.244.1.0/24' },
  { name: 'n2', podCidr: '10.244.2.0/24' },
];
const PODS = [
  { namespace: 'prod', name: 'db', node: 'n1', labels: { app: 'db' } },
  { namespace: 'prod', name: 'web', node: 'n1', labels: { app: 'web' } },
  { namespace: 'dev', name: 'api', node: 'n2', labels: { app: 'api' } },
] as const;

// prod/db: isolated for ingress by two policies; only app=web pods of prod reach it on TCP 80.
const POLICIES: KubeObject[] = [
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'default-deny', namespace: 'prod' },
    spec: { podSelector: {}, policyTypes: ['Ingress'] },
  },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'db', namespace: 'prod' },
    spec: {
      podSelector: { matchLabels: { app: 'db' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 80 }] }],
    },
  },
];

const REASON = 'prod/db is isolated for ingress; policies prod/db, prod/default-deny select it; none allowed this peer';

describeKernel('flow log of denied connections in the sandbox', () => {
  let sandbox: Sandbox;
  let server: FakeApiServer;
  let dir: string;
  const daemons: NodeDaemon[] = [];
  const pod = (key: string): SandboxPod => sandbox.pods().find((p) => p.key === key)!;
  const n1 = (): NodeDaemon => daemons.find((d) => d.node.name === 'n1')!;
  const drops = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await dropsCommand(['--url', n1().url, ...args], { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };
  const recordsOf = async (...args: string[]): Promise<FlowRecord[]> =>
    (await drops('--json', ...args)).out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as FlowRecord);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nft-flowlog-'));
    sandbox = await createSandbox({ nodes: NODES });
    await Promise.all(PODS.map(({ labels: _l, ...p }) => sandbox.addPod(p)));
    server = new FakeApiServer();
    await server.start();
    for (const node of sandbox.nodes()) server.create(nodeObject(node));
    for (const ns of ['prod', 'dev']) server.create(namespaceObject(ns));
    for (const p of PODS) server.create(podObject(pod(`${p.namespace}/${p.name}`), p.labels));
    for (const p of POLICIES) server.create(p);
    const kubeconfig = server.writeKubeconfig(dir);
    // n1 also logs allowed connections (opt-in); n2 runs the defaults.
    for (const node of sandbox.nodes()) {
      daemons.push(
        await startNodeDaemon(
          node,
          { kubeconfig },
          { 'batch-window-ms': '10', ...(node.name === 'n1' ? { 'flow-log-allowed': 'true' } : {}) },
        ),
      );
    }
    await Promise.all(daemons.map((d) => waitReady(d)));
  });

  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop().catch(() => undefined)));
    await server?.stop();
    await sandbox?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a denied probe is a log line and a `netfence drops` record naming both pods and the reason within 2 s', async () => {
    const probe = await sandbox.probe('dev/api', { protocol: 'TCP', ip: pod('prod/db').ip, port: 80, timeoutMs: 1000 });
    expect(probe.ok).toBe(false);
    const isDenied = (l: string): boolean => l.includes('"denied connection"') && l.includes('dev/api') && l.includes('prod/db');
    await waitUntil('the flow-log line on n1', () => n1().logs.some(isDenied), 2000);
    const text = n1().logs.find(isDenied)!;
    const line = JSON.parse(text) as Record<string, unknown>;
    expect(line).toMatchObject({ protocol: 'tcp', port: 80, direction: 'ingress', reason: 'isolated', because: REASON });
    // The line operators ship (docs/flow-record.schema.json): both ends field by field, the node, the packets.
    expect(flowLineErrors(text)).toEqual([]);
    expect(line).toMatchObject({
      node: 'n1',
      source: { ip: pod('dev/api').ip, namespace: 'dev', pod: 'api', labels: { app: 'api' } },
      destination: { ip: pod('prod/db').ip, port: 80, namespace: 'prod', pod: 'db', labels: { app: 'db' } },
      packets: 1,
    });
    expect((line['source'] as { port?: number }).port).toEqual(expect.any(Number));
    expect(line['src']).toBe(`dev/api (${pod('dev/api').ip})`);
    expect(line['dst']).toBe(`prod/db (${pod('prod/db').ip})`);

    const records = await recordsOf('--pod', 'prod/db');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      src: { ip: pod('dev/api').ip, pod: 'dev/api' },
      dst: { ip: pod('prod/db').ip, pod: 'prod/db' },
      protocol: 'tcp',
      port: 80,
      direction: 'ingress',
      pod: 'prod/db',
      policies: ['prod/db', 'prod/default-deny'],
      because: REASON,
    });
    const human = await drops('--policy', 'prod/default-deny');
    expect(human.code).toBe(0);
    expect(human.out).toContain(`tcp/80 dev/api (${pod('dev/api').ip}) -> prod/db (${pod('prod/db').ip}), ingress`);
    expect(human.out.replace(/\s+/g, ' ')).toContain(REASON);
    // Filters that match nothing.
    expect(await recordsOf('--namespace', 'kube-system')).toEqual([]);
    expect(await recordsOf('--policy', 'prod/other')).toEqual([]);
  });

  it('an allowed probe leaves no denied record; with flow-log-allowed it is an "allowed connection" line naming the policy rule', async () => {
    const probe = await sandbox.probe('prod/web', { protocol: 'TCP', ip: pod('prod/db').ip, port: 80, timeoutMs: 2000 });
    expect(probe.ok).toBe(true);
    // A denied probe sent after it is logged, so the log is live when we look for the allowed one.
    const marker = await sandbox.probe('prod/web', { protocol: 'TCP', ip: pod('prod/db').ip, port: 81, timeoutMs: 1000 });
    expect(marker.ok).toBe(false);
    await waitUntil('the marker drop', async () => (await recordsOf('--pod', 'prod/web')).some((r) => r.port === 81), 2000);
    const fromWeb = await recordsOf('--pod', 'prod/web');
    expect(fromWeb.map((r) => r.port)).toEqual([81]);
    expect(n1().logs.filter((l) => l.includes('"denied connection"') && l.includes('"port":80') && l.includes('prod/web'))).toEqual([]);
    const allowedLine = n1().logs.find((l) => l.includes('"allowed connection"') && l.includes('prod/web'));
    expect(allowedLine).toBeDefined();
    expect(JSON.parse(allowedLine!)).toMatchObject({
      port: 80,
      direction: 'ingress',
      reason: 'allowed',
      because: 'allowed by policy prod/db rule ingress:0',
      policies: ['prod/db'],
    });
  });

  it('10,000 denied packets of one flow in a second: a bounded number of kernel messages, one record, at most two lines', async () => {
    const dst = pod('prod/db').ip;
    // One UDP socket, one source port: one flow. Each packet is NEW to conntrack (a dropped first packet
    // is never confirmed), so every one of them walks to the drop rule and meets the log rule's limit.
    const script = `
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('0.0.0.0', 40404))
t = time.time()
for i in range(10000):
    s.sendto(b'x', ('${dst}', 9999))
print(time.time() - t)
`;
    const elapsed = Number((await run('python3', ['-c', script], { netns: pod('dev/api').netns })).stdout.trim());
    expect(elapsed).toBeLessThan(5);
    const isFlood = (l: string): boolean => l.includes('denied connection') && l.includes('"port":9999');
    await waitUntil('the flood flow record', async () => (await recordsOf('--pod', 'prod/db')).some((r) => r.port === 9999), 2000);
    // Give the kernel's remaining messages time to arrive before counting.
    await new Promise((r) => setTimeout(r, 1500));
    const record = (await recordsOf('--pod', 'prod/db')).filter((r) => r.port === 9999);
    expect(record).toHaveLength(1);
    // The log rule passes the burst (5) plus 10 a second; the drop rule below it saw every packet.
    expect(record[0]!.count).toBeGreaterThanOrEqual(1);
    expect(record[0]!.count).toBeLessThanOrEqual(5 + 10 * Math.ceil(elapsed + 2));
    expect(n1().logs.filter(isFlood).length).toBeLessThanOrEqual(2);
    // Every flow-log line either daemon wrote so far (denied, allowed, repeated) conforms to the published schema.
    const flowLines = daemons.flatMap((d) => d.logs.filter((l) => /"message":"(denied|allowed|audited) connection( repeated)?"/.test(l)));
    expect(flowLines.length).toBeGreaterThanOrEqual(3);
    expect(flowLines.map((l) => ({ l, errors: flowLineErrors(l) })).filter((x) => x.errors.length > 0)).toEqual([]);
    const counters = (await run('iptables-save', ['-c', '-t', 'filter'], { netns: n1().node.netns })).stdout;
    const dbChain = counters.split('\n').find((l) => l.includes('nf-tw-') && l.includes('prod/db isolated for ingress'));
    expect(dbChain).toBeDefined();
    const dropped = Number(/^\[(\d+):/.exec(dbChain!)![1]);
    expect(dropped).toBeGreaterThanOrEqual(10_000);
    // inspect reads the same counters from the live node: per pod dropped, per policy allowed/dropped.
    let out = '';
    const code = await main(['inspect', '--netns', n1().node.netns, '--json'], { out: (t) => void (out += t), err: () => undefined });
    expect(code).toBe(0);
    const report = JSON.parse(out) as InspectReport;
    expect(report.pods.find((p) => p.pod === 'prod/db')!.ingress!.droppedPackets).toBeGreaterThanOrEqual(10_000);
    const dbPolicy = report.policies.find((p) => p.policy === 'prod/db' && p.direction === 'ingress')!;
    expect(dbPolicy.deniedPackets).toBeGreaterThanOrEqual(10_000);
    // prod/web's allowed probe to port 80 went through prod/db's only rule.
    expect(dbPolicy.allowedPackets).toBeGreaterThanOrEqual(1);
  });

  it('keeps reading after the daemon reprograms the node (a policy change) and names the new state', async () => {
    server.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'deny-web-egress', namespace: 'prod' },
      spec: { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Egress'] },
    });
    await waitUntil(
      'prod/web egress closed',
      async () => !(await sandbox.probe('prod/web', { protocol: 'TCP', ip: pod('dev/api').ip, port: 80, timeoutMs: 500 })).ok,
      10_000,
    );
    let seen: FlowRecord[] = [];
    await waitUntil(
      'the egress drop recorded',
      async () => (seen = await recordsOf('--pod', 'prod/web')).some((r) => r.direction === 'egress' && r.dst.pod === 'dev/api'),
      2000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; records: ${JSON.stringify(seen)}`);
    });
    expect(seen.find((r) => r.direction === 'egress')).toMatchObject({
      src: { pod: 'prod/web' },
      dst: { pod: 'dev/api' },
      pod: 'prod/web',
      reason: 'isolated',
      because: 'prod/web is isolated for egress; policy prod/deny-web-egress selects it; none allowed this peer',
    });
  });

  it('an invalid policy: a Warning Event on it from the nodes with pods in its namespace only, and its drops say it is invalid', async () => {
    server.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'broken', namespace: 'dev' },
      spec: { podSelector: { matchLabels: { app: 'api' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
    });
    // prod's pods are all on n1, dev's on n2. Every node used to write an Event for every invalid policy.
    server.create({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'broken-too', namespace: 'prod' },
      spec: { podSelector: { matchLabels: { app: 'none' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
    });
    const on = (name: string) => server.events().filter((e) => (e['regarding'] as { name?: string }).name === name);
    const reporters = (name: string) =>
      on(name)
        .map((e) => e['reportingInstance'])
        .sort();
    await waitUntil(
      'an Event from n2 on dev/broken and from n1 on prod/broken-too',
      () => on('broken').length > 0 && on('broken-too').length > 0,
      10_000,
    );
    // Both daemons have seen both problems (each reports its whole problem list at once).
    for (const d of daemons)
      await waitUntil(
        `${d.node.name} counts both problems`,
        async () => {
          const m = (await httpGet(`${d.url}/metrics`)).body;
          return (
            metricValue(m, 'netfence_policy_problems{policy="dev/broken"}') !== undefined &&
            metricValue(m, 'netfence_policy_problems{policy="prod/broken-too"}') !== undefined
          );
        },
        10_000,
      );
    expect(reporters('broken')).toEqual(['netfence-n2']);
    expect(reporters('broken-too')).toEqual(['netfence-n1']);
    expect(on('broken')[0]).toMatchObject({
      type: 'Warning',
      reason: 'PolicyNotEnforceable',
      regarding: { kind: 'NetworkPolicy', namespace: 'dev' },
    });
    const n2 = daemons.find((d) => d.node.name === 'n2')!;
    await waitUntil(
      'dev/api closed',
      async () => !(await sandbox.probe('prod/db', { protocol: 'TCP', ip: pod('dev/api').ip, port: 80, timeoutMs: 500 })).ok,
      10_000,
    );
    let seen: FlowRecord[] = [];
    await waitUntil(
      'the invalid-policy drop on n2',
      async () => {
        let out = '';
        await dropsCommand(['--url', n2.url, '--json', '--policy', 'dev/broken'], { out: (t) => void (out += t), err: () => undefined });
        seen = out
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as FlowRecord);
        return seen.length > 0;
      },
      2000,
    );
    expect(seen[0]).toMatchObject({
      reason: 'invalid-policy',
      src: { pod: 'prod/db' },
      dst: { pod: 'dev/api' },
      because:
        'dev/api is isolated for ingress; policy dev/broken selects it; none allowed this peer; dev/broken is invalid and allows nothing',
    });
    // Later syncs (another change) do not write the Event again.
    server.create(namespaceObject('later'));
    await new Promise((r) => setTimeout(r, 500));
    expect(on('broken')).toHaveLength(1);
    expect(server.requests.filter((r) => r.method === 'POST' && r.path.includes('/events')).length).toBe(2);
  });

  it('/metrics counts the denied connections and the daemon series', async () => {
    const metrics = (await httpGet(`${n1().url}/metrics`)).body;
    // Logged denied packets, once for each policy selecting the dropping pod (both isolate prod/db).
    for (const policy of ['prod/db', 'prod/default-deny'])
      expect(
        metricValue(
          metrics,
          `netfence_denied_packets_logged_total{namespace="prod",pod="db",direction="ingress",reason="isolated",policy="${policy}"}`,
        ),
      ).toBeGreaterThanOrEqual(2);
    expect(
      metricValue(
        metrics,
        'netfence_denied_packets_logged_total{namespace="prod",pod="web",direction="egress",reason="isolated",policy="prod/deny-web-egress"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    // Tools by their own names (the backend's iptables-nft-restore or iptables-legacy-restore, ipset, …).
    expect(metrics).toMatch(/^netfence_tool_invocations_total\{tool="iptables-(nft|legacy)-restore"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^netfence_tool_invocations_total\{tool="ipset"\} [1-9]\d*$/m);
    expect(metrics).not.toMatch(/^netfence_tool_failures_total\{tool="[^"]*restore"\}/m);
    expect(metricValue(metrics, 'netfence_last_successful_sync_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 600);
    // The policy created in the previous test was programmed after start-up: one latency sample at least.
    expect(metricValue(metrics, 'netfence_event_to_programmed_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(metricValue(metrics, 'netfence_flow_log_reader_errors_total')).toBe(0);
    expect(metrics).toMatch(/^netfence_build_info\{version="[^"]+",nodejs="[^"]+"\} 1$/m);
  });

  it('a denied ping: the record and the line carry the ICMP type, code and identifier the kernel logged', async () => {
    // One echo request (RFC 792: type 8, code 0, identifier, sequence, data) from a raw socket: this machine
    // has no ping binary, and a raw IPv4 ICMP socket leaves the checksum to the sender.
    const script = [
      'import socket, struct, sys',
      "m = struct.pack('!BBHHH', 8, 0, 0, 0x4e46, 1) + b'netfence'",
      "s = sum(struct.unpack('!%dH' % (len(m) // 2), m)); s = (s >> 16) + (s & 0xffff); s += s >> 16",
      "m = m[:2] + struct.pack('!H', ~s & 0xffff) + m[4:]",
      'socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).sendto(m, (sys.argv[1], 0))',
    ].join('\n');
    await run('python3', ['-c', script, pod('prod/db').ip], { netns: pod('dev/api').netns });
    const isPing = (r: FlowRecord): boolean => r.protocol === 'icmp' && r.src.pod === 'dev/api';
    await waitUntil("the ping's record on n1", async () => (await recordsOf('--pod', 'prod/db')).some(isPing), 2000);
    const record = (await recordsOf('--pod', 'prod/db')).find(isPing)!;
    expect(record).toMatchObject({ dst: { pod: 'prod/db' }, direction: 'ingress', icmp: { type: 8, code: 0, id: 0x4e46 } });
    expect(record).not.toHaveProperty('port');
    const text = n1().logs.find((l) => l.includes('"denied connection"') && l.includes('"protocol":"icmp"'))!;
    expect(flowLineErrors(text)).toEqual([]);
    expect(JSON.parse(text)).toMatchObject({ icmp: { type: 8, code: 0, name: 'echo-request', id: 0x4e46 } });
    expect((await drops('--pod', 'prod/db')).out).toContain(
      `icmp echo-request dev/api (${pod('dev/api').ip}) -> prod/db (${pod('prod/db').ip}), ingress`,
    );
  });
});

describeKernel('NFLOG reader on its own', () => {
  let ns: Netns;
  beforeAll(async () => {
    ns = await createNetns('nft-nflog');
    // The reader must see the kernel's messages, not fixtures: log a real TCP SYN in this namespace.
    await ns.exec('iptables', [
      '-A',
      'OUTPUT',
      '-p',
      'tcp',
      '--dport',
      '7',
      '-j',
      'NFLOG',
      '--nflog-group',
      '77',
      '--nflog-prefix',
      'nf:iso:nf-tw-test',
    ]);
    await ns.exec('iptables', ['-A', 'OUTPUT', '-p', 'tcp', '--dport', '7', '-j', 'DROP']);
  });
  afterAll(async () => ns?.destroy());

  it('parses the kernel message: group, prefix, addresses, protocol and ports', async () => {
    const packets: NflogPacket[] = [];
    const reader = await startNflogReader({ group: 77, netns: ns.name, onPacket: (p) => packets.push(p) });
    try {
      const script =
        "import socket\ns=socket.socket()\ns.settimeout(0.3)\ns.bind(('127.0.0.1',45678))\ntry: s.connect(('127.0.0.1',7))\nexcept Exception: pass";
      await ns.exec('python3', ['-c', script]);
      await waitUntil('a logged packet', () => packets.length > 0, 2000);
      expect(packets[0]).toMatchObject({
        group: 77,
        prefix: 'nf:iso:nf-tw-test',
        ip: { family: 4, src: '127.0.0.1', dst: '127.0.0.1', protocol: 6, srcPort: 45678, dstPort: 7 },
      });
      expect(Math.abs(packets[0]!.time - Date.now())).toBeLessThan(10_000);
    } finally {
      await reader.stop();
    }
  });

  it('refuses a group another reader holds in the same namespace, and says so', async () => {
    const first = await startNflogReader({ group: 78, netns: ns.name, onPacket: () => undefined });
    try {
      await expect(startNflogReader({ group: 78, netns: ns.name, onPacket: () => undefined })).rejects.toThrow(NflogBindError);
      await expect(startNflogReader({ group: 78, netns: ns.name, onPacket: () => undefined })).rejects.toThrow(
        /NFLOG group 78 is already read by another process/,
      );
    } finally {
      await first.stop();
    }
  });
});
