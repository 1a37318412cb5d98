// What the sync loop publishes: each sync's report (its result) or failure, the problems and budget of each compile,
// and a heartbeat per pass. Health, metrics, the flow log, the service guards and strict mode each
// subscribe on their own rather than wrapping one another's callbacks.

import type { BudgetUse } from '../compile/index.js';
import type { DesiredState, Problem } from '../model/index.js';
import type { FamilyPlan } from '../plan/index.js';
import type { RunReason } from './runner.js';

export interface SyncReport {
  readonly reason: RunReason;
  /** The sync re-read the kernel first (start-up, drift timer, retry); otherwise it trusted the tracker. */
  readonly readKernel: boolean;
  /** From the start of the compile to the end of the apply. */
  readonly seconds: number;
  readonly applySeconds: number;
  readonly plans: readonly FamilyPlan[];
  /** The kernel had been changed by someone else, and this sync repaired it. */
  readonly drift: boolean;
  readonly desired: DesiredState;
}

export interface SyncFailure {
  readonly reason: RunReason;
  readonly error: Error;
  readonly stage: 'compile' | 'apply';
}

/** One subscriber's interest; every part is optional. */
export interface SyncSubscriber {
  synced?(result: SyncReport): void;
  /** A sync failed at `stage`; the previous rules stay and the sync is retried with backoff. */
  failed?(failure: SyncFailure): void;
  /** Every compile's problems (the source's and the compiler's), also when unchanged. */
  problems?(problems: readonly Problem[]): void;
  /** The node budget's use after the last compile (absent without a budget). */
  budget?(use: BudgetUse | undefined): void;
  /** A sync pass began: the loop is alive. */
  heartbeat?(): void;
}

/** Subscribers are told in the order they subscribed. */
export class SyncReports {
  private subscribers: readonly SyncSubscriber[] = [];

  /** Returns the unsubscribe. */
  subscribe(subscriber: SyncSubscriber): () => void {
    this.subscribers = [...this.subscribers, subscriber];
    return () => {
      this.subscribers = this.subscribers.filter((s) => s !== subscriber);
    };
  }

  synced(result: SyncReport): void {
    for (const s of this.subscribers) s.synced?.(result);
  }

  failed(failure: SyncFailure): void {
    for (const s of this.subscribers) s.failed?.(failure);
  }

  problems(problems: readonly Problem[]): void {
    for (const s of this.subscribers) s.problems?.(problems);
  }

  budget(use: BudgetUse | undefined): void {
    for (const s of this.subscribers) s.budget?.(use);
  }

  heartbeat(): void {
    for (const s of this.subscribers) s.heartbeat?.();
  }
}
