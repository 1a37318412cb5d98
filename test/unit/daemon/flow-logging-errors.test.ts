// The flow log explains each logged packet inside the NFLOG reader's packet callback, and for an egress drop runs
// the tracer to name the `domainNames` rule a lookup would have opened. A bug there must never reach the callback
// (an uncaught exception would stop the daemon that enforces): the drop record is still written, without that
// part, the failure is logged with the packet and the step, and netfence_flow_log_explain_errors_total counts it.
// The reader and the tracer are the ones createFlowLogging is handed: here a fake reader and a tracer that throws.

import { compile } from '../../../src/compile/index.js';
import { dropPrefix } from '../../../src/compile/flow-log.js';
import type { ClusterSource } from '../../../src/cluster/source.js';
import { DEFAULT_CONFIG } from '../../../src/config/schema.js';
import { createFlowLogging } from '../../../src/daemon/flow-logging.js';
import type { NflogPacket, NflogReaderOptions } from '../../../src/dataplane/nflog.js';
import type { LogFields, Logger } from '../../../src/log.js';
import type { ClusterSnapshot, DesiredState } from '../../../src/model/index.js';
import { createMetrics } from '../../../src/observe/metrics.js';
import { labels, makeNamespace, makePod, sel, settings, snapshot } from '../../helpers/builders.js';
import { cnp, cRule, cTcp, domains, networks, podSubject } from '../../helpers/cnp-builders.js';
import { metricValue } from '../../helpers/daemon-harness.js';

// "DomainNames is only supported for Accept rules": an Accept by name on TCP 443 above a Deny of the rest.
const cluster: ClusterSnapshot = snapshot({
  namespaces: [makeNamespace('shop')],
  pods: [makePod('shop', 'a', '10.244.1.10', labels({ app: 'client' }))],
  clusterPolicies: [
    cnp('shop-egress', 'Admin', 10, podSubject(sel(), sel({ app: 'client' })), {
      egress: [
        cRule('Accept', [domains('good.example')], [cTcp(443)], 'payment-api'),
        cRule('Deny', [networks('0.0.0.0/0')], undefined, 'nothing-else'),
      ],
    }),
  ],
});
const { desired } = compile(cluster, settings());

const denyChain = (d: DesiredState) =>
  d.v4.chains.find((c) => c.role.kind === 'cluster-policy' && c.role.policy === 'shop-egress' && c.role.direction === 'egress')!.name;

/** The pod's egress packet to an address no lookup returned, dropped by the Deny below the domainNames Accept. */
const packet = (dstPort: number): NflogPacket => ({
  group: 9476,
  prefix: dropPrefix({ kind: 'cluster-deny', chain: denyChain(desired), rule: 1 }),
  time: 1000,
  inIfindex: 3,
  outIfindex: 4,
  ip: { family: 4, src: '10.244.1.10', dst: '198.51.100.10', protocol: 6, srcPort: 40000, dstPort },
});

const source = { snapshot: () => cluster } as unknown as ClusterSource;

function capturingLogger(): Logger & { readonly errors: { message: string; fields?: LogFields }[] } {
  const errors: { message: string; fields?: LogFields }[] = [];
  const logger = {
    errors,
    error: (message: string, fields?: LogFields) => void errors.push({ message, ...(fields ? { fields } : {}) }),
    warn: () => {},
    info: () => {},
    debug: () => {},
    child: () => logger,
  };
  return logger;
}

async function start(tracer: () => never, from: ClusterSource = source) {
  const metrics = createMetrics();
  const logger = capturingLogger();
  let onPacket: ((p: NflogPacket) => void) | undefined;
  let now = 5000;
  const logging = createFlowLogging({
    config: { ...DEFAULT_CONFIG, nodeName: 'node-1' },
    logger,
    now: () => now,
    onExplainError: (step) => metrics.countFlowLogExplainError(step),
    startReader: async (opts: NflogReaderOptions) => {
      onPacket = opts.onPacket;
      return { stop: async () => {} };
    },
    missedLookups: tracer,
  });
  await logging.start(from, undefined);
  logging.synced({ desired });
  return {
    logging,
    logger,
    send: (p: NflogPacket) => onPacket!(p),
    advance: (ms: number) => void (now += ms),
    count: async (step = 'after-lookup') => metricValue(await metrics.render(), `netfence_flow_log_explain_errors_total{step="${step}"}`),
    records: () => {
      const answer = logging.query(new URLSearchParams());
      return 'records' in answer ? answer.records : [];
    },
  };
}

describe('flow log: a tracer that throws while explaining a drop', () => {
  const broken = (): never => {
    throw new Error('tracer bug');
  };

  it('still writes the drop record, without the domainNames part, and counts and logs the failure', async () => {
    const f = await start(broken);
    try {
      expect(() => f.send(packet(443))).not.toThrow();
      expect(f.records()).toHaveLength(1);
      expect(f.records()[0]).toMatchObject({
        src: { pod: 'shop/a' },
        reason: 'cluster-deny',
        because: 'dropped by ClusterNetworkPolicy shop-egress rule egress:1 nothing-else Deny',
      });
      expect(f.records()[0]).not.toHaveProperty('afterLookup');
      expect(await f.count()).toBe(1);
      expect(f.logger.errors).toHaveLength(1);
      expect(f.logger.errors[0]!.fields).toMatchObject({
        step: 'after-lookup',
        prefix: packet(443).prefix,
        src: '10.244.1.10',
        dst: '198.51.100.10',
        port: 443,
        error: expect.stringContaining('tracer bug'),
      });
    } finally {
      await f.logging.stop();
    }
  });

  it('logs a failure that repeats once per interval, counting every one', async () => {
    const f = await start(broken);
    try {
      f.send(packet(443));
      f.send(packet(444));
      f.send(packet(445));
      expect(f.logger.errors).toHaveLength(1);
      f.advance(10_001);
      f.send(packet(446));
      expect(f.logger.errors).toHaveLength(2);
      expect(f.logger.errors[1]!.fields).toMatchObject({ suppressedSinceLast: 2, port: 446 });
      expect(await f.count()).toBe(4);
      // Each packet's record is written all the same.
      expect(f.records().map((r) => r.port)).toEqual([443, 444, 445, 446]);
    } finally {
      await f.logging.stop();
    }
  });
});

describe('flow log: an explanation that throws before any record exists', () => {
  // The cluster view the explanation reads (which pods own the addresses) failing stands for any other bug there.
  const failing = {
    snapshot: () => {
      throw new Error('snapshot bug');
    },
  } as unknown as ClusterSource;

  it('writes no record, stays up for the next packet, and counts and logs the failure', async () => {
    const f = await start(() => {
      throw new Error('not reached');
    }, failing);
    try {
      expect(() => f.send(packet(443))).not.toThrow();
      expect(() => f.send(packet(444))).not.toThrow();
      expect(f.records()).toEqual([]);
      expect(await f.count('explain')).toBe(2);
      expect(f.logger.errors).toHaveLength(1);
      expect(f.logger.errors[0]!.fields).toMatchObject({
        step: 'explain',
        written: 'no record',
        error: expect.stringContaining('snapshot bug'),
      });
    } finally {
      await f.logging.stop();
    }
  });
});
