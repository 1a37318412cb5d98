// The daemon's record of denied connections: one structured log line and one ring entry per flow
// (source, destination, protocol, port, direction), with repeats inside a window folded into a count,
// so a flood of retransmitted SYNs is one line, not thousands. The ring is bounded; `netfence drops`
// reads it through the daemon's HTTP endpoint.

import type { Logger } from '../log.js';
import type { AuditedFlow, DeniedFlow, FlowEnd, LoggedFlow } from './flows.js';
import { icmpTypeName, type FlowIcmp } from './icmp-names.js';

export type FlowRecord = LoggedFlow & {
  /** Increases by one per new record: `since=<seq>` returns only newer records (follow mode). */
  readonly seq: number;
  /** Packets logged for this flow while its window was open (kernel rate limit applies before this). */
  count: number;
  lastSeen: number;
};

export interface FlowFilter {
  /** `ns/name`: either end is this pod. */
  readonly pod?: string | undefined;
  /** Either end is a pod in this namespace. */
  readonly namespace?: string | undefined;
  /** `ns/name`: the policy is among those that select the dropping pod. */
  readonly policy?: string | undefined;
  /** Only records with a greater seq. */
  readonly since?: number | undefined;
  /** The audit records (would deny / would allow) instead of the drops. */
  readonly audit?: boolean | undefined;
}

export interface FlowLogOptions {
  readonly logger: Logger;
  readonly now: () => number;
  /** Records kept (oldest go first). */
  readonly capacity?: number;
  /** Repeats of a flow within this long after its first packet join its record instead of a new line. */
  readonly windowMs?: number;
  /** Called once per logged packet of a denied flow (counters). */
  readonly onDenied?: (flow: DeniedFlow) => void;
  /** Called once per logged packet of an audited flow (counters). */
  readonly onAudited?: (flow: AuditedFlow) => void;
  /** The log line's message: `denied connection` (default) or `allowed connection`. */
  readonly message?: string;
  /** This node's name, on every line (a shipped line must say where it was seen). */
  readonly node?: string;
}

export const DEFAULT_RING_CAPACITY = 1000;
export const DEFAULT_WINDOW_MS = 10_000;

const isAudited = (flow: LoggedFlow): flow is AuditedFlow => flow.reason === 'would-deny' || flow.reason === 'would-allow';

// An echo request and a neighbour solicitation between the same ends are two flows, as two ports would be.
const flowKey = (f: LoggedFlow): string =>
  `${f.reason}|${f.direction}|${f.src.ip}|${f.dst.ip}|${f.protocol}|${f.port ?? ''}|${f.icmp ? `${f.icmp.type}/${f.icmp.code}` : ''}`;

export const endText = (e: FlowEnd): string => (e.pod ? `${e.pod} (${e.ip})` : `${e.ip} (${e.where ?? 'unknown'})`);

export class FlowLog {
  private readonly ring: FlowRecord[] = [];
  private readonly open = new Map<string, FlowRecord>();
  private seq = 0;
  private readonly capacity: number;
  private readonly windowMs: number;

  constructor(private readonly opts: FlowLogOptions) {
    this.capacity = opts.capacity ?? DEFAULT_RING_CAPACITY;
    this.windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
  }

  add(flow: LoggedFlow): void {
    if (isAudited(flow)) this.opts.onAudited?.(flow);
    else if (flow.reason !== 'allowed') this.opts.onDenied?.(flow);
    const now = this.opts.now();
    this.closeWindows(now);
    const key = flowKey(flow);
    const open = this.open.get(key);
    if (open) {
      open.count++;
      open.lastSeen = flow.time;
      return;
    }
    const record: FlowRecord = { ...flow, seq: ++this.seq, count: 1, lastSeen: flow.time };
    this.open.set(key, record);
    this.ring.push(record);
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity);
    this.opts.logger.info(this.opts.message ?? 'denied connection', fields(record, this.opts.node, 1));
  }

  /** Ends windows older than windowMs; a flow seen more than once gets a closing line with its count. */
  closeWindows(now = this.opts.now()): void {
    for (const [key, r] of this.open) {
      if (now - r.time < this.windowMs) continue;
      this.open.delete(key);
      if (r.count > 1)
        this.opts.logger.info(`${this.opts.message ?? 'denied connection'} repeated`, {
          ...fields(r, this.opts.node, r.count - 1),
          count: r.count,
          lastSeen: new Date(r.lastSeen).toISOString(),
        });
    }
  }

  list(filter: FlowFilter = {}): FlowRecord[] {
    return this.ring.filter((r) => matches(r, filter));
  }
}

function matches(r: FlowRecord, f: FlowFilter): boolean {
  if (f.since !== undefined && r.seq <= f.since) return false;
  if (f.pod !== undefined && r.src.pod !== f.pod && r.dst.pod !== f.pod) return false;
  if (f.namespace !== undefined && ![r.src.pod, r.dst.pod].some((p) => p?.startsWith(`${f.namespace}/`))) return false;
  if (f.policy !== undefined && !r.policies.includes(f.policy)) return false;
  return true;
}

/**
 * One log line's fields: the readable `src`/`dst` and, for shipping, both ends as separate fields (`source`,
 * `destination`: address, port, namespace, pod, labels) and `packets`, the packets this line adds (1 on the
 * first line; the rest of the window on its `repeated` line, so summing `packets` over lines counts each
 * logged packet once). docs/flow-record.schema.json is the schema; docs/operations.md explains it.
 */
function fields(r: FlowRecord, node: string | undefined, packets: number): Record<string, unknown> {
  return {
    component: 'flow-log',
    ...(node !== undefined ? { node } : {}),
    time: new Date(r.time).toISOString(),
    src: endText(r.src),
    dst: endText(r.dst),
    source: endFields(r.src, r.srcPort),
    destination: endFields(r.dst, r.port),
    protocol: r.protocol,
    ...(r.port !== undefined ? { port: r.port } : {}),
    ...(r.icmp !== undefined ? { icmp: icmpFields(r.protocol, r.icmp) } : {}),
    direction: r.direction,
    reason: r.reason,
    because: r.because,
    ...(r.policies.length > 0 ? { policies: r.policies } : {}),
    ...(r.afterLookup !== undefined ? { afterLookup: r.afterLookup } : {}),
    ...(r.ruleChanged ? { ruleChanged: true } : {}),
    packets,
  };
}

function icmpFields(protocol: string, icmp: FlowIcmp): Record<string, unknown> {
  const name = icmpTypeName(protocol, icmp.type);
  return { type: icmp.type, code: icmp.code, ...(name !== undefined ? { name } : {}), ...(icmp.id !== undefined ? { id: icmp.id } : {}) };
}

function endFields(e: FlowEnd, port: number | undefined): Record<string, unknown> {
  const [namespace, pod] = e.pod?.split('/') ?? [];
  return {
    ip: e.ip,
    ...(port !== undefined ? { port } : {}),
    ...(namespace !== undefined && pod !== undefined ? { namespace, pod, labels: e.labels ?? {} } : { where: e.where ?? 'unknown' }),
  };
}
