// Per-workload chains: nf-tw-<id> (ingress to a local pod) and nf-fw-<id> (egress from it).

import { ruleComment, type Chain, type ChainName, type Match, type NodeSettings, type Rule } from '../model/index.js';
import { denyBit } from './cluster-policy-chains.js';
import { flowLogRules } from './flow-log.js';
import type { Direction } from './policy-chains.js';

export interface WorkloadChainInput {
  readonly name: ChainName;
  readonly podKey: string;
  readonly ip: string;
  readonly hostBits: number;
  readonly direction: Direction;
  /** Policy chains that select the pod in this direction, in a stable order. Empty: not isolated. */
  readonly policyChains: readonly ChainName[];
  /**
   * Chains of audited objects (docs/audit.md) among `policyChains` and `tiers`: judged and logged, never
   * enforced. Empty or absent: today's layout.
   */
  readonly audited?: readonly ChainName[];
  /** With tiers and audited chains: each tier chain's verdict-only copy (its Deny sets the deny bit). */
  readonly verdictChains?: ReadonlyMap<ChainName, ChainName>;
  /** ClusterNetworkPolicy chains selecting the pod in this direction, per tier, in evaluation order. */
  readonly tiers?: CnpTierChains;
}

export interface CnpTierChains {
  readonly admin: readonly ChainName[];
  readonly baseline: readonly ChainName[];
}

export function workloadChain(input: WorkloadChainInput, settings: NodeSettings): Chain {
  // --- ClusterNetworkPolicy tiers: a different layout only for pods a CNP selects. ---
  if (input.tiers && (input.tiers.admin.length > 0 || input.tiers.baseline.length > 0)) {
    if (input.audited && input.audited.length > 0 && input.verdictChains)
      return auditedTieredWorkloadChain(input, input.tiers, input.audited, input.verdictChains, settings);
    return tieredWorkloadChain(input, input.tiers, settings);
  }
  // --- Audit: a different layout only for pods an audited policy selects in this direction. ---
  if (input.audited && input.audited.length > 0) return auditedWorkloadChain(input, input.audited, settings);
  const { accept, all } = settings.marks;
  const self = `${input.ip}/${input.hostBits}`;
  const fixed = fixedRules(accept, all);
  const rules: Rule[] = [
    ...fixed.head,
    // A pod reaching itself (also through a Service that DNATs back to it: hairpin) is always allowed.
    {
      match: [input.direction === 'ingress' ? { kind: 'src-net', cidr: self } : { kind: 'dst-net', cidr: self }],
      action: { kind: 'accept' },
      comment: 'pod to itself',
    },
  ];
  if (input.policyChains.length === 0) {
    // "a pod is not isolated for <direction>" when no policy selects it with that policy type.
    rules.push({
      match: [],
      action: { kind: 'set-mark', value: accept, mask: accept },
      comment: ruleComment.workloadOpen(input.podKey, input.direction),
    });
  } else {
    for (const target of input.policyChains) {
      rules.push(jumpTo(target));
      rules.push(fixed.returnIfAccepted);
    }
    rules.push(...flowLogRules(settings.flowLog, { kind: 'isolated', chain: input.name }));
    rules.push({ match: [], action: { kind: 'drop' }, comment: ruleComment.workloadIsolated(input.podKey, input.direction) });
  }
  const role = { kind: 'workload', direction: input.direction, pod: input.podKey, ip: input.ip } as const;
  return { name: input.name, rules, role };
}

const NO_MATCH: readonly Match[] = [];

// A jump to a policy chain, one per chain name: every pod a policy selects jumps to it alike. Bounded as the
// chain-name memos are (names.ts).
const jumps = new Map<ChainName, Rule>();
function jumpTo(target: ChainName): Rule {
  let rule = jumps.get(target);
  if (!rule) {
    if (jumps.size >= 200_000) jumps.clear();
    jumps.set(target, (rule = { match: NO_MATCH, action: { kind: 'jump', target } }));
  }
  return rule;
}

/** The rules every plain workload chain holds alike. */
interface FixedRules {
  /** Established flows accepted, invalid ones dropped, the marks cleared. */
  readonly head: readonly Rule[];
  /** Back to the caller once a policy chain set the accept bit. */
  readonly returnIfAccepted: Rule;
}

// Shared by every pod's chains (rules are read-only values): a map renders some 20,000 workload chains, each
// of which otherwise allocates these again. Keyed by the marks, which come from the configuration.
const fixedByMarks = new Map<number, Map<number, FixedRules>>();
function fixedRules(accept: number, all: number): FixedRules {
  let byAll = fixedByMarks.get(accept);
  if (!byAll) fixedByMarks.set(accept, (byAll = new Map<number, FixedRules>()));
  let fixed = byAll.get(all);
  if (!fixed)
    byAll.set(
      all,
      (fixed = {
        head: [
          // "Connections are judged on their first packet": replies and later packets of an allowed flow pass.
          { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
          { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
          { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
        ],
        returnIfAccepted: { match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } },
      }),
    );
  return fixed;
}

/**
 * A pod some ClusterNetworkPolicy selects: "Policy tiers are evaluated in this order: Admin,
 * NetworkPolicy, Baseline", and "if a given connection wasn't allowed or denied by any of the tiers …
 * all pods can communicate with each other".
 *   Admin tier: each CNP chain by (priority, name) while the pass bit is clear; Accept returns (final),
 *     Deny drops inside the chain, Pass sets the pass bit: the rest of the tier is skipped.
 *   NetworkPolicy tier: "v1.NetworkPolicy always makes a final decision for selected pods" — the usual
 *     jumps and the isolating DROP (after its flow-log copy, as in workloadChain). Only then is a pod
 *     reaching itself (a Service hairpin) accepted: "A Pod connecting to a Service IP that the service
 *     proxy load-balances back to the same Pod is subject to ClusterNetworkPolicy", and NetworkPolicy
 *     keeps netfence's allow-itself rule.
 *   Baseline tier: only for pods no NetworkPolicy selects in this direction, then default allow.
 * Each direction is its own chain, so an egress Accept leaves the destination's ingress chain in force.
 */
function tieredWorkloadChain(input: WorkloadChainInput, tiers: CnpTierChains, settings: NodeSettings): Chain {
  const { accept, pass, all } = settings.marks;
  const self = `${input.ip}/${input.hostBits}`;
  const passClear = { kind: 'mark', value: 0, mask: pass } as const;
  const accepted = { kind: 'mark', value: accept, mask: accept } as const;
  const rules: Rule[] = [
    { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
    { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
    { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
  ];
  const tier = (chains: readonly ChainName[]): void => {
    for (const target of chains) {
      rules.push({ match: [passClear], action: { kind: 'jump', target } });
      rules.push({ match: [accepted], action: { kind: 'return' } });
    }
  };
  tier(tiers.admin);
  if (tiers.admin.length > 0) rules.push({ match: [], action: { kind: 'set-mark', value: 0, mask: pass }, comment: 'end of admin tier' });
  if (input.policyChains.length > 0) {
    rules.push({
      match: [input.direction === 'ingress' ? { kind: 'src-net', cidr: self } : { kind: 'dst-net', cidr: self }],
      action: { kind: 'accept' },
      comment: 'pod to itself',
    });
    for (const target of input.policyChains) {
      rules.push({ match: [], action: { kind: 'jump', target } });
      rules.push({ match: [accepted], action: { kind: 'return' } });
    }
    rules.push(...flowLogRules(settings.flowLog, { kind: 'isolated', chain: input.name }));
    rules.push({ match: [], action: { kind: 'drop' }, comment: ruleComment.workloadIsolated(input.podKey, input.direction) });
  } else {
    tier(tiers.baseline);
    rules.push({
      match: [],
      action: { kind: 'set-mark', value: accept, mask: accept },
      comment: ruleComment.workloadOpen(input.podKey, input.direction, true),
    });
  }
  const role = { kind: 'workload', direction: input.direction, pod: input.podKey, ip: input.ip } as const;
  return { name: input.name, rules, role };
}

/**
 * A pod an audited policy selects in this direction. The verdict is computed twice on the first packet,
 * with the same policy chains (they only set the accept bit and return):
 *   1. without the audited policies, exactly as enforced ("a pod is not isolated" by a policy that is
 *      only audited), into the accept bit, then copied to the scratch bit;
 *   2. with them, into the accept bit;
 * where the two differ a rate-limited NFLOG says so (`nf:aud:d:` would deny, `nf:aud:a:` would allow),
 * then the real verdict is restored and acted on. Policy chains are only jumped to while the accept bit
 * is clear, so no early RETURN skips the second pass.
 */
function auditedWorkloadChain(input: WorkloadChainInput, audited: readonly ChainName[], settings: NodeSettings): Chain {
  const { accept, scratch0: real, all } = settings.marks;
  const self = `${input.ip}/${input.hostBits}`;
  const acceptClear = { kind: 'mark', value: 0, mask: accept } as const;
  const enforced = input.policyChains.filter((c) => !audited.includes(c));
  const judge = (chains: readonly ChainName[]): Rule[] =>
    chains.map((target): Rule => ({ match: [acceptClear], action: { kind: 'jump', target } }));
  const rules: Rule[] = [
    { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
    { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
    { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
    {
      match: [input.direction === 'ingress' ? { kind: 'src-net', cidr: self } : { kind: 'dst-net', cidr: self }],
      action: { kind: 'accept' },
      comment: 'pod to itself',
    },
  ];
  // 1. The enforced verdict, saved in the scratch bit.
  if (enforced.length === 0)
    rules.push({ match: [], action: { kind: 'set-mark', value: real, mask: real }, comment: 'not isolated when enforced' });
  else {
    rules.push(...judge(enforced));
    rules.push({
      match: [{ kind: 'mark', value: accept, mask: accept }],
      action: { kind: 'set-mark', value: real, mask: real | accept },
      comment: 'enforced verdict',
    });
  }
  // 2. The verdict with the audited policies; the differences logged.
  rules.push(...judge(input.policyChains));
  const both = real | accept;
  rules.push(...flowLogRules(settings.flowLog, { kind: 'would-deny', chain: input.name }, [{ kind: 'mark', value: real, mask: both }]));
  rules.push(...flowLogRules(settings.flowLog, { kind: 'would-allow', chain: input.name }, [{ kind: 'mark', value: accept, mask: both }]));
  // 3. The enforced verdict acted on.
  if (enforced.length === 0) {
    rules.push({
      match: [],
      action: { kind: 'set-mark', value: accept, mask: all },
      comment: ruleComment.workloadOpen(input.podKey, input.direction),
    });
  } else {
    rules.push({
      match: [{ kind: 'mark', value: accept, mask: both }],
      action: { kind: 'set-mark', value: 0, mask: accept },
      comment: 'audited allow not enforced',
    });
    rules.push({ match: [{ kind: 'mark', value: real, mask: real }], action: { kind: 'set-mark', value: accept, mask: all } });
    rules.push({ match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } });
    rules.push(...flowLogRules(settings.flowLog, { kind: 'isolated', chain: input.name }));
    rules.push({ match: [], action: { kind: 'drop' }, comment: ruleComment.workloadIsolated(input.podKey, input.direction) });
  }
  const role = { kind: 'workload', direction: input.direction, pod: input.podKey, ip: input.ip } as const;
  return { name: input.name, rules, role };
}

/**
 * A pod some ClusterNetworkPolicy selects, with an audited object (CNP or NetworkPolicy) in this
 * direction: the tiers of tieredWorkloadChain judged twice, without and with the audited objects, into
 * bits (accept, or deny), through verdict-only copies of the CNP chains so that neither pass drops; the
 * differences logged as in auditedWorkloadChain, then the enforced verdict acted on, a drop flow-logged as
 * tieredWorkloadChain logs it (enforcedDropLog).
 */
function auditedTieredWorkloadChain(
  input: WorkloadChainInput,
  tiers: CnpTierChains,
  audited: readonly ChainName[],
  verdictChains: ReadonlyMap<ChainName, ChainName>,
  settings: NodeSettings,
): Chain {
  const { accept, pass, scratch0: real, all } = settings.marks;
  const deny = denyBit(settings.marks);
  const self = `${input.ip}/${input.hostBits}`;
  const undecided = { kind: 'mark', value: 0, mask: accept | deny } as const;
  const inTier = { kind: 'mark', value: 0, mask: accept | pass | deny } as const;
  const selfMatch = input.direction === 'ingress' ? ({ kind: 'src-net', cidr: self } as const) : ({ kind: 'dst-net', cidr: self } as const);
  const verdict = (admin: readonly ChainName[], policies: readonly ChainName[], baseline: readonly ChainName[]): Rule[] => {
    const out: Rule[] = admin.map((c): Rule => ({ match: [inTier], action: { kind: 'jump', target: verdictChains.get(c) ?? c } }));
    if (admin.length > 0) out.push({ match: [], action: { kind: 'set-mark', value: 0, mask: pass }, comment: 'end of admin tier' });
    if (policies.length > 0) {
      out.push({ match: [undecided, selfMatch], action: { kind: 'set-mark', value: accept, mask: accept }, comment: 'pod to itself' });
      out.push(...policies.map((target): Rule => ({ match: [undecided], action: { kind: 'jump', target } })));
      out.push({ match: [undecided], action: { kind: 'set-mark', value: deny, mask: deny }, comment: 'isolated' });
    } else {
      out.push(...baseline.map((c): Rule => ({ match: [inTier], action: { kind: 'jump', target: verdictChains.get(c) ?? c } })));
      out.push({
        match: [undecided],
        action: { kind: 'set-mark', value: accept, mask: accept },
        comment: ruleComment.workloadOpen(input.podKey, input.direction, true),
      });
    }
    return out;
  };
  const enforced = (chains: readonly ChainName[]): ChainName[] => chains.filter((c) => !audited.includes(c));
  const both = real | accept;
  const rules: Rule[] = [
    { match: [{ kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] }], action: { kind: 'accept' } },
    { match: [{ kind: 'ctstate', states: ['INVALID'] }], action: { kind: 'drop' } },
    { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
    // 1. The enforced verdict, saved in the scratch bit.
    ...verdict(enforced(tiers.admin), enforced(input.policyChains), enforced(tiers.baseline)),
    {
      match: [{ kind: 'mark', value: accept, mask: accept }],
      action: { kind: 'set-mark', value: real, mask: all },
      comment: 'enforced verdict',
    },
    { match: [], action: { kind: 'set-mark', value: 0, mask: accept | pass | deny } },
    // 2. The verdict with the audited objects; the differences logged.
    ...verdict(tiers.admin, input.policyChains, tiers.baseline),
    ...flowLogRules(settings.flowLog, { kind: 'would-deny', chain: input.name }, [{ kind: 'mark', value: real, mask: both }]),
    ...flowLogRules(settings.flowLog, { kind: 'would-allow', chain: input.name }, [{ kind: 'mark', value: accept, mask: both }]),
    // 3. The enforced verdict acted on.
    {
      match: [{ kind: 'mark', value: accept, mask: both }],
      action: { kind: 'set-mark', value: 0, mask: accept },
      comment: 'audited allow not enforced',
    },
    { match: [{ kind: 'mark', value: real, mask: real }], action: { kind: 'set-mark', value: accept, mask: all } },
    { match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } },
    // 4. Only a packet the enforced verdict drops gets here: its flow log (none when flow logs are off).
    ...enforcedDropLog(input, enforced(tiers.admin), enforced(input.policyChains).length > 0, enforced(tiers.baseline), settings),
    { match: [], action: { kind: 'drop' }, comment: ruleComment.workloadIsolated(input.podKey, input.direction) },
  ];
  const role = { kind: 'workload', direction: input.direction, pod: input.podKey, ip: input.ip } as const;
  return { name: input.name, rules, role };
}

/**
 * The flow log of an audited tiered pod's enforced drop, exactly as tieredWorkloadChain writes it: the verdict-only
 * copies cannot say which rule denied, so the enforced tiers are judged once more through the CNP chains themselves,
 * whose Deny logs `nf:cnp:<chain>:<rule>` and drops, and a packet no Deny took is the NetworkPolicy isolation
 * (`nf:iso:`). Reached only by packets the enforced verdict drops, and it ends in the DROP below whatever its
 * chains do (they drop, set a bit or return, never accept), so it logs no drop that does not happen.
 */
function enforcedDropLog(
  input: WorkloadChainInput,
  admin: readonly ChainName[],
  isolating: boolean,
  baseline: readonly ChainName[],
  settings: NodeSettings,
): Rule[] {
  if (!settings.flowLog) return [];
  const { accept, pass } = settings.marks;
  const inTier = { kind: 'mark', value: 0, mask: accept | pass } as const;
  const tier = (chains: readonly ChainName[]): Rule[] =>
    chains.map((target): Rule => ({ match: [inTier], action: { kind: 'jump', target } }));
  const out: Rule[] = [];
  // The second pass may have left its pass bit set (the accept bit is clear here).
  if (admin.length > 0 || (!isolating && baseline.length > 0))
    out.push({ match: [], action: { kind: 'set-mark', value: 0, mask: accept | pass }, comment: 'which enforced rule drops' });
  out.push(...tier(admin));
  if (admin.length > 0) out.push({ match: [], action: { kind: 'set-mark', value: 0, mask: pass }, comment: 'end of admin tier' });
  // "v1.NetworkPolicy always makes a final decision for selected pods": past the Admin tier, the isolation
  // (only while no CNP chain set the accept bit: the enforced pass said drop, so that takes a set changing in between).
  if (isolating)
    out.push(...flowLogRules(settings.flowLog, { kind: 'isolated', chain: input.name }, [{ kind: 'mark', value: 0, mask: accept }]));
  else out.push(...tier(baseline));
  return out;
}
