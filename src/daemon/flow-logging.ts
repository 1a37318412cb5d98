// The daemon's flow log, wired: an NFLOG reader in the daemon's network namespace, each packet
// explained against the last programmed chains and the cluster, recorded in the FlowLog ring (and the
// log), and served at /flows for `netfence drops`. A reader that cannot start is logged, never fatal:
// enforcement does not depend on it. Nor does explaining: a packet whose explanation throws is logged
// (rate-limited) and counted, and its drop record is still written when only the lookup tracer failed.

import type { ClusterSource } from '../cluster/source.js';
import type { DaemonConfig } from '../config/schema.js';
import { startNflogReader, type NflogReader } from '../dataplane/nflog.js';
import type { Logger } from '../log.js';
import type { DesiredState, Problem } from '../model/index.js';
import { FlowLog } from '../observe/flow-log.js';
import { answerFlowsQuery, type FlowsAnswer } from '../observe/flows-query.js';
import { explainAllowed, explainAudit, explainDrop, explainsDrop, invalidPoliciesOf, PodIndex } from '../observe/flows.js';
import type { NflogPacket } from '../dataplane/nflog.js';
import type { AuditedFlow, DeniedFlow, LookupTracer } from '../observe/flows.js';
import type { FlowExplainStep } from '../observe/metrics-denied-sync.js';
import type { SyncReport } from '../reconcile/sync-reports.js';

/** How long a packet waits for the sync that dropped it before it is explained with what we know. */
const PENDING_MS = 2000;
const MAX_PENDING = 1000;
/** At most one log line per failing step this often: a bug hit by every packet must not flood the log. */
const ERROR_LOG_EVERY_MS = 10_000;

/** A sync subscriber: drops are explained against what was last programmed and which policies are invalid. */
export interface FlowLogging {
  /** The /flows handler. */
  readonly query: (params: URLSearchParams) => FlowsAnswer;
  start(source: ClusterSource, netns: string | undefined): Promise<void>;
  synced(result: Pick<SyncReport, 'desired'>): void;
  problems(problems: readonly Problem[]): void;
  stop(): Promise<void>;
}

export interface FlowLoggingOptions {
  readonly config: DaemonConfig;
  readonly logger: Logger;
  readonly now: () => number;
  readonly onDenied?: (flow: DeniedFlow) => void;
  readonly onAudited?: (flow: AuditedFlow) => void;
  readonly onReaderError?: () => void;
  /** Explaining a packet threw at `step` (logged here, rate-limited). */
  readonly onExplainError?: (step: FlowExplainStep) => void;
  /** Defaults to startNflogReader. */
  readonly startReader?: typeof startNflogReader;
  /** Defaults to flow-lookups.ts missedLookups. */
  readonly missedLookups?: LookupTracer;
}

export function createFlowLogging(opts: FlowLoggingOptions): FlowLogging {
  const { config, logger } = opts;
  const node = config.nodeName;
  const flows = new FlowLog({ logger, now: opts.now, node, ...(opts.onDenied ? { onDenied: opts.onDenied } : {}) });
  // Opt-in (flowLogAllowed): allowed connections are log lines only, kept apart from the denied ring.
  const allowedFlows = new FlowLog({ logger, now: opts.now, node, message: 'allowed connection', capacity: 100 });
  // Audit mode: connections an audited policy would change, a ring of their own (`drops --audit`).
  const auditedFlows = new FlowLog({
    logger,
    now: opts.now,
    node,
    message: 'audited connection',
    ...(opts.onAudited ? { onAudited: opts.onAudited } : {}),
  });
  let desired: DesiredState | undefined;
  let invalid: ReadonlySet<string> = new Set();
  let reader: NflogReader | undefined;
  let timer: NodeJS.Timeout | undefined;
  let explain: ((packet: NflogPacket) => void) | undefined;
  // Packets that name a chain newer than the last sync we heard of (explainsDrop), with when they came.
  let pending: { packet: NflogPacket; at: number }[] = [];
  const lastError = new Map<FlowExplainStep, { at: number; suppressed: number }>();
  const failed = (step: FlowExplainStep, packet: NflogPacket, error: unknown): void => {
    opts.onExplainError?.(step);
    const t = opts.now();
    const last = lastError.get(step);
    if (last && t - last.at < ERROR_LOG_EVERY_MS) {
      last.suppressed++;
      return;
    }
    lastError.set(step, { at: t, suppressed: 0 });
    logger.error('flow log: explaining a packet failed (enforcement is unaffected)', {
      step,
      written: step === 'after-lookup' ? 'record without the domainNames rule' : 'no record',
      prefix: packet.prefix,
      ...(packet.ip ? { src: packet.ip.src, dst: packet.ip.dst, protocol: packet.ip.protocol, port: packet.ip.dstPort } : {}),
      error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      ...(last?.suppressed ? { suppressedSinceLast: last.suppressed } : {}),
    });
  };
  // Whether the last sync explains the packet; if judging throws, explain it now with what we know.
  const ready = (packet: NflogPacket): boolean => {
    try {
      return explainsDrop(packet, desired);
    } catch (error) {
      failed('explain', packet, error);
      return true;
    }
  };
  const retryPending = (force: boolean): void => {
    const now = opts.now();
    const keep: typeof pending = [];
    for (const p of pending) {
      if (force || ready(p.packet) || now - p.at > PENDING_MS) explain?.(p.packet);
      else keep.push(p);
    }
    pending = keep;
  };
  return {
    query: (params) => answerFlowsQuery(params, (filter) => (filter.audit ? auditedFlows : flows).list(filter)),
    async start(source, netns) {
      const pods = new PodIndex(() => source.snapshot());
      const explainOne = (packet: NflogPacket): void => {
        const allowed = explainAllowed(packet, { desired, snapshot: source.snapshot() }, pods);
        if (allowed) return allowedFlows.add(allowed);
        const audited = explainAudit(packet, { desired }, pods);
        if (audited) return auditedFlows.add(audited);
        const flow = explainDrop(
          packet,
          {
            desired,
            snapshot: source.snapshot(),
            invalidPolicies: invalid,
            chainPrefix: config.chainPrefix,
            ...(opts.missedLookups ? { missedLookups: opts.missedLookups } : {}),
            onLookupError: (error) => failed('after-lookup', packet, error),
          },
          pods,
        );
        if (flow) flows.add(flow);
      };
      // Runs in the reader's packet callback and the timer: nothing thrown here may reach them.
      explain = (packet) => {
        try {
          explainOne(packet);
        } catch (error) {
          failed('explain', packet, error);
        }
      };
      try {
        reader = await (opts.startReader ?? startNflogReader)({
          group: config.flowLogGroup,
          netns,
          onPacket: (packet) => {
            if (pending.length < MAX_PENDING && !ready(packet)) pending.push({ packet, at: opts.now() });
            else explain?.(packet);
          },
          onError: (error) => {
            opts.onReaderError?.();
            logger.warn('flow log reader', { error });
          },
        });
        logger.info('flow log: reading denied connections', { group: config.flowLogGroup, pid: reader.pid });
      } catch (err) {
        opts.onReaderError?.();
        logger.error('flow log is off: cannot read the NFLOG group (drops are still enforced)', { error: (err as Error).message });
      }
      // Closes aggregation windows even when no new packet arrives, so repeat counts are written.
      timer = setInterval(() => {
        retryPending(false);
        flows.closeWindows();
        allowedFlows.closeWindows();
        auditedFlows.closeWindows();
      }, 500);
      timer.unref();
    },
    synced: (result) => {
      desired = result.desired;
      retryPending(false);
    },
    problems: (p) => void (invalid = invalidPoliciesOf(p)),
    async stop() {
      if (timer) clearInterval(timer);
      await reader?.stop();
      retryPending(true);
    },
  };
}
