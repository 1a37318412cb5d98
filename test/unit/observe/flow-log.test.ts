// The flow log's ring: one record and one line per flow, repeats counted inside the window, a
// closing line with the count, a bounded ring, and the filters `netfence drops` passes.

import type { Logger } from '../../../src/log.js';
import { FlowLog } from '../../../src/observe/flow-log.js';
import type { DeniedFlow } from '../../../src/observe/flows.js';
import { deniedFlow } from '../../helpers/denied-flow.js';

function recordingLogger(): { logger: Logger; lines: { msg: string; fields: Record<string, unknown> }[] } {
  const lines: { msg: string; fields: Record<string, unknown> }[] = [];
  const log = (msg: string, fields?: Record<string, unknown>): void => void lines.push({ msg, fields: fields ?? {} });
  const logger: Logger = { error: log, warn: log, info: log, debug: log, child: () => logger } as unknown as Logger;
  return { logger, lines };
}

const flow = (over: Partial<DeniedFlow> = {}): DeniedFlow => deniedFlow({ time: 0, ...over });

describe('FlowLog', () => {
  it('folds repeats of a flow inside the window into one record and one line, then writes the count', () => {
    let now = 0;
    const { logger, lines } = recordingLogger();
    const counted: DeniedFlow[] = [];
    const log = new FlowLog({ logger, now: () => now, windowMs: 10_000, onDenied: (f) => counted.push(f) });
    for (let i = 0; i < 10_000; i++) log.add(flow({ time: i % 1000 }));
    expect(log.list()).toHaveLength(1);
    expect(log.list()[0]).toMatchObject({ seq: 1, count: 10_000 });
    expect(lines.map((l) => l.msg)).toEqual(['denied connection']);
    expect(lines[0]!.fields).toMatchObject({
      src: 'dev/api (10.244.2.9)',
      dst: 'prod/db (10.244.1.5)',
      protocol: 'tcp',
      port: 80,
      direction: 'ingress',
      reason: 'isolated',
    });
    expect(counted).toHaveLength(10_000);
    now = 10_001;
    log.closeWindows();
    expect(lines.map((l) => l.msg)).toEqual(['denied connection', 'denied connection repeated']);
    expect(lines[1]!.fields['count']).toBe(10_000);
    // After the window the same flow is a new record (and a new line).
    log.add(flow({ time: 10_001 }));
    expect(log.list().map((r) => r.seq)).toEqual([1, 2]);
  });

  it('keeps only the newest records, and filters by pod, namespace, policy and seq', () => {
    const { logger } = recordingLogger();
    const log = new FlowLog({ logger, now: () => 0, capacity: 3 });
    for (let port = 1; port <= 5; port++) log.add(flow({ port }));
    expect(log.list().map((r) => r.port)).toEqual([3, 4, 5]);
    log.add(
      flow({
        src: { ip: '8.8.8.8', where: 'outside the cluster' },
        dst: { ip: '10.244.1.6', pod: 'prod/web' },
        pod: 'prod/web',
        policies: ['prod/web'],
      }),
    );
    expect(log.list({ pod: 'prod/web' }).map((r) => r.seq)).toEqual([6]);
    expect(log.list({ pod: 'dev/api' }).map((r) => r.seq)).toEqual([4, 5]);
    expect(log.list({ namespace: 'dev' }).map((r) => r.seq)).toEqual([4, 5]);
    expect(log.list({ namespace: 'de' })).toEqual([]);
    expect(log.list({ policy: 'prod/web' }).map((r) => r.seq)).toEqual([6]);
    expect(log.list({ since: 5 }).map((r) => r.seq)).toEqual([6]);
  });

  it('ICMP: each type and code its own record, the line naming it (an echo request and a neighbour solicitation are two flows)', () => {
    const { logger, lines } = recordingLogger();
    const log = new FlowLog({ logger, now: () => 0 });
    const icmp = (type: number, code = 0, id?: number): DeniedFlow => {
      const { port: _p, ...rest } = flow({ protocol: 'icmpv6', icmp: { type, code, ...(id !== undefined ? { id } : {}) } });
      return rest;
    };
    log.add(icmp(128, 0, 7));
    log.add(icmp(128, 0, 7));
    log.add(icmp(135));
    log.add(icmp(1, 4));
    log.add(icmp(200));
    expect(log.list().map((r) => [r.icmp, r.count])).toEqual([
      [{ type: 128, code: 0, id: 7 }, 2],
      [{ type: 135, code: 0 }, 1],
      [{ type: 1, code: 4 }, 1],
      [{ type: 200, code: 0 }, 1],
    ]);
    expect(lines.map((l) => l.fields['icmp'])).toEqual([
      { type: 128, code: 0, name: 'echo-request', id: 7 },
      { type: 135, code: 0, name: 'neighbour-solicitation' },
      { type: 1, code: 4, name: 'destination-unreachable' },
      { type: 200, code: 0 },
    ]);
    expect(lines[0]!.fields).not.toHaveProperty('port');
  });
});
