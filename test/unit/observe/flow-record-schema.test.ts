// The flow-log line as the daemon writes it (the FlowLog through the daemon's JSON logger) against the schema
// docs publish (docs/flow-record.schema.json), and the Vector example's field mapping against the same schema.
// The real daemon's lines, from the kernel's NFLOG, are checked in test/kernel/flow-log.test.ts.

import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { parse } from 'yaml';
import { createLogger } from '../../../src/log.js';
import { FlowLog } from '../../../src/observe/flow-log.js';
import type { LoggedFlow } from '../../../src/observe/flows.js';
import { FLOW_RECORD_SCHEMA, flowLineErrors, schemaPaths } from '../../helpers/flow-record-schema.js';

function capture(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'info', format: 'json', stream }) };
}

const flow = (over: Partial<LoggedFlow> = {}): LoggedFlow =>
  ({
    time: Date.parse('2026-11-24T11:20:01.123Z'),
    src: { ip: '10.244.2.9', pod: 'dev/api', labels: { app: 'api', 'app.kubernetes.io/part-of': 'shop' } },
    dst: { ip: '10.244.1.5', pod: 'prod/db', labels: { app: 'db' } },
    protocol: 'tcp',
    port: 5432,
    srcPort: 40404,
    direction: 'ingress',
    reason: 'isolated',
    pod: 'prod/db',
    policies: ['prod/db', 'prod/default-deny'],
    because: 'prod/db is isolated for ingress; policies prod/db, prod/default-deny select it; none allowed this peer',
    ...over,
  }) as LoggedFlow;

describe('flow-log lines against docs/flow-record.schema.json', () => {
  it('a denied flow, its repeated line, an end outside the cluster, an allowed and an audited one: all conform', async () => {
    const { lines, logger } = capture();
    let now = Date.parse('2026-11-24T11:20:01.200Z');
    const log = new FlowLog({ logger, now: () => now, node: 'node-1' });
    log.add(flow());
    log.add(flow());
    log.add(flow({ dst: { ip: '8.8.8.8', where: 'outside the cluster' }, direction: 'egress', pod: 'dev/api', port: 53, protocol: 'udp' }));
    const { port: _port, srcPort: _srcPort, ...portless } = flow({ protocol: 'icmp', policies: [] });
    log.add(portless as LoggedFlow);
    log.add({ ...portless, protocol: 'icmpv6', icmp: { type: 128, code: 0, id: 4660 } } as LoggedFlow);
    log.add({ ...portless, protocol: 'icmpv6', icmp: { type: 201, code: 3 } } as LoggedFlow);
    now += 20_000;
    log.closeWindows();
    new FlowLog({ logger, now: () => now, node: 'node-1', message: 'allowed connection' }).add(
      flow({ reason: 'allowed', policies: ['prod/db'], because: 'allowed by policy prod/db rule ingress:0' } as Partial<LoggedFlow>),
    );
    // A ClusterNetworkPolicy Deny whose rule was removed since the packet was logged: no rule named, the flag set.
    new FlowLog({ logger, now: () => now, node: 'node-1' }).add(
      flow({
        reason: 'cluster-deny',
        policies: ['lock'],
        because: 'dropped by ClusterNetworkPolicy lock, by an ingress rule changed since the packet was logged',
        ruleChanged: true,
      } as Partial<LoggedFlow>),
    );
    new FlowLog({ logger, now: () => now, node: 'node-1', message: 'audited connection' }).add(
      flow({ reason: 'would-deny', because: 'would be denied' } as Partial<LoggedFlow>),
    );
    await new Promise((r) => setImmediate(r));
    expect(lines).toHaveLength(9);
    for (const line of lines) expect({ line, errors: flowLineErrors(line) }).toEqual({ line, errors: [] });
    const [first, outside, icmpBare, echo, unnamed, repeated] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    // ICMP: the type and code when the logged copy held them (a line without them, as older daemons wrote, still conforms).
    expect(icmpBare).not.toHaveProperty('icmp');
    expect(echo!['icmp']).toEqual({ type: 128, code: 0, name: 'echo-request', id: 4660 });
    expect(unnamed!['icmp']).toEqual({ type: 201, code: 3 });
    expect(first).toMatchObject({
      node: 'node-1',
      source: { ip: '10.244.2.9', port: 40404, namespace: 'dev', pod: 'api', labels: { app: 'api', 'app.kubernetes.io/part-of': 'shop' } },
      destination: { ip: '10.244.1.5', port: 5432, namespace: 'prod', pod: 'db', labels: { app: 'db' } },
      packets: 1,
    });
    expect(outside!['destination']).toEqual({ ip: '8.8.8.8', port: 53, where: 'outside the cluster' });
    // The repeated line adds the window's other packets: summing packets counts each logged packet once.
    expect(repeated).toMatchObject({ message: 'denied connection repeated', count: 2, packets: 1 });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['reason'] === 'cluster-deny')).toMatchObject({
      policies: ['lock'],
      ruleChanged: true,
    });
  });

  it('the schema is not vacuous: a line without the node, or with an end that is neither a pod nor an address, is refused', async () => {
    const { lines, logger } = capture();
    new FlowLog({ logger, now: () => 0 }).add(flow());
    await new Promise((r) => setImmediate(r));
    expect(flowLineErrors(lines[0]!).join('\n')).toContain("must have required property 'node'");
    const broken = { ...(JSON.parse(lines[0]!) as Record<string, unknown>), node: 'n', source: { ip: '10.0.0.1', pod: 'x' } };
    expect(flowLineErrors(JSON.stringify(broken))).not.toEqual([]);
  });
});

describe('docs/examples/vector-flow-logs.yaml', () => {
  const config = parse(readFileSync('docs/examples/vector-flow-logs.yaml', 'utf8')) as {
    sources: Record<string, { type: string; extra_label_selector?: string }>;
    transforms: Record<string, { type: string; inputs: string[]; source: string }>;
    sinks: Record<string, { inputs: string[] }>;
  };
  const remap = config.transforms['netfence_flows']!;
  /** Every `line.a.b` the remap reads. */
  const read = new Set([...remap.source.matchAll(/\bline\.([A-Za-z_.]+[A-Za-z_])/g)].map((m) => m[1]!));

  it('reads the netfence pods (the DaemonSet label) and feeds the sink through the remap', () => {
    const [source] = Object.entries(config.sources);
    expect(source![1]).toMatchObject({ type: 'kubernetes_logs', extra_label_selector: 'app.kubernetes.io/name=netfence' });
    expect(remap).toMatchObject({ type: 'remap', inputs: [source![0]] });
    expect(Object.values(config.sinks).map((s) => s.inputs)).toEqual([['netfence_flows']]);
    const daemonset = readFileSync('deploy/daemonset.yaml', 'utf8');
    expect(daemonset).toContain('app.kubernetes.io/name: netfence');
  });

  it('every field it reads is one the schema defines', () => {
    const known = schemaPaths();
    expect([...read].filter((p) => !known.has(p))).toEqual([]);
  });

  it('it maps every field that carries information: node, time, both ends field by field, packets, policies, the verdict', () => {
    // level, timestamp aside (written, not about the flow), src/dst (the readable forms of source/destination),
    // port (destination.port), count and lastSeen (packets sums without them).
    const redundant = new Set(['level', 'src', 'dst', 'port', 'count', 'lastSeen']);
    const wanted = [...schemaPaths()].filter((p) => !redundant.has(p) && !['source', 'destination'].includes(p));
    expect(wanted.filter((p) => !read.has(p))).toEqual([]);
    expect(FLOW_RECORD_SCHEMA.required).toContain('node');
  });
});
