// Strict mode's loop: after a sync programmed new rules, one conntrack dump per family, the pure
// decision (plan.ts), and one netlink mark update per flow whose verdict changed. Passes never overlap;
// requests that arrive during a pass fold into one more pass over the newest rules (coalescing, as
// kube-network-policies rate-limits its enforcer), so a burst of policy changes costs one extra dump.

import type { ConntrackTable } from '../dataplane/ctnetlink.js';
import type { Logger } from '../log.js';
import type { DesiredState, FamilyState, NodeSettings } from '../model/index.js';
import { rulesetOfDesired } from '../trace/desired.js';
import type { NodeLayout } from '../trace/packet.js';
import { tracePacket } from '../trace/trace.js';
import { markUpdates, planRevocations } from './plan.js';

export interface RevokerOptions {
  /** Opens the conntrack table of the namespace the rules live in (ctnetlink). */
  readonly open: () => Promise<ConntrackTable>;
  readonly logger: Logger;
  readonly now?: () => number;
  /** After each completed pass: its reports and its duration (metrics). */
  readonly onPass?: (reports: readonly PassReport[], seconds: number) => void;
  /** After a pass that failed. */
  readonly onFailure?: () => void;
}

/** What one family's part of a pass did and what it cost. */
export interface PassReport {
  readonly family: 4 | 6;
  readonly entries: number;
  readonly judged: number;
  readonly revoked: number;
  readonly restored: number;
  /** Entries carrying the bit once the pass was carried out (those that vanished meanwhile included). */
  readonly carrying: number;
  readonly gone: number;
  readonly dumpMs: number;
  readonly decideMs: number;
  readonly updateMs: number;
}

interface Job {
  readonly desired: DesiredState;
  readonly settings: NodeSettings;
}

export class Revoker {
  private table: ConntrackTable | undefined;
  private pending: Job | undefined;
  private running: Promise<void> | undefined;
  private readonly now: () => number;
  /** Reports of the last completed pass (tests, benchmarks). */
  lastPass: readonly PassReport[] = [];
  passes = 0;

  constructor(private readonly opts: RevokerOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** Re-judge every flow against `desired`; runs now, or right after the pass in progress. */
  request(desired: DesiredState, settings: NodeSettings): void {
    this.pending = { desired, settings };
    this.running ??= this.drain().finally(() => (this.running = undefined));
  }

  /** Resolves once no pass is running or waiting. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async stop(): Promise<void> {
    this.pending = undefined;
    await this.idle();
    await this.table?.close().catch(() => undefined);
    this.table = undefined;
  }

  private async drain(): Promise<void> {
    while (this.pending) {
      const job = this.pending;
      this.pending = undefined;
      const t0 = this.now();
      try {
        this.lastPass = await this.pass(job);
        this.passes++;
        this.opts.onPass?.(this.lastPass, (this.now() - t0) / 1000);
      } catch (err) {
        this.opts.onFailure?.();
        // Reopen next time: a worker that died or a socket in a bad state is not reused.
        await this.table?.close().catch(() => undefined);
        this.table = undefined;
        this.opts.logger.warn('strict mode: revoking established flows failed; retried after the next sync', {
          error: (err as Error).message,
        });
      }
    }
  }

  private async pass({ desired, settings }: Job): Promise<PassReport[]> {
    const bit = settings.revokeMark;
    if (bit === undefined) return [];
    this.table ??= await this.opts.open();
    const reports: PassReport[] = [];
    for (const state of [desired.v4, desired.v6]) {
      if (state.chains.length === 0) continue;
      const t0 = this.now();
      const entries = await this.table.list(state.family);
      const t1 = this.now();
      const { ruleset, ipsets } = rulesetOfDesired(state);
      const refuses = (packet: Parameters<typeof tracePacket>[2]) =>
        tracePacket(ruleset, ipsets, packet, { chainPrefix: settings.chainPrefix }).verdict === 'DROP';
      const plan = planRevocations(entries, layoutOf(state, settings), bit, refuses);
      const t2 = this.now();
      const result = await this.table.updateMarks(markUpdates(plan, bit));
      const t3 = this.now();
      const report: PassReport = {
        family: state.family,
        entries: plan.seen,
        judged: plan.judged,
        revoked: plan.revoke.length,
        restored: plan.restore.length,
        carrying: entries.filter((e) => (e.mark & bit) !== 0).length - plan.restore.length + plan.revoke.length,
        gone: result.gone,
        dumpMs: Math.round(t1 - t0),
        decideMs: Math.round(t2 - t1),
        updateMs: Math.round(t3 - t2),
      };
      reports.push(report);
      const level = report.revoked + report.restored > 0 ? 'info' : 'debug';
      this.opts.logger[level]('strict mode: established flows re-judged', { ...report });
    }
    return reports;
  }
}

/** Which addresses are this node's pods: the pod CIDRs plus every pod with a workload chain. */
function layoutOf(state: FamilyState, settings: NodeSettings): NodeLayout {
  const localIps = state.chains.flatMap((c) => (c.role.kind === 'workload' ? [c.role.ip] : []));
  return { bridge: settings.bridge, uplink: 'eth0', podCidrs: settings.podCidrs, localIps: [...new Set(localIps)] };
}
