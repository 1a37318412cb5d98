// The DNS agent of egress by DNS name (ClusterNetworkPolicy `domainNames`; docs/dns-egress-design.md): a sync
// subscriber that, while the compiled plan has learned sets, holds the node's DNS answers to subject pods on one
// netlink socket (dataplane/dns-socket.ts), decides what each grants (dns/learner.ts), writes the learned members
// and releases the answer. Never drops or rewrites an answer: every one is released, granted or not. A write
// that fails or misses the hold deadline releases the answer ungranted (counted, logged rate-limited). A socket
// that cannot be opened is logged and retried on the next sync: answers then pass unheld (`--queue-bypass`) and
// grant nothing, so the rules fail closed for new names while DNS keeps working. Before it follows a set it did
// not count itself (at start: every set, adopted from before the restart), it reads what the kernel's sets hold
// and counts it against the per-node bound (learned-seed.ts).

import { openDnsSocket, type DnsSocket, type GrantOutcome } from '../dataplane/dns-socket.js';
import { DnsLearner, type AnswerDecision } from '../dns/learner.js';
import type { Logger } from '../log.js';
import type { DnsLearningPlan } from '../model/index.js';
import type { DnsMetrics } from '../observe/metrics-dns.js';
import type { SyncReport, SyncSubscriber } from '../reconcile/sync-reports.js';
import { createdSets, seededMembers, setsToRead } from './learned-seed.js';

export interface DnsEgressOptions {
  readonly netns: string | undefined;
  readonly logger: Logger;
  readonly metrics: DnsMetrics;
  /** Wall-clock milliseconds (the learned comment's timestamp, query and entry lifetimes). */
  readonly now?: () => number;
  /** Opens the socket (default: dataplane/dns-socket.ts); tests pass one. */
  readonly open?: typeof openDnsSocket;
  /** `ipset save` of the node's namespace: the learned members already in the kernel (none: nothing is read). */
  readonly readSets?: () => Promise<string>;
}

export interface DnsEgress extends SyncSubscriber {
  /**
   * Follows a plan: counts what its sets already hold, then opens, re-plans or closes the socket. Resolves once the
   * socket is in the plan's state. `created`: the sets the sync just created (empty, so not read); without it
   * every set the agent does not follow yet is read.
   */
  follow(plan: DnsLearningPlan | undefined, created?: ReadonlySet<string>): Promise<void>;
  /** The plan last followed: the learned sets on this node (for `/learned`). */
  plan(): DnsLearningPlan | undefined;
  /** Releases every held answer and closes the socket. */
  stop(): Promise<void>;
}

/** One warning per kind at most this often; the rest are counted in the next one. */
const WARN_EVERY_MS = 10_000;

export function createDnsEgress(opts: DnsEgressOptions): DnsEgress {
  const { logger, metrics } = opts;
  const now = opts.now ?? Date.now;
  let learner: DnsLearner | undefined;
  let socket: DnsSocket | undefined;
  let bound: { queue: number; group: number } | undefined;
  let deadlineMs = 100;
  let followed: DnsLearningPlan | undefined;
  // Plans apply one after another: a sync's report never races the previous one's open or close.
  let chain: Promise<void> = Promise.resolve();
  const lastWarn = new Map<string, { at: number; suppressed: number }>();
  const warn = (kind: string, message: string, fields: Record<string, unknown>): void => {
    const t = now();
    const w = lastWarn.get(kind);
    if (w && t - w.at < WARN_EVERY_MS) {
      w.suppressed++;
      return;
    }
    logger.warn(message, { ...fields, ...(w?.suppressed ? { suppressedSinceLast: w.suppressed } : {}) });
    lastWarn.set(kind, { at: t, suppressed: 0 });
  };

  const onQuery = (packet: Buffer): void => {
    const outcome = learner?.query(packet, now());
    if (outcome === 'pod-bound') metrics.countDnsBound('pending-pod');
    else if (outcome === 'node-bound') metrics.countDnsBound('pending-node');
  };
  const onAnswer = (s: DnsSocket, id: number, packet: Buffer): void => {
    const started = performance.now();
    metrics.countDnsAnswer();
    let decision: AnswerDecision | undefined;
    try {
      decision = learner?.answer(packet, now());
    } catch (err) {
      // A bug here must not hold DNS: released, granting nothing.
      warn('bug', 'dns egress: answer not read (released ungranted)', { error: (err as Error).message });
    }
    if (decision?.refused) {
      metrics.countDnsRefused(decision.refused);
      logger.debug('dns egress: answer grants nothing', { reason: decision.refused, detail: decision.reason });
    }
    if (decision?.nodeBound) {
      metrics.countDnsBound('learned-node', decision.nodeBound);
      warn('learned-node', 'dns egress: the node holds its most learned entries; new addresses refused', { refused: decision.nodeBound });
    }
    const adds = decision?.adds ?? [];
    if (adds.length === 0) {
      s.release(id);
      metrics.observeDnsHold((performance.now() - started) / 1000);
      return;
    }
    const members = adds.reduce((n, a) => n + a.members.length, 0);
    void s
      .grant(
        id,
        adds.map((a) => ({ set: a.set, op: 'add' as const, members: a.members })),
        deadlineMs,
      )
      .then((outcome: GrantOutcome) => {
        metrics.observeDnsHold((performance.now() - started) / 1000);
        metrics.setDnsLearnedEntries(learner?.learnedEntries ?? 0);
        if (outcome.ok) return metrics.countDnsLearned(members);
        if (outcome.kind === 'full') {
          metrics.countDnsBound('set-full');
          warn('set-full', 'dns egress: a learned set is full (its maxelem); new addresses refused until entries expire', {
            detail: outcome.message,
          });
        } else {
          metrics.countDnsReleasedOnError(outcome.kind);
          warn(outcome.kind, 'dns egress: answer released before its addresses were written (not allowed)', {
            kind: outcome.kind,
            detail: outcome.message,
          });
        }
      });
  };

  const close = async (): Promise<void> => {
    const s = socket;
    socket = undefined;
    bound = undefined;
    await s?.close();
  };

  // The sets whose members the learner counts: followed since they were created, or read back from the kernel.
  let counted = new Set<string>();
  /** What the kernel's sets in `names` already hold, or undefined when they could not be read (retried next time). */
  const readBack = async (plan: DnsLearningPlan, names: readonly string[]) => {
    if (names.length === 0 || !opts.readSets) return [];
    const readAt = now();
    try {
      return seededMembers(await opts.readSets(), names, readAt, plan.settings.maxTtlSeconds);
    } catch (err) {
      warn('read', 'dns egress: cannot read the learned sets back; what they hold is not counted yet (retried next sync)', {
        sets: names.length,
        error: (err as Error).message,
      });
      return undefined;
    }
  };

  const apply = async (plan: DnsLearningPlan | undefined, created: ReadonlySet<string> | undefined): Promise<void> => {
    followed = plan;
    if (!plan || plan.sets.length === 0) {
      if (socket) logger.info('dns egress: no domainNames rule on this node; answers no longer held');
      await close();
      learner = undefined;
      counted = new Set();
      return;
    }
    deadlineMs = plan.settings.holdDeadlineMs;
    // Read before the learner follows the new sets, so nothing is granted to them past the bound meanwhile.
    const toRead = setsToRead(plan, counted, created);
    const seeded = await readBack(plan, toRead);
    if (learner) learner.setPlan(plan);
    else learner = new DnsLearner(plan);
    // A set the sync recreated (drift repair, a new type) lost its members: they no longer take places.
    for (const name of created ?? []) if (counted.has(name)) learner.forgetSet(name);
    const unread = new Set(seeded ? [] : toRead);
    counted = new Set(plan.sets.map((s) => s.setName).filter((name) => !unread.has(name)));
    if (seeded && seeded.length > 0) {
      learner.seed(seeded);
      logger.info('dns egress: counted the learned entries the kernel already holds', { entries: seeded.length, sets: toRead.length });
    }
    metrics.setDnsLearnedEntries(learner.learnedEntries);
    const want = { queue: plan.settings.queueNum, group: plan.settings.nflogGroup };
    if (socket && bound && (bound.queue !== want.queue || bound.group !== want.group)) await close();
    if (socket) return;
    try {
      // Answers may arrive before the socket is handed back (right after the bind): kept until it is.
      let opened: DnsSocket | undefined;
      const early: [number, Buffer][] = [];
      const s = await (opts.open ?? openDnsSocket)({
        queue: want.queue,
        nflogGroup: want.group,
        netns: opts.netns,
        onAnswer: (id, packet) => (opened ? onAnswer(opened, id, packet) : void early.push([id, packet])),
        onQuery,
        onError: (error) => warn('socket', 'dns egress: netlink socket', { error }),
      });
      opened = s;
      for (const [id, packet] of early) onAnswer(s, id, packet);
      socket = s;
      bound = want;
      logger.info('dns egress: holding DNS answers to pods with domainNames rules', {
        queue: want.queue,
        nflogGroup: want.group,
        sets: plan.sets.length,
        ...(s.pid !== undefined ? { pid: s.pid } : {}),
      });
    } catch (err) {
      // Answers pass unheld and grant nothing (the queue rule's --queue-bypass); retried on the next sync.
      logger.error('dns egress is off: cannot bind the DNS queue and log group (domainNames rules allow nothing new)', {
        error: (err as Error).message,
      });
    }
  };

  const follow = (plan: DnsLearningPlan | undefined, created?: ReadonlySet<string>): Promise<void> =>
    (chain = chain.then(() => apply(plan, created)));
  return {
    follow,
    plan: () => followed,
    synced: (result: Pick<SyncReport, 'desired' | 'plans'>) => void follow(result.desired.dns, createdSets(result.plans)),
    stop: () => (chain = chain.then(close)),
  };
}
