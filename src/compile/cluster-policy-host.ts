// A local pod's chain for traffic to this node's own addresses (nf-fh-<id>, reached from nf-INPUT
// through the host dispatch): the pod's ClusterNetworkPolicy egress tiers, and nothing of NetworkPolicy.
//
// The tiers run as in the pod's egress workload chain (the same shared nf-ce-<id> chains, so a `nodes` or
// `networks` peer matches the node's address here exactly as it matches another node's in FORWARD):
//   Admin tier: each CNP chain by (priority, name) while the pass bit is clear; Deny drops inside it,
//     Accept returns (final), Pass skips the rest of the tier.
//   NetworkPolicy tier: "v1.NetworkPolicy always makes a final decision for selected pods", and for this
//     traffic its decision is to allow: "traffic to and from the node where a Pod is running is always
//     allowed, regardless of the IP address of the Pod or the node". So a pod some NetworkPolicy selects
//     for egress returns here and never reaches the Baseline tier (as in FORWARD, where its NetworkPolicy
//     decides instead).
//   Baseline tier: otherwise, then no verdict ("all pods can communicate with each other").
// The chain never accepts: an allowed packet returns to INPUT, where the host's own rules still apply.

import type { Chain, ChainName, NodeSettings, Rule } from '../model/index.js';
import type { CnpTierChains } from './workload-chains.js';

export interface HostChainInput {
  readonly name: ChainName;
  readonly podKey: string;
  readonly ip: string;
  /** CNP egress chains selecting the pod, per tier, in evaluation order. */
  readonly tiers: CnpTierChains;
  /** Some NetworkPolicy selects the pod for egress. */
  readonly npEgress: boolean;
}

export function hostWorkloadChain(input: HostChainInput, settings: NodeSettings): Chain {
  const { accept, pass } = settings.marks;
  const passClear = { kind: 'mark', value: 0, mask: pass } as const;
  const accepted = { kind: 'mark', value: accept, mask: accept } as const;
  const rules: Rule[] = [];
  const tier = (chains: readonly ChainName[]): void => {
    for (const target of chains) {
      rules.push({ match: [passClear], action: { kind: 'jump', target } });
      rules.push({ match: [accepted], action: { kind: 'return' } });
    }
  };
  tier(input.tiers.admin);
  if (input.tiers.admin.length > 0)
    rules.push({ match: [], action: { kind: 'set-mark', value: 0, mask: pass }, comment: 'end of admin tier' });
  if (input.npEgress) {
    rules.push({ match: [], action: { kind: 'return' }, comment: `${input.podKey} to its own node: NetworkPolicy always allows` });
  } else {
    tier(input.tiers.baseline);
    rules.push({ match: [], action: { kind: 'return' }, comment: `${input.podKey} to its own node: no tier decided` });
  }
  return { name: input.name, rules, role: { kind: 'host-workload', pod: input.podKey, ip: input.ip } };
}
