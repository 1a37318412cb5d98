// Event → programmed latency: from the first cluster event not yet programmed to the end of the first
// sync that began after it.

import type { EventKind, Metrics } from '../observe/metrics.js';
import type { SyncReport } from '../reconcile/sync-reports.js';

export interface EventLatency {
  /** A cluster event arrived. */
  eventSeen(): void;
  /** A sync subscriber: the sync that just finished took `seconds`. */
  synced(result: Pick<SyncReport, 'seconds'>): void;
}

/** Events before the first sync (the initial lists) are start-up, not latency, and are not counted. */
export function eventLatency(metrics: Pick<Metrics, 'observeEventToProgrammed'>): EventLatency {
  let started = false;
  let firstPending: number | undefined;
  return {
    eventSeen: () => {
      if (started && firstPending === undefined) firstPending = performance.now();
    },
    synced: ({ seconds }) => {
      const now = performance.now();
      if (firstPending !== undefined && firstPending <= now - seconds * 1000) {
        metrics.observeEventToProgrammed((now - firstPending) / 1000);
        firstPending = undefined;
      }
      started = true;
    },
  };
}

export const eventKind = (kind: string): EventKind =>
  kind === 'Pod' ? 'pod' : kind === 'Namespace' ? 'namespace' : kind === 'Node' ? 'node' : 'networkpolicy';
