// Whether the ClusterNetworkPolicy API is served, for KubeSource: discovery asked at start and every
// `crdRecheckMs` while it is not installed, and, after its list or watch answered 404, asked again until
// GONE_CONFIRMATIONS absent answers in a row confirm it is gone. KubeSource keeps the informer and the
// store; this keeps the timers, the counts and what is logged, and tells the source what to do.

import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { CNP_API, describeError, GONE_CONFIRMATIONS, statusOf } from './kube-source-options.js';
import type { Logger } from './source.js';

/** What discovery asks of the source that owns the informer and the store. */
export interface DiscoveryHost {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly crdRecheckMs: number;
  readonly goneConfirmIntervalMs: number;
  /** Told while the API is suspected gone, undefined once settled (KubeSourceOptions.onUnconfirmed). */
  readonly onUnconfirmed: (reason: string | undefined) => void;
  /** True: the failure is the caller's to report (KubeSourceOptions.onFailure). */
  readonly onFailure: (err: unknown) => boolean;
  /** Delay before retry number `attempt`. */
  backoff(attempt: number): number;
  isStopped(): boolean;
  /** A ClusterNetworkPolicy informer exists. */
  watching(): boolean;
  /** Make the informer and start it. */
  watch(): void;
  /** Start the kept informer again (resuming its watch). */
  resume(): void;
  /** The API is gone: drop the informer and forget its objects. */
  forget(): void;
  /** Discovery has answered once: sync may complete. */
  settled(): void;
}

export class ClusterPolicyDiscovery {
  /** True until discovery has said whether the ClusterNetworkPolicy API exists (sync waits for that). */
  discovering = true;
  private absentLogged = false;
  private timer: NodeJS.Timeout | undefined;
  private attempts = 0;
  /** The API answered 404 and is not yet confirmed gone: absent answers so far, since when. */
  private suspect: { absent: number; since: Date; timer: NodeJS.Timeout | undefined } | undefined;
  /** Discovery listed it again: settled once its watch is connected (a second 404 before that suspects it again). */
  private resuming = false;

  constructor(private readonly host: DiscoveryHost) {}

  /**
   * Watches ClusterNetworkPolicies once discovery lists them. A cluster without the CRD gets a 404:
   * that is logged once and looked at again every `crdRecheckMs` (installing the CRD later is picked up),
   * never retried as an error. Other failures retry with backoff, and sync waits: programming without
   * the admin tier's Denies would open traffic they close.
   */
  async discover(): Promise<void> {
    const { host } = this;
    this.timer = undefined;
    if (host.isStopped()) return;
    const answer = await this.ask();
    if (host.isStopped()) return;
    if (typeof answer !== 'boolean') {
      const delayMs = host.backoff(this.attempts++);
      if (!host.onFailure(answer.error))
        host.logger.warn('ClusterNetworkPolicy discovery failed; retrying', { delayMs, error: describeError(answer.error) });
      this.schedule(delayMs);
      return;
    }
    const installed = answer;
    this.attempts = 0;
    if (installed && !host.watching()) {
      host.logger.info('ClusterNetworkPolicy API found; watching it', { api: `${CNP_API.group}/${CNP_API.version}` });
      this.absentLogged = false;
      host.watch();
    } else if (!installed) {
      if (!this.absentLogged) {
        host.logger.info('ClusterNetworkPolicy API not installed; enforcing NetworkPolicy only', {
          api: `${CNP_API.group}/${CNP_API.version}`,
        });
        this.absentLogged = true;
      }
      this.schedule(host.crdRecheckMs);
    }
    this.discovering = false;
    host.settled();
  }

  /**
   * The ClusterNetworkPolicy list or watch answered 404. Nothing is forgotten yet: the informer stays stopped,
   * the policies last seen stay in the store (so in the kernel), the daemon is told (not ready), and discovery
   * is asked every `goneConfirmIntervalMs`: GONE_CONFIRMATIONS absent answers in a row drop the policies; an
   * answer that lists the resource restarts the informer (resuming its watch).
   */
  suspectGone(err: unknown): void {
    if (this.suspect) return;
    this.resuming = false;
    this.suspect = { absent: 0, since: new Date(), timer: undefined };
    this.host.logger.warn('the ClusterNetworkPolicy API answered 404; confirming through discovery, still enforcing its policies', {
      confirmations: GONE_CONFIRMATIONS,
      intervalMs: this.host.goneConfirmIntervalMs,
      error: describeError(err),
    });
    this.reportSuspect();
    this.scheduleConfirm();
  }

  /** The ClusterNetworkPolicy watch is connected: a resumed API is settled now. */
  connected(): void {
    if (!this.resuming) return;
    this.resuming = false;
    this.host.logger.info('watching ClusterNetworkPolicies again; their API is confirmed served');
    this.host.onUnconfirmed(undefined);
  }

  stop(): void {
    clearTimeout(this.timer);
    clearTimeout(this.suspect?.timer);
  }

  /** Whether discovery lists the ClusterNetworkPolicy resource (a 404 for its group-version: no); other failures as they are. */
  private async ask(): Promise<boolean | { error: unknown }> {
    try {
      const custom = this.host.kubeConfig.makeApiClient(CustomObjectsApi);
      const list = await custom.getAPIResources({ group: CNP_API.group, version: CNP_API.version });
      return (list.resources ?? []).some((r) => r.name === CNP_API.plural);
    } catch (err) {
      return statusOf(err) === 404 ? false : { error: err };
    }
  }

  private reportSuspect(): void {
    if (!this.suspect) return this.host.onUnconfirmed(undefined);
    this.host.onUnconfirmed(
      `the ClusterNetworkPolicy API answered 404 at ${this.suspect.since.toISOString()}; confirming it is gone ` +
        `(${this.suspect.absent} of ${GONE_CONFIRMATIONS} absent answers from discovery), its last policies still enforced`,
    );
  }

  private scheduleConfirm(): void {
    if (this.host.isStopped() || !this.suspect) return;
    this.suspect.timer = setTimeout(() => void this.confirmGone(), this.host.goneConfirmIntervalMs);
    this.suspect.timer.unref();
  }

  private async confirmGone(): Promise<void> {
    const { host } = this;
    if (host.isStopped() || !this.suspect) return;
    const answer = await this.ask();
    if (host.isStopped() || !this.suspect) return;
    if (answer === true) {
      host.logger.info('discovery lists the ClusterNetworkPolicy API again; watching it again', { absentAnswers: this.suspect.absent });
      this.suspect = undefined;
      // Still not settled: ready again only once its watch is connected (connected()).
      this.resuming = true;
      host.resume();
      return;
    }
    // A failed discovery request says nothing either way: the count stands and discovery is asked again.
    if (answer === false) this.suspect.absent++;
    else
      host.logger.warn('ClusterNetworkPolicy discovery failed while confirming the API is gone; asking again', {
        error: describeError(answer.error),
      });
    if (this.suspect.absent < GONE_CONFIRMATIONS) {
      this.reportSuspect();
      return this.scheduleConfirm();
    }
    this.suspect = undefined;
    this.drop();
    this.reportSuspect();
  }

  private schedule(delayMs: number): void {
    if (this.host.isStopped()) return;
    this.timer = setTimeout(() => void this.discover(), delayMs);
    this.timer.unref();
  }

  /** The CRD went away (its objects with it): forget them and go back to discovery. */
  private drop(): void {
    this.host.forget();
    this.host.logger.warn('ClusterNetworkPolicy API gone (discovery confirmed it); its policies are no longer enforced', {
      confirmations: GONE_CONFIRMATIONS,
      intervalMs: this.host.goneConfirmIntervalMs,
    });
    this.schedule(this.host.crdRecheckMs);
  }
}
