// The answer for one connection: each side that judged it (node, direction, verdict, the tier, policy and
// rule that decided) in words, read from the walk's traces; an isolation drop also names the closest rule.

import { podKey, type ClusterSnapshot, type CnpTier, type Pod } from '../model/index.js';
import { afterLookupText, auditClause, type Allowance, type DecidedBy, type TraceResult } from '../trace/index.js';
import { closestRules, type ClosestRule } from './closest.js';
import { cnpTier, policyRule, ruleText, selectorText } from './describe.js';
import { podNamed, type Endpoint } from './endpoints.js';
import type { Connection, Walk } from './walk.js';

export type SideVerdict = 'allowed' | 'dropped' | 'not reached' | 'not policed';

export interface Side {
  readonly node: string;
  readonly direction: 'egress' | 'ingress';
  readonly verdict: SideVerdict;
  /** Which tier decided: a ClusterNetworkPolicy tier, NetworkPolicy, or none (not isolated, no tier decided). */
  readonly tier?: CnpTier | 'NetworkPolicy';
  readonly policy?: string;
  readonly rule?: string;
  readonly because: string;
  readonly closest?: readonly ClosestRule[];
  /** Audit mode: what the audited objects would make of this side (`would be DROPPED by … (audit)`). */
  readonly audit?: string;
  /**
   * A dropped egress that a ClusterNetworkPolicy `domainNames` rule would allow once the pod looks up one of
   * its names (`would be allowed by … after x/a looks up good.example`): what is learned lives in one node's
   * kernel, which `why` does not read (`netfence trace` on that node does).
   */
  readonly afterLookup?: string;
}

export interface Answer {
  readonly connection: Connection;
  readonly verdict: 'allowed' | 'dropped';
  readonly droppedAt?: string;
  readonly sides: readonly Side[];
  /** Each pass through a node's filter table: where the packet entered and left, and what stood. */
  readonly hops: readonly HopSummary[];
  /** The nodes whose rulesets were compiled for this answer. */
  readonly compiled: readonly string[];
}

export interface HopSummary {
  readonly node: string;
  readonly chain: 'FORWARD' | 'INPUT';
  readonly judges: readonly ('egress' | 'ingress')[];
  readonly inIface: string;
  readonly outIface: string;
  readonly verdict: 'ACCEPT' | 'DROP';
}

export function answerOf(snapshot: ClusterSnapshot, c: Connection, walk: Walk): Answer {
  const sides: Side[] = [];
  let dropped: Side | undefined;
  for (const hop of walk.hops) {
    const final = finalOf(hop.trace);
    const dropDirection = final.verdict === 'DROP' ? (final.decidedBy?.direction ?? hop.judges[hop.judges.length - 1]!) : undefined;
    for (const direction of hop.judges) {
      let side: Side;
      if (dropped) side = { node: hop.node, direction, verdict: 'not reached', because: `dropped earlier, at ${dropped.node}` };
      else if (direction === dropDirection) side = dropSide(snapshot, c, hop.node, direction, final.decidedBy);
      else side = allowSide(snapshot, hop.node, direction, hop.trace);
      const note = dropped && side.verdict === 'not reached' ? undefined : hop.trace.audit.find((a) => a.direction === direction);
      if (note) side = { ...side, audit: auditClause({ audit: [note] }).replace(/^; /, '') };
      const lookup = side.verdict === 'dropped' && direction === 'egress' ? hop.trace.afterLookup?.[0] : undefined;
      if (lookup) side = { ...side, afterLookup: `would be allowed by ${afterLookupText(lookup)}` };
      sides.push(side);
      if (side.verdict === 'dropped') dropped ??= side;
    }
  }
  for (const u of walk.unpoliced) sides.push({ node: u.node, direction: u.direction, verdict: 'not policed', because: u.why });
  sides.sort((a, b) => (a.direction === b.direction ? 0 : a.direction === 'egress' ? -1 : 1));
  return {
    connection: c,
    verdict: dropped ? 'dropped' : 'allowed',
    ...(dropped ? { droppedAt: dropped.node } : {}),
    sides,
    hops: walk.hops.map((h) => ({
      node: h.node,
      chain: h.chain,
      judges: h.judges,
      inIface: h.packet.inIface,
      outIface: h.packet.outIface,
      verdict: finalOf(h.trace).verdict,
    })),
    compiled: walk.compiled,
  };
}

/** The verdict that stands: netfence's, else (it gave none) the rest of the chain's. */
function finalOf(t: TraceResult): { verdict: 'ACCEPT' | 'DROP'; decidedBy?: DecidedBy } {
  if (t.verdict !== 'NO-VERDICT') return { verdict: t.verdict, ...(t.decidedBy ? { decidedBy: t.decidedBy } : {}) };
  return t.after ? { verdict: t.after.verdict, decidedBy: t.after.decidedBy } : { verdict: 'ACCEPT' };
}

const isCnp = (policy: string): boolean => policy.startsWith('ClusterNetworkPolicy ');

function attributed(
  snapshot: ClusterSnapshot,
  who: Pick<Allowance, 'policy' | 'rule' | 'pod' | 'direction' | 'comment'>,
): Omit<Side, 'node' | 'direction' | 'verdict'> {
  if (who.policy !== undefined && who.rule !== undefined) {
    if (isCnp(who.policy)) {
      const tier = cnpTier(snapshot.clusterPolicies, who.policy);
      return {
        ...(tier ? { tier } : {}),
        policy: who.policy,
        rule: who.rule,
        because: `${who.policy}${tier ? ` (${tier} tier)` : ''} rule ${who.rule}`,
      };
    }
    const rule = policyRule(snapshot.policies, who.policy, who.rule);
    const what = rule ? ` (${who.direction === 'egress' ? 'to' : 'from'} ${ruleText(rule)})` : '';
    return { tier: 'NetworkPolicy', policy: who.policy, rule: who.rule, because: `NetworkPolicy ${who.policy} rule ${who.rule}${what}` };
  }
  if (who.pod !== undefined && who.direction !== undefined) {
    const tiers = who.comment?.includes('no tier decided') === true;
    return { because: `${who.pod} is not isolated for ${who.direction} (${tiers ? 'no tier decided' : 'no NetworkPolicy selects it'})` };
  }
  return { because: who.comment ?? 'no netfence rule decided' };
}

function allowSide(snapshot: ClusterSnapshot, node: string, direction: 'egress' | 'ingress', t: TraceResult): Side {
  // The last allowance of this direction that was not a Pass (a Pass only hands the packet to the next tier).
  const mine = t.allowedBy.filter((a) => a.direction === direction && !(a.rule?.endsWith(' Pass') ?? false));
  const who = mine[mine.length - 1] ?? (t.decidedBy?.direction === direction ? t.decidedBy : undefined);
  return {
    node,
    direction,
    verdict: 'allowed',
    ...(who ? attributed(snapshot, who) : { because: 'no netfence rule for this direction here' }),
  };
}

function dropSide(snapshot: ClusterSnapshot, c: Connection, node: string, direction: 'egress' | 'ingress', d: DecidedBy | undefined): Side {
  const base = { node, direction, verdict: 'dropped' as const };
  if (!d) return { ...base, because: 'dropped' };
  if (d.policy !== undefined && d.rule !== undefined) return { ...base, ...attributed(snapshot, d) };
  if (d.pod !== undefined && d.direction !== undefined) {
    const policies = (d.policies ?? []).filter((p) => !isCnp(p));
    const invalid = d.invalidPolicies ?? [];
    const peer = direction === 'ingress' ? c.src : c.dst;
    const peerPod = podOf(snapshot, peer);
    const dstPod = podOf(snapshot, c.dst);
    const by = policies.length > 0 ? ` by ${policies.join(', ')}` : '';
    const broken = invalid.length > 0 ? `; ${invalid.join(', ')} ${invalid.length === 1 ? 'is' : 'are'} invalid and allow nothing` : '';
    const closest = closestRules(snapshot, {
      direction,
      policies,
      peerIp: peer.ip,
      ...(peerPod ? { peerPod } : {}),
      ...(dstPod ? { dstPod } : {}),
      proto: c.proto,
      port: c.port,
    });
    return {
      ...base,
      tier: 'NetworkPolicy',
      ...(policies.length === 1 ? { policy: policies[0]! } : {}),
      because: `${d.pod} is isolated for ${direction}${by}; no rule admits ${peerWords(peer, peerPod)} on ${c.proto}/${c.port}${broken}`,
      ...(closest.length > 0 ? { closest } : {}),
    };
  }
  return { ...base, because: d.comment ?? d.text };
}

function podOf(snapshot: ClusterSnapshot, e: Endpoint): Pod | undefined {
  return e.kind === 'pod' ? podNamed(snapshot, e.pod) : undefined;
}

/** `shop/web (app=web)`, or the bare address of a non-pod end. */
function peerWords(e: Endpoint, pod: Pod | undefined): string {
  if (!pod) return e.ip;
  const labels = selectorText({ matchLabels: pod.labels, matchExpressions: [] }, 'no labels');
  return `${podKey(pod)} (${labels})`;
}
