// Explains one logged packet: which pods it was between and why netfence dropped it, from the NFLOG
// prefix (compile/flow-log.ts), the chains last programmed and the cluster as the daemon sees it.
// Pure: the daemon hands in the state, so tests can explain kernel packets against any cluster.

import { parseDropPrefix, type DropCode } from '../compile/flow-log.js';
import type { NflogPacket } from '../dataplane/nflog.js';
import { chainKindOf, readComment, type Chain, type ClusterSnapshot, type DesiredState, type Pod, type Problem } from '../model/index.js';
import type { AfterLookup } from '../trace/learned.js';
import {
  allowedByChangedRule,
  allowedReason,
  auditReason,
  clusterDenyByChangedRule,
  clusterDenyReason,
  isolatedReason,
  notLearnedReason,
  unknownPodReason,
  type PolicyDirection,
} from '../trace/reasons.js';
import { missedLookups } from './flow-lookups.js';
import type { FlowIcmp } from './icmp-names.js';
import { clusterPolicyRules, loggedRule, policyRules } from './logged-rule.js';

/** `cluster-deny`: a ClusterNetworkPolicy Deny rule (or a rule failing closed as one). */
export type DropReason = 'isolated' | 'invalid-policy' | 'unknown-pod' | 'cluster-deny';

/** One end of a flow: a pod (`ns/name`), or an address with where it lies. */
export interface FlowEnd {
  readonly ip: string;
  /** `namespace/name` when a pod owns the address. */
  readonly pod?: string;
  /** That pod's labels (the flow-log line ships them; docs/flow-record.schema.json). */
  readonly labels?: Readonly<Record<string, string>>;
  /** `outside the cluster` when no pod owns it (node addresses and the internet alike). */
  readonly where?: string;
}

export interface DeniedFlow {
  readonly time: number;
  readonly src: FlowEnd;
  readonly dst: FlowEnd;
  readonly protocol: string;
  /** Destination port for TCP/UDP/SCTP. */
  readonly port?: number;
  /** Source port for TCP/UDP/SCTP. */
  readonly srcPort?: number;
  /** ICMP and ICMPv6: the message's type and code (an echo's identifier too), when the logged copy held them. */
  readonly icmp?: FlowIcmp;
  /** Whose policy dropped it: the destination's ingress or the source's egress. */
  readonly direction: PolicyDirection;
  readonly reason: DropReason;
  /** The local pod whose rules dropped it (`ns/name`), absent for unknown addresses. */
  readonly pod?: string;
  /** The policies that select that pod in that direction. */
  readonly policies: readonly string[];
  /** The sentence `trace` would give. */
  readonly because: string;
  /**
   * An egress drop: the ClusterNetworkPolicy `domainNames` rules above the drop that would have allowed the
   * packet had the source pod's own lookup of one of their names returned its destination.
   */
  readonly afterLookup?: readonly AfterLookup[];
  /**
   * An allow or ClusterNetworkPolicy Deny logged by a rule that no rule of its policy still has the content of
   * (edited or removed since): `policies` names the policy, `because` names no rule.
   */
  readonly ruleChanged?: true;
}

/** An allowed new connection (flow log with `flowLogAllowed`): the policy rule that allowed it. */
export interface AllowedFlow extends Omit<DeniedFlow, 'reason'> {
  readonly reason: 'allowed';
}

/** A new connection the audited policies would change (docs/audit.md); `policies` are the audited ones. */
export interface AuditedFlow extends Omit<DeniedFlow, 'reason'> {
  readonly reason: 'would-deny' | 'would-allow';
}

export type LoggedFlow = DeniedFlow | AllowedFlow | AuditedFlow;

export interface FlowContext {
  readonly desired: DesiredState | undefined;
  readonly snapshot: ClusterSnapshot;
  /** Policies (`ns/name`) with error problems: they allow nothing. */
  readonly invalidPolicies: ReadonlySet<string>;
  /** The owned chain prefix (default `nf-`): the tracer that finds missed `domainNames` rules walks only owned chains. */
  readonly chainPrefix?: string;
  /** Finds the `domainNames` rules a drop missed; flow-lookups.ts's unless the caller hands in another. */
  readonly missedLookups?: LookupTracer;
  /** The lookup tracer threw for this packet: its record is written without `afterLookup`. */
  readonly onLookupError?: (error: unknown) => void;
}

/** The tracer run for an egress drop (flow-lookups.ts missedLookups). */
export type LookupTracer = typeof missedLookups;

const PROTOCOL_NAMES: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp' };

/** What a record says of the packet past its addresses: the protocol, and its ports or ICMP type and code. */
function transportOf(ip: NonNullable<NflogPacket['ip']>): Pick<DeniedFlow, 'protocol' | 'port' | 'srcPort' | 'icmp'> {
  return {
    protocol: PROTOCOL_NAMES[ip.protocol] ?? `proto-${ip.protocol}`,
    ...(ip.dstPort !== undefined ? { port: ip.dstPort } : {}),
    ...(ip.srcPort !== undefined ? { srcPort: ip.srcPort } : {}),
    ...(ip.icmp ? { icmp: { type: ip.icmp.type, code: ip.icmp.code, ...(ip.icmp.id !== undefined ? { id: ip.icmp.id } : {}) } } : {}),
  };
}

export function explainDrop(packet: NflogPacket, ctx: FlowContext, pods: PodIndex): DeniedFlow | undefined {
  const code = parseDropPrefix(packet.prefix);
  const ip = packet.ip;
  if (!code || !ip || code.kind === 'allowed' || code.kind === 'would-deny' || code.kind === 'would-allow') return undefined;
  const src = pods.end(ip.src);
  const dst = pods.end(ip.dst);
  const base = {
    time: packet.time,
    src,
    dst,
    ...transportOf(ip),
  };
  if (code.kind === 'unknown-pod') {
    const direction: PolicyDirection = code.direction === 'to' ? 'ingress' : 'egress';
    const unknown = direction === 'ingress' ? ip.dst : ip.src;
    return { ...base, direction, reason: 'unknown-pod', policies: [], because: unknownPodReason(unknown, direction) };
  }
  const chain = findChain(ctx.desired, code.chain);
  if (code.kind === 'cluster-deny' && chain?.role.kind === 'cluster-policy') {
    const { policy, direction } = chain.role;
    const pod = (direction === 'ingress' ? dst : src).pod;
    const rule = loggedRule(clusterPolicyRules(ctx.snapshot, policy, direction), code.rule, code.id);
    const flow = {
      ...base,
      direction,
      reason: 'cluster-deny' as const,
      ...(pod !== undefined ? { pod } : {}),
      policies: [policy],
      ...(rule === 'changed'
        ? { because: clusterDenyByChangedRule(policy, direction), ruleChanged: true as const }
        : { because: clusterDenyReason(policy, denyRuleText(ctx.desired, { ...code, rule: rule.index }, direction)) }),
    };
    return withLookups(flow, ctx, packet);
  }
  if (!chain || chain.role.kind !== 'workload') {
    // The chain changed since the packet was logged (a sync in between): say what we still know, the direction
    // too (its name's tag: an egress chain's drop, or one of a pod's chain to its node, is the source's egress).
    const kind = chainKindOf(code.chain, ctx.chainPrefix ?? 'nf-', []);
    return {
      ...base,
      direction: kind.endsWith('-egress') || kind === 'workload-host' ? 'egress' : 'ingress',
      reason: code.kind === 'cluster-deny' ? 'cluster-deny' : 'isolated',
      policies: [],
      because: `dropped by ${code.chain}, which is no longer programmed`,
    };
  }
  const { pod, direction } = chain.role;
  const policies = policiesOf(ctx.desired, chain);
  const invalid = policies.filter((p) => ctx.invalidPolicies.has(p));
  const flow = {
    ...base,
    direction,
    reason: invalid.length > 0 ? ('invalid-policy' as const) : ('isolated' as const),
    pod,
    policies,
    because: isolatedReason(pod, direction, policies, invalid),
  };
  return withLookups(flow, ctx, packet);
}

/**
 * An egress drop of a local pod's packet: the `domainNames` rules above the drop that its destination missed
 * for want of a lookup, named in the record and its sentence. An ingress drop is not the source pod's egress:
 * a lookup would change nothing there.
 */
function withLookups(flow: DeniedFlow, ctx: FlowContext, packet: NflogPacket): DeniedFlow {
  const ip = packet.ip;
  if (!ip || flow.direction !== 'egress' || flow.src.pod === undefined) return flow;
  let missed: AfterLookup[];
  try {
    missed = (ctx.missedLookups ?? missedLookups)(ctx.desired, ctx.chainPrefix ?? 'nf-', flow.src.pod, ip, packet.outIfindex === undefined);
  } catch (error) {
    // This runs in the NFLOG packet callback: a tracer bug must cost only this part of one record, never the
    // record itself or the daemon that enforces.
    ctx.onLookupError?.(error);
    return flow;
  }
  if (missed.length === 0) return flow;
  return { ...flow, because: `${flow.because}; ${notLearnedReason(ip.dst, missed)}`, afterLookup: missed };
}

/**
 * `egress:1 [name] Deny` of the ClusterNetworkPolicy rule whose flow-log copy carries `code`'s prefix: the comment
 * of the drop right below it, where the compiler wrote the rule's label (model/rule-comments.ts cnpRule,
 * cnpFailClosed). Either family's chain: a rule of one family's peers logs only there.
 */
function denyRuleText(
  desired: DesiredState | undefined,
  code: Extract<DropCode, { kind: 'cluster-deny' }>,
  direction: PolicyDirection,
): string {
  let comment: string | undefined;
  for (const chain of chainsNamed(desired, code.chain)) {
    const at = chain.rules.findIndex((r) => r.action.kind === 'nflog' && logsRuleAt(r.action.prefix, code));
    comment ??= at >= 0 ? chain.rules[at + 1]?.comment : undefined;
  }
  const meaning = comment !== undefined ? readComment(comment) : undefined;
  if (meaning?.kind !== 'cluster-policy-rule') return `${direction}:${code.rule} Deny`;
  return `${meaning.rule} ${meaning.action}${meaning.failsClosed ? ', which fails closed (denies all)' : ''}`;
}

/** An `nf:alw:` packet: which policy and rule allowed it (`allowed by policy prod/db rule ingress:0`). */
export function explainAllowed(
  packet: NflogPacket,
  ctx: Pick<FlowContext, 'desired' | 'snapshot'>,
  pods: PodIndex,
): AllowedFlow | undefined {
  const code = parseDropPrefix(packet.prefix);
  const ip = packet.ip;
  if (code?.kind !== 'allowed' || !ip) return undefined;
  const chain = findChain(ctx.desired, code.chain);
  if (chain?.role.kind !== 'policy') return undefined;
  const { policy, direction } = chain.role;
  const rule = loggedRule(policyRules(ctx.snapshot, policy, direction), code.rule, code.id);
  return {
    time: packet.time,
    src: pods.end(ip.src),
    dst: pods.end(ip.dst),
    ...transportOf(ip),
    direction,
    reason: 'allowed',
    policies: [policy],
    ...(rule === 'changed'
      ? { because: allowedByChangedRule(policy, direction), ruleChanged: true as const }
      : { because: allowedReason(policy, `${direction}:${rule.index}`) }),
  };
}

/** An `nf:aud:` packet: the pod and direction whose audited policies would change the connection's verdict. */
export function explainAudit(packet: NflogPacket, ctx: Pick<FlowContext, 'desired'>, pods: PodIndex): AuditedFlow | undefined {
  const code = parseDropPrefix(packet.prefix);
  const ip = packet.ip;
  if ((code?.kind !== 'would-deny' && code?.kind !== 'would-allow') || !ip) return undefined;
  const chain = findChain(ctx.desired, code.chain);
  if (chain?.role.kind !== 'workload') return undefined;
  const { pod, direction } = chain.role;
  const audited = policiesOf(ctx.desired, chain, true);
  return {
    time: packet.time,
    src: pods.end(ip.src),
    dst: pods.end(ip.dst),
    ...transportOf(ip),
    direction,
    reason: code.kind,
    pod,
    policies: audited,
    because: auditReason(code.kind === 'would-deny', pod, direction, audited),
  };
}

/**
 * Whether `desired` is the state that dropped this packet: the chain its prefix names exists there and
 * ends in a drop. The kernel enforces new rules a moment before the daemon hears the sync finished, so
 * a packet can name a chain the daemon still knows in its previous (not isolated) form; such packets
 * wait for the next sync rather than being explained wrongly.
 */
export function explainsDrop(packet: NflogPacket, desired: DesiredState | undefined): boolean {
  const code = parseDropPrefix(packet.prefix);
  // An audit packet names a pod's chain that exists before its audited policy does: wait for the chain
  // that carries this very log rule, or its audited policies would be read from the previous form.
  if (code?.kind === 'would-deny' || code?.kind === 'would-allow')
    return findChain(desired, code.chain)?.rules.some((r) => r.action.kind === 'nflog' && r.action.prefix === packet.prefix) === true;
  // A ClusterNetworkPolicy Deny: the chain that carries this very log rule (its rule label is read there), or
  // the same rule's log at another index (it moved: the same rule, whichever sync logged it).
  if (code?.kind === 'cluster-deny')
    return chainsNamed(desired, code.chain).some((c) =>
      c.rules.some((r) => r.action.kind === 'nflog' && (r.action.prefix === packet.prefix || sameRule(r.action.prefix, code))),
    );
  if (!code || code.kind !== 'isolated') return true;
  const chain = findChain(desired, code.chain);
  return chain !== undefined && chain.rules.some((r) => r.action.kind === 'drop' && r.match.length === 0);
}

/**
 * Whether a log prefix names the rule `code` names: by content, or by index for a prefix the previous version
 * wrote (its rules are replaced by the first sync, and its packets were read by index).
 */
function sameRule(prefix: string, code: Extract<DropCode, { kind: 'cluster-deny' }>): boolean {
  const other = parseDropPrefix(prefix);
  if (other?.kind !== 'cluster-deny' || other.chain !== code.chain) return false;
  return code.id === undefined ? other.rule === code.rule : other.id === code.id;
}

/** Whether a log prefix is the one of rule `code.rule` (with `code.id`'s content, unless a previous version's). */
function logsRuleAt(prefix: string, code: Extract<DropCode, { kind: 'cluster-deny' }>): boolean {
  const other = parseDropPrefix(prefix);
  return (
    other?.kind === 'cluster-deny' &&
    other.chain === code.chain &&
    other.rule === code.rule &&
    (code.id === undefined || other.id === code.id)
  );
}

/** The chains of this name in both families (policy and ClusterNetworkPolicy chains share one name). */
function chainsNamed(desired: DesiredState | undefined, name: string): Chain[] {
  if (!desired) return [];
  return [...desired.v4.chains.filter((c) => c.name === name), ...desired.v6.chains.filter((c) => c.name === name)];
}

function findChain(desired: DesiredState | undefined, name: string): Chain | undefined {
  if (!desired) return undefined;
  return desired.v4.chains.find((c) => c.name === name) ?? desired.v6.chains.find((c) => c.name === name);
}

/** The policies a workload chain jumps to, by the role of each policy chain; only the audited ones, or only the enforced. */
function policiesOf(desired: DesiredState | undefined, chain: Chain, audited = false): string[] {
  const out: string[] = [];
  for (const rule of chain.rules) {
    if (rule.action.kind !== 'jump') continue;
    const target = findChain(desired, rule.action.target);
    if (target?.role.kind === 'policy' && (target.role.audited === true) === audited && !out.includes(target.role.policy))
      out.push(target.role.policy);
    // Audited ClusterNetworkPolicies too, by name (they are cluster-scoped).
    if (audited && target?.role.kind === 'cluster-policy' && target.role.audited === true && !out.includes(target.role.policy))
      out.push(target.role.policy);
  }
  return out;
}

/** Pods by address, rebuilt only when the snapshot's pod list changes. */
export class PodIndex {
  private pods: readonly Pod[] | undefined;
  private byIp = new Map<string, Pod>();

  constructor(private readonly snapshot: () => ClusterSnapshot) {}

  end(ip: string): FlowEnd {
    const pods = this.snapshot().pods;
    if (pods !== this.pods) {
      this.pods = pods;
      this.byIp = new Map();
      // hostNetwork pods share the node's address: they are not "the pod" behind it.
      for (const p of pods)
        if (!p.hostNetwork && p.phase !== 'Succeeded' && p.phase !== 'Failed') for (const a of p.ips) this.byIp.set(a, p);
    }
    const pod = this.byIp.get(ip);
    return pod ? { ip, pod: `${pod.namespace}/${pod.name}`, labels: pod.labels } : { ip, where: 'outside the cluster' };
  }
}

export const invalidPoliciesOf = (problems: readonly Problem[]): Set<string> =>
  new Set(
    problems
      .filter((p) => p.severity === 'error' && p.object.startsWith('NetworkPolicy '))
      .map((p) => p.object.slice('NetworkPolicy '.length)),
  );
