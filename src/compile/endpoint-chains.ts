// Rendering one local pod (an endpoint, as Felix's RuleRenderer.WorkloadEndpointToIptablesChains does):
// from the pod's address and what resolution says selects it, its ingress and egress workload chains and,
// while ClusterNetworkPolicies exist, its chain to this node. Pure: chain names come from the policy
// objects, nothing is looked up in the cluster.

import type { Chain, ChainName, ClusterNetworkPolicy, IpFamily, NodeSettings } from '../model/index.js';
import { familyBits } from '../model/address.js';
import { cnpChainName } from './cluster-policy-chains.js';
import { hostWorkloadChain } from './cluster-policy-host.js';
import { reachesNodes } from './cluster-policy.js';
import type { ChainNames } from './names.js';
import { policyTypes, type Direction } from './policy-chains.js';
import type { EndpointSelection } from './resolution.js';
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
  const { names, settings } = ctx;
  const { podKey, ip } = endpoint;
  const prefix = settings.chainPrefix;
  const verdictCopiesOf: ChainName[] = [];
  const policyChainsOf = (direction: Direction, audited: boolean | undefined): ChainName[] =>
    selection.policies
      .filter((p) => policyTypes(p).includes(direction === 'ingress' ? 'Ingress' : 'Egress'))
      .filter((p) => audited === undefined || (p.audit ?? false) === audited)
      .map((p) => (direction === 'ingress' ? names.policyIngress : names.policyEgress)(`${p.namespace}/${p.name}`));
  const tierOf = (direction: Direction, keep: (cnp: ClusterNetworkPolicy) => boolean): CnpTierChains => {
    const admin: ChainName[] = [];
    const baseline: ChainName[] = [];
    for (const cnp of selection.clusterPolicies) {
      if ((direction === 'ingress' ? cnp.ingress : cnp.egress).length === 0 || !keep(cnp)) continue;
      (cnp.tier === 'Admin' ? admin : baseline).push(cnpChainName(prefix, cnp.name, direction));
    }
    return { admin, baseline };
  };
  const auditedCnpChains = (direction: Direction): ChainName[] => {
    const t = tierOf(direction, (cnp) => cnp.audit ?? false);
    return [...t.admin, ...t.baseline];
  };

  const [ingress, egress] = DIRECTIONS.map((direction): Chain => {
    const policyChains = policyChainsOf(direction, undefined);
    const tiers = tierOf(direction, () => true);
    const tierChains = [...tiers.admin, ...tiers.baseline];
    const audited = [...policyChainsOf(direction, true), ...auditedCnpChains(direction)];
    // Verdict-only copies of the CNP chains, only for a pod judged twice (audit mode).
    let verdictChains: Map<ChainName, ChainName> | undefined;
    if (audited.length > 0 && tierChains.length > 0) {
      verdictChains = new Map();
      for (const cnp of selection.clusterPolicies) {
        if ((direction === 'ingress' ? cnp.ingress : cnp.egress).length === 0) continue;
        verdictChains.set(cnpChainName(prefix, cnp.name, direction), cnpChainName(prefix, cnp.name, direction, true));
      }
      verdictCopiesOf.push(...tierChains);
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
  }) as [Chain, Chain];

  // Only the CNP chains that can match a node address (cluster-policy.ts reachesNodes); the others would return.
  const hostTiers = ctx.hostSide ? tierOf('egress', (cnp) => !(cnp.audit ?? false) && reachesNodes(cnp)) : undefined;
  const host =
    hostTiers && (hostTiers.admin.length > 0 || hostTiers.baseline.length > 0)
      ? hostWorkloadChain({ name: names.toHost(podKey), podKey, ip, tiers: hostTiers, npEgress: policyChainsOf('egress', false).length > 0 }, settings)
      : undefined;
  return { ingress, egress, ...(host ? { host } : {}), verdictCopiesOf };
}
