// Event → programmed latency as a sync subscriber: observe/event-latency.ts keeps the waiting events and
// makes one observation per sync; this wires it to the cluster events and the metrics.

import { EventLatency } from '../observe/event-latency.js';
import type { EventKind, Metrics } from '../observe/metrics.js';
import type { SyncReport } from '../reconcile/sync-reports.js';

export interface EventLatencySubscriber {
  /** A cluster event arrived. */
  eventSeen(): void;
  /** A sync subscriber: the sync that just finished took `seconds`. */
  synced(result: Pick<SyncReport, 'seconds'>): void;
}

export function eventLatency(metrics: Pick<Metrics, 'observeEventToProgrammed'>): EventLatencySubscriber {
  const latency = new EventLatency((seconds) => metrics.observeEventToProgrammed(seconds));
  return {
    eventSeen: () => latency.eventSeen(),
    synced: ({ seconds }) => latency.programmed(seconds),
  };
}

export const eventKind = (kind: string): EventKind =>
  kind === 'Pod' ? 'pod' : kind === 'Namespace' ? 'namespace' : kind === 'Node' ? 'node' : 'networkpolicy';
