// `netfence drops` against the daemon's /flows endpoint (an ObserveServer with a FlowLog, no kernel):
// filters reach the daemon, text and --json output, and where it looks for the daemon by default.

import { daemonUrl, dropsCommand } from '../../../src/cli/drops.js';
import { formatRecord } from '../../../src/cli/flow-record-text.js';
import { nullLogger } from '../../../src/log.js';
import { HealthState } from '../../../src/observe/health.js';
import { ObserveServer } from '../../../src/observe/http-server.js';
import { createMetrics } from '../../../src/observe/metrics.js';
import { FlowLog, type FlowRecord } from '../../../src/observe/flow-log.js';
import type { DeniedFlow } from '../../../src/observe/flows.js';
import { deniedFlow } from '../../helpers/denied-flow.js';

const flow = (over: Partial<DeniedFlow>): DeniedFlow => deniedFlow(over);

describe('netfence drops', () => {
  let server: ObserveServer;
  let url: string;
  const log = new FlowLog({ logger: nullLogger, now: () => 0 });
  const queries: string[] = [];
  beforeAll(async () => {
    log.add(flow({}));
    log.add(flow({}));
    log.add(
      flow({
        src: { ip: '1.2.3.4', where: 'outside the cluster' },
        dst: { ip: '10.244.1.6', pod: 'prod/web' },
        pod: 'prod/web',
        policies: ['prod/web-in'],
        port: 443,
      }),
    );
    server = new ObserveServer({
      health: new HealthState({ now: () => 0, stallAfterMs: 1000 }),
      metrics: createMetrics(),
      flows: (q) => {
        queries.push(q.toString());
        return {
          records: log.list({
            pod: q.get('pod') ?? undefined,
            namespace: q.get('namespace') ?? undefined,
            policy: q.get('policy') ?? undefined,
          }),
        };
      },
    });
    const addr = await server.start('127.0.0.1:0');
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(async () => server.stop());

  const drops = async (...args: string[]) => {
    let out = '';
    const code = await dropsCommand(['--url', url, ...args], { out: (t) => void (out += t), err: () => undefined });
    return { code, out };
  };

  it('prints each denied flow with both ends, the count and the reason', async () => {
    const r = await drops();
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      [
        '11:20:01 tcp/80 dev/api (10.244.2.9) -> prod/db (10.244.1.5), ingress (×2)',
        '         prod/db is isolated for ingress; policy prod/default-deny selects it;',
        '         none allowed this peer',
        '11:20:01 tcp/443 1.2.3.4 (outside the cluster) -> prod/web (10.244.1.6), ingress',
        '         prod/db is isolated for ingress; policy prod/default-deny selects it;',
        '         none allowed this peer',
        '',
      ].join('\n'),
    );
  });

  it('passes the filters to the daemon and prints JSON lines', async () => {
    const r = await drops('--policy', 'prod/web-in', '--namespace', 'prod', '--json');
    expect(queries.at(-1)).toBe('namespace=prod&policy=prod%2Fweb-in');
    const records = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as FlowRecord);
    expect(records.map((x) => x.port)).toEqual([443]);
    expect((await drops('--pod', 'kube-system/dns')).out).toBe('no denied connections recorded\n');
  });

  it('finds the daemon on the configured listen address, loopback for a wildcard host', () => {
    expect(daemonUrl({ listenAddress: '0.0.0.0:9476' })).toBe('http://127.0.0.1:9476');
    expect(daemonUrl({ listenAddress: ':9000' })).toBe('http://127.0.0.1:9000');
    expect(daemonUrl({ listenAddress: '[::]:9476' })).toBe('http://[::1]:9476');
    expect(daemonUrl({ listenAddress: '10.0.0.5:9476' })).toBe('http://10.0.0.5:9476');
  });

  it('prints a ClusterNetworkPolicy Deny drop with the domainNames rule a lookup would have opened, within 80 columns', () => {
    const because =
      'dropped by ClusterNetworkPolicy shop-egress rule egress:1 nothing-else Deny; no lookup by shop/a of good.example or ' +
      '*.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept)';
    const record = {
      ...flow({ dst: { ip: '198.51.100.10', where: 'outside the cluster' }, direction: 'egress', reason: 'cluster-deny', because }),
      src: { ip: '10.244.1.10', pod: 'shop/a' },
      port: 443,
      seq: 1,
      count: 1,
      lastSeen: 0,
    } as FlowRecord;
    const text = formatRecord(record);
    expect(text.replace(/\s+/g, ' ')).toBe(
      `11:20:01 tcp/443 shop/a (10.244.1.10) -> 198.51.100.10 (outside the cluster), egress ${because} `,
    );
    expect(text.split('\n').filter((l) => l.length > 80)).toEqual([]);
  });

  it('formatRecord keeps lines within 80 columns', () => {
    const long = { ...flow({ because: 'x '.repeat(100) }), seq: 1, count: 1, lastSeen: 0 } as FlowRecord;
    expect(
      formatRecord(long)
        .split('\n')
        .filter((l) => l.length > 80),
    ).toEqual([]);
  });

  it('an ICMP drop shows its type by name (the code when not 0, the number for a type without a name) in place of a port', () => {
    const icmp = (protocol: string, type: number, code = 0): string => {
      const { port: _p, ...rest } = flow({ protocol, icmp: { type, code } });
      return formatRecord({ ...rest, seq: 1, count: 1, lastSeen: 0 } as FlowRecord).split('\n')[0]!;
    };
    expect(icmp('icmp', 8)).toBe('11:20:01 icmp echo-request dev/api (10.244.2.9) -> prod/db (10.244.1.5), ingress');
    expect(icmp('icmp', 3, 3)).toContain(' icmp destination-unreachable code 3 dev/api');
    expect(icmp('icmpv6', 135)).toContain(' icmpv6 neighbour-solicitation dev/api');
    expect(icmp('icmpv6', 143)).toContain(' icmpv6 mld2-listener-report dev/api');
    expect(icmp('icmpv6', 8)).toContain(' icmpv6 type 8 dev/api');
    // A record from a daemon that did not read the type: the protocol alone, as before.
    const { port: _p, ...bare } = flow({ protocol: 'icmp' });
    expect(formatRecord({ ...bare, seq: 1, count: 1, lastSeen: 0 } as FlowRecord)).toMatch(/^11:20:01 icmp dev\/api/);
  });
});
