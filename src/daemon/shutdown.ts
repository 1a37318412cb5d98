// Stopping the daemon leaves the programmed rules in place: the kernel keeps enforcing the last state.
// The order: no new work first (events, the guards' repairs, the sync loop), then the helpers that act on
// the kernel or read from it, then readiness says stopped, and the watches and the HTTP server last, so
// /healthz answers until the end.

import type { AntiSpoofGuard } from '../antispoof/guard.js';
import type { ClusterSource } from '../cluster/source.js';
import type { IpsetWriter } from '../dataplane/ipset-writer.js';
import type { HealthState } from '../observe/health.js';
import type { ObserveServer } from '../observe/http-server.js';
import type { Reconciler } from '../reconcile/reconciler.js';
import type { Revoker } from '../revoke/revoker.js';
import type { DnsEgress } from './dns-egress.js';
import type { FlowLogging } from './flow-logging.js';
import type { ServiceGuards } from './service-guards.js';

export interface DaemonParts {
  /** Subscriptions to undo: cluster events, tool-run counts. */
  readonly unsubscribe: readonly (() => void)[];
  readonly guards: Pick<ServiceGuards, 'stop'>;
  readonly reconciler: Pick<Reconciler, 'stop'>;
  /** The ipset writer's netlink socket (or its netns relay). */
  readonly sets: Pick<IpsetWriter, 'close'>;
  readonly revoker: Pick<Revoker, 'stop'> | undefined;
  readonly antiSpoof: Pick<AntiSpoofGuard, 'stop'> | undefined;
  readonly flowLogging: Pick<FlowLogging, 'stop'> | undefined;
  /** The DNS agent: releases every answer it holds before it unbinds. */
  readonly dnsEgress?: Pick<DnsEgress, 'stop'> | undefined;
  readonly health: Pick<HealthState, 'loopStopped'>;
  readonly source: Pick<ClusterSource, 'stop'>;
  readonly server: Pick<ObserveServer, 'stop'>;
}

export async function shutdown(parts: DaemonParts): Promise<void> {
  for (const unsubscribe of parts.unsubscribe) unsubscribe();
  parts.guards.stop();
  parts.reconciler.stop();
  await parts.sets.close();
  await parts.revoker?.stop();
  await parts.antiSpoof?.stop();
  await parts.flowLogging?.stop();
  await parts.dnsEgress?.stop();
  parts.health.loopStopped('stopped');
  await parts.source.stop();
  await parts.server.stop();
}
