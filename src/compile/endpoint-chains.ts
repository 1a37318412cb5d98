// Rendering one local pod (an endpoint, as Felix's RuleRenderer.WorkloadEndpointToIptablesChains does):
// from the pod's address and what resolution says selects it, its ingress and egress workload chains and,
// while ClusterNetworkPolicies exist, its chain to this node. Pure: chain names come from the policy
// objects, nothing is looked up in the cluster.

import type { Chain, ChainName, IpFamily, NodeSettings } from '../model/index.js';
import { familyBits } from '../model/address.js';
import { cnpChainName } from './cluster-policy-chains.js';
import { hostWorkloadChain } from './cluster-policy-host.js';
import { TupleMap } from './memo.js';
import type { ChainNames } from './names.js';
import type { Direction } from './policy-chains.js';
import type { ClusterPolicyRef, EndpointSelection, PolicyRef } from './resolution.js';
import { workloadChain, type CnpTierChains } from './workload-chains.js';

export interface Endpoint {
  readonly podKey: string;
  /** The pod's first address of the family. */
  readonly ip: string;
}

export interface EndpointRenderContext {
  readonly family: IpFamily;
  readonly names: ChainNames;
  readonly settings: NodeSettings;
  /** Some ClusterNetworkPolicy exists: pods' traffic to this node is judged too (INPUT). */
  readonly hostSide: boolean;
}

export interface EndpointChains {
  readonly ingress: Chain;
  readonly egress: Chain;
  /** The pod's chain to this node; absent when no ClusterNetworkPolicy tier can decide there. */
  readonly host?: Chain;
  /** CNP chains whose verdict-only copies the workload chains jump to (audit mode), in first-use order. */
  readonly verdictCopiesOf: readonly ChainName[];
}

const DIRECTIONS = ['ingress', 'egress'] as const;

export function endpointChains(endpoint: Endpoint, selection: EndpointSelection, ctx: EndpointRenderContext): EndpointChains {
  const verdictCopiesOf: ChainName[] = [];
  const [ingress, egress] = DIRECTIONS.map((direction) => workloadChainOf(endpoint, selection, direction, ctx, verdictCopiesOf));
  const host = ctx.hostSide ? toNodeChain(endpoint, selection, ctx) : undefined;
  return { ingress: ingress!, egress: egress!, ...(host ? { host } : {}), verdictCopiesOf };
}

/** `verdictCopiesOf`: where the tier chains whose verdict-only copies the chain jumps to are added. */
function workloadChainOf(
  { podKey, ip }: Endpoint,
  selection: EndpointSelection,
  direction: Direction,
  ctx: EndpointRenderContext,
  verdictCopiesOf: ChainName[],
): Chain {
  const { names, settings } = ctx;
  // Most pods no ClusterNetworkPolicy selects: no tiers to gather (three walks per direction otherwise).
  const tiered = selection.clusterPolicies.length > 0;
  const tiers = tiered ? tierChains(selection, direction, ctx, () => true) : NO_TIERS;
  const inTiers = tiered ? [...tiers.admin, ...tiers.baseline] : NO_NAMES;
  const auditedTiers = tiered ? tierChains(selection, direction, ctx, isAudited) : NO_TIERS;
  const { all: policyChains, audited: auditedPolicies } = policyChainLists(selection, direction, ctx);
  const audited = tiered ? [...auditedPolicies, ...auditedTiers.admin, ...auditedTiers.baseline] : auditedPolicies;
  // Verdict-only copies of the CNP chains, only for a pod judged twice (audit mode).
  let verdictChains: Map<ChainName, ChainName> | undefined;
  if (audited.length > 0 && inTiers.length > 0) {
    const copies = tierChains(selection, direction, { ...ctx, verdictOnly: true }, () => true);
    const copyOf = [...copies.admin, ...copies.baseline];
    verdictChains = new Map(inTiers.map((chain, i) => [chain, copyOf[i]!]));
    verdictCopiesOf.push(...inTiers);
  }
  return workloadChain(
    {
      podKey,
      ip,
      hostBits: familyBits(ctx.family),
      name: direction === 'ingress' ? names.toWorkload(podKey) : names.fromWorkload(podKey),
      direction,
      policyChains,
      tiers,
      ...(audited.length > 0 ? { audited } : {}),
      ...(verdictChains ? { verdictChains } : {}),
    },
    settings,
  );
}

const NO_NAMES: readonly ChainName[] = [];
const NO_TIERS: CnpTierChains = { admin: NO_NAMES, baseline: NO_NAMES };

/**
 * The pod's chain to this node, when some CNP egress tier can decide there: only CNP chains that can match
 * a node address (cluster-policy.ts reachesNodes); the others would return.
 */
function toNodeChain({ podKey, ip }: Endpoint, selection: EndpointSelection, ctx: EndpointRenderContext): Chain | undefined {
  const tiers = tierChains(selection, 'egress', ctx, (cnp) => !cnp.audit && cnp.reachesNodes);
  if (tiers.admin.length === 0 && tiers.baseline.length === 0) return undefined;
  const npEgress = policyChainNames(selection, 'egress', ctx, false).length > 0;
  return hostWorkloadChain({ name: ctx.names.toHost(podKey), podKey, ip, tiers, npEgress }, ctx.settings);
}

/** The pod's NetworkPolicy chains in a direction (only the audited ones, or only the others, if asked). */
function policyChainNames(selection: EndpointSelection, direction: Direction, ctx: EndpointRenderContext, audited?: boolean): ChainName[] {
  // A loop, not filter and map: asked four times per pod rendered.
  const out: ChainName[] = [];
  for (const p of selection.policies)
    if (p[direction] && (audited === undefined || p.audit === audited)) out.push(policyChainName(p, direction, ctx.names));
  return out;
}

/** The pod's NetworkPolicy chains in a direction, and the audited ones among them, in one walk. */
function policyChainLists(
  selection: EndpointSelection,
  direction: Direction,
  ctx: EndpointRenderContext,
): { readonly all: ChainName[]; readonly audited: ChainName[] } {
  const all: ChainName[] = [];
  const audited: ChainName[] = [];
  for (const p of selection.policies) {
    if (!p[direction]) continue;
    const name = policyChainName(p, direction, ctx.names);
    all.push(name);
    if (p.audit) audited.push(name);
  }
  return { all, audited };
}

/** The pod's CNP chains in a direction, per tier, in evaluation order ("CNPs with no ingress rules do not affect ingress"). */
function tierChains(
  selection: EndpointSelection,
  direction: Direction,
  ctx: EndpointRenderContext & { readonly verdictOnly?: boolean },
  keep: (cnp: ClusterPolicyRef) => boolean,
): CnpTierChains {
  const admin: ChainName[] = [];
  const baseline: ChainName[] = [];
  for (const cnp of selection.clusterPolicies) {
    if (!cnp[direction] || !keep(cnp)) continue;
    (cnp.tier === 'Admin' ? admin : baseline).push(cnpChainNameOf(cnp, ctx.settings.chainPrefix, direction, ctx.verdictOnly ?? false));
  }
  return { admin, baseline };
}

const isAudited = (cnp: ClusterPolicyRef): boolean => cnp.audit;

// Chain names are hashes: worked out once per object, not once per pod it selects (a CNP can select them all).
// A policy's names are kept for the one ChainNames (one per chain prefix) that asked last.
const policyNames = new WeakMap<PolicyRef, { readonly names: ChainNames; ingress?: ChainName; egress?: ChainName }>();
const cnpNames = new WeakMap<ClusterPolicyRef, TupleMap<readonly [string, Direction, boolean], ChainName>>();

function policyChainName(policy: PolicyRef, direction: Direction, names: ChainNames): ChainName {
  let known = policyNames.get(policy);
  if (known?.names !== names) policyNames.set(policy, (known = { names }));
  return (known[direction] ??=
    direction === 'ingress'
      ? names.policyIngress(`${policy.namespace}/${policy.name}`)
      : names.policyEgress(`${policy.namespace}/${policy.name}`));
}

function cnpChainNameOf(cnp: ClusterPolicyRef, prefix: string, direction: Direction, verdictOnly: boolean): ChainName {
  let known = cnpNames.get(cnp);
  if (!known) cnpNames.set(cnp, (known = new TupleMap()));
  let name = known.get([prefix, direction, verdictOnly]);
  if (name === undefined) known.set([prefix, direction, verdictOnly], (name = cnpChainName(prefix, cnp.name, direction, verdictOnly)));
  return name;
}
