// What /healthz and /readyz answer. The sync loop reports into a HealthState; the HTTP server only
// reads it. Time comes from an injected clock so tests decide when the loop counts as stalled.

/** `detail`: ready, but something the operator should know (e.g. enforcing an older read of a source). */
export type Check = { readonly ok: true; readonly detail?: string } | { readonly ok: false; readonly reason: string };

export interface HealthChecks {
  /** Alive while the loop keeps reporting: a kubelet restart is the cure for a wedged loop. */
  liveness(): Check;
  /** Ready once this node enforces policy: the first full sync is programmed and bridged traffic reaches iptables. */
  readiness(): Check;
  /**
   * Started once the first full sync is programmed, whatever the bridge sysctls say (the kubelet's startupProbe:
   * liveness is not asked before it passes, so a long first list is not a stalled loop). Absent: liveness answers.
   */
  startup?(): Check;
}

export interface HealthStateOptions {
  /** Milliseconds, monotonic enough for intervals (Date.now or performance.now, or a fake). */
  readonly now: () => number;
  /**
   * The loop counts as dead when it has not called `heartbeat` for this long. The drift timer wakes it
   * every resync interval, so a few intervals is a safe bound.
   */
  readonly stallAfterMs: number;
  /** Told whenever readiness flips (e.g. Metrics.setReady). */
  readonly onReadyChange?: (ready: boolean) => void;
}

const OK: Check = { ok: true };

export class HealthState implements HealthChecks {
  private lastBeat: number;
  private stopped: string | undefined;
  private programmed = false;
  private bridgeNf: boolean | undefined;
  private bridgeNf6: boolean | undefined;
  private ipvs: string | undefined;
  private lastReady = false;
  private sourceProblem: string | undefined;
  private syncFailure: string | undefined;
  private unconfirmed: string | undefined;

  constructor(private readonly options: HealthStateOptions) {
    // Start-up counts as a beat: the loop gets a full stall window before its first report.
    this.lastBeat = options.now();
  }

  /** Called by the loop on every iteration, idle drift checks included. */
  heartbeat(): void {
    this.lastBeat = this.options.now();
    this.stopped = undefined;
    this.notify();
  }

  /** The loop ended or crashed; liveness fails at once instead of after the stall window. */
  loopStopped(reason: string): void {
    this.stopped = reason;
    this.notify();
  }

  /** The first full sync reached the kernel. Later failures keep the old rules in place, so this stays true. */
  fullSyncProgrammed(): void {
    this.programmed = true;
    this.notify();
  }

  /** Result of reading net.bridge.bridge-nf-call-iptables in this network namespace. */
  bridgeNfCallIptables(on: boolean): void {
    this.bridgeNf = on;
    this.notify();
  }

  /**
   * Result of reading net.bridge.bridge-nf-call-ip6tables, on a node with IPv6 pods; undefined where it
   * does not apply (no IPv6 pods: nothing bridged over IPv6 needs policy).
   */
  bridgeNfCallIp6tables(on: boolean | undefined): void {
    this.bridgeNf6 = on;
    this.notify();
  }

  /**
   * The cluster source could not be read completely (undefined: it reads cleanly again). Before the
   * first sync this is why nothing is programmed; after it the node enforces the last clean read, so it
   * stays ready and /readyz says what is stale.
   */
  sourceIncomplete(reason: string | undefined): void {
    this.sourceProblem = reason;
    this.notify();
  }

  /**
   * kube-proxy's IPVS mode was found (reason says what), or is gone (undefined). With IPVS, same-node
   * Service traffic never crosses FORWARD, so netfence would not enforce it: not ready while it is there.
   */
  ipvsDetected(reason: string | undefined): void {
    this.ipvs = reason;
    this.notify();
  }

  /**
   * The last sync failed (compile or apply): the node keeps its previous rules, but they no longer follow
   * the cluster, so it does not claim readiness until a sync succeeds again. Undefined clears it.
   */
  lastSyncFailed(reason: string | undefined): void {
    this.syncFailure = reason;
    this.notify();
  }

  /**
   * An API that can vanish (the ClusterNetworkPolicy CRD) answered 404 and discovery has not yet confirmed it
   * gone (undefined: settled). Its last policies stay enforced, but whether they still exist is unknown: not
   * ready until discovery answers either way.
   */
  apiUnconfirmed(reason: string | undefined): void {
    this.unconfirmed = reason;
    this.notify();
  }

  liveness(): Check {
    if (this.stopped !== undefined) return { ok: false, reason: `sync loop stopped: ${this.stopped}` };
    const silentMs = this.options.now() - this.lastBeat;
    if (silentMs > this.options.stallAfterMs) {
      return { ok: false, reason: `sync loop silent for ${Math.round(silentMs)} ms (limit ${this.options.stallAfterMs} ms)` };
    }
    return OK;
  }

  startup(): Check {
    if (this.stopped !== undefined) return { ok: false, reason: `sync loop stopped: ${this.stopped}` };
    return this.programmed ? OK : { ok: false, reason: 'starting: first full sync not programmed yet' };
  }

  readiness(): Check {
    const check = this.computeReadiness();
    this.report(check.ok);
    return check;
  }

  private computeReadiness(): Check {
    const live = this.liveness();
    if (!live.ok) return live;
    if (this.bridgeNf === undefined) return { ok: false, reason: 'net.bridge.bridge-nf-call-iptables not checked yet' };
    if (!this.bridgeNf) {
      return { ok: false, reason: 'net.bridge.bridge-nf-call-iptables is 0: bridged pod-to-pod traffic would bypass iptables' };
    }
    if (this.bridgeNf6 === false) {
      return { ok: false, reason: 'net.bridge.bridge-nf-call-ip6tables is 0: bridged IPv6 pod-to-pod traffic would bypass ip6tables' };
    }
    if (this.ipvs !== undefined) return { ok: false, reason: this.ipvs };
    if (!this.programmed) {
      const why = this.sourceProblem === undefined ? '' : ` (waiting for a complete read of the manifests: ${this.sourceProblem})`;
      return { ok: false, reason: `first full sync not programmed yet${why}` };
    }
    if (this.syncFailure !== undefined) return { ok: false, reason: `last sync failed (retrying): ${this.syncFailure}` };
    if (this.unconfirmed !== undefined) return { ok: false, reason: this.unconfirmed };
    if (this.sourceProblem !== undefined) return { ok: true, detail: `degraded: ${this.sourceProblem}` };
    return OK;
  }

  private notify(): void {
    this.report(this.computeReadiness().ok);
  }

  private report(ready: boolean): void {
    if (ready === this.lastReady) return;
    this.lastReady = ready;
    this.options.onReadyChange?.(ready);
  }
}
