// Series for what netfence refuses from clients and servers it does not control: API responses that broke a
// bound (a WatchList stream that never ends, a line that never ends, silence, garbage), connections to the
// metrics port past a client's share, and policy Event reports coalesced or dropped. Each refusal is also
// logged (rate-limited where a flood could flood the log); the counters say how often.

import { Counter, type Registry } from 'prom-client';

/** The request a refused API response answered. */
export type ApiRequest = 'watch-list' | 'list' | 'watch';
/** Why it was refused (kube-list.ts StreamRefusalReason). */
export type ApiRefusalReason = 'line-too-long' | 'too-many-objects' | 'too-many-bytes' | 'deadline' | 'not-an-event';
/** Why the HTTP server closed a connection on arrival. */
export type ConnectionRefusal = 'per-peer' | 'total';
/** Why a /flows request from off the node was refused (http-server.ts AuthRefusal). */
export type FlowsAuthRefusal = 'unauthenticated' | 'forbidden' | 'error';
/** What became of a policy Event report that was not written as it came. */
export type EventReportOutcome = 'coalesced' | 'dropped';

export interface HostileInputMetrics {
  countApiRefusal(request: ApiRequest, reason: ApiRefusalReason): void;
  countConnectionRefused(why: ConnectionRefusal): void;
  countEventReports(outcome: EventReportOutcome, n?: number): void;
  countFlowsRequestRefused(why: FlowsAuthRefusal): void;
}

export function createHostileInputMetrics(registers: Registry[]): HostileInputMetrics {
  const apiRefusals = new Counter({
    name: 'netfence_api_responses_refused_total',
    help: 'API server responses refused for breaking a bound or the protocol, by request and reason (a refused WatchList falls back to paged lists; a refused list or watch is retried with backoff).',
    labelNames: ['request', 'reason'] as const,
    registers,
  });
  const connections = new Counter({
    name: 'netfence_http_connections_refused_total',
    help: "Connections to the metrics port closed on arrival: past one client's share (per-peer) or past the total.",
    labelNames: ['reason'] as const,
    registers,
  });
  const eventReports = new Counter({
    name: 'netfence_policy_event_reports_total',
    help: 'Policy Event reports not written as they came: coalesced (a newer report for the same object replaced a queued one) or dropped (past the cap on distinct Events per window).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const flowsRefused = new Counter({
    name: 'netfence_flows_requests_refused_total',
    help: 'Requests for /flows from off the node refused: no or unknown bearer token (unauthenticated), not allowed by RBAC (forbidden), or the API server could not be asked (error).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['per-peer', 'total'] as const) connections.labels({ reason }).inc(0);
  for (const outcome of ['coalesced', 'dropped'] as const) eventReports.labels({ outcome }).inc(0);
  return {
    countApiRefusal: (request, reason) => apiRefusals.inc({ request, reason }),
    countConnectionRefused: (reason) => connections.inc({ reason }),
    countEventReports: (outcome, n = 1) => eventReports.inc({ outcome }, n),
    countFlowsRequestRefused: (reason) => flowsRefused.inc({ reason }),
  };
}
