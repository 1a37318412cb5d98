// The kernel side of the flow log: a module of its own (no imports) because the configuration's defaults
// read it, and `netfence --help` loads the configuration but nothing else of the model.

/** The kernel side of the flow log (compile/flow-log.ts). */
export interface FlowLogSettings {
  /** netlink log group (`--nflog-group`) the daemon reads. */
  readonly group: number;
  /** Log packets per second per drop rule (`-m limit`), so a flood costs a bounded number of messages. */
  readonly perSecond: number;
  readonly burst: number;
  /** Also log allowed new connections, at each policy rule that allows them (off by default: it costs a rule per allow). */
  readonly allowed?: boolean;
}

/** Group 9476, like the metrics port: easy to recognise, far from kube-router's 100 and Calico's 1/2. */
export const DEFAULT_FLOW_LOG: FlowLogSettings = { group: 9476, perSecond: 10, burst: 5 };

/**
 * NFLOG prefixes of audit mode's log rules (docs/audit.md), followed by the workload chain's name: the
 * enforced verdict allows and the audited objects would drop (`d`), or the reverse (`a`). The compiler
 * writes them; the flow log and the tracer read them.
 */
export const AUDIT_PREFIX = { wouldDeny: 'nf:aud:d:', wouldAllow: 'nf:aud:a:' } as const;
