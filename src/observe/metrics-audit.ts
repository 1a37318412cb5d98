// Audit mode's series (docs/audit.md): new connections an audited policy would change, as the flow log
// saw them (rate-limited per rule like the drops), by the pod whose audited policy it is.

import { Counter, type Registry } from 'prom-client';
import { MAX_DENIED_PODS } from './metrics-denied-sync.js';

export interface AuditLabels {
  readonly namespace: string;
  readonly pod: string;
  readonly direction: 'ingress' | 'egress';
  /** The audited policy (`ns/name`). */
  readonly policy: string;
}

export interface AuditMetrics {
  countAudited(labels: AuditLabels): void;
}

export function createAuditMetrics(registers: Registry[]): AuditMetrics {
  const audited = new Counter({
    name: 'netfence_audit_connections_total',
    help: 'New connections an audited policy would change (would deny or would allow), as seen by the flow log, by pod, direction and audited policy.',
    labelNames: ['namespace', 'pod', 'direction', 'policy'] as const,
    registers,
  });
  // The same bound as the denied series: a node's pods, then one shared `_other`.
  const pods = new Set<string>();
  return {
    countAudited: (labels) => {
      const key = `${labels.namespace}/${labels.pod}`;
      const bounded = pods.has(key) || pods.size < MAX_DENIED_PODS ? labels : { ...labels, namespace: '_other', pod: '_other' };
      if (bounded === labels) pods.add(key);
      audited.inc({ ...bounded });
    },
  };
}
