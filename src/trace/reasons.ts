// Why a new connection was dropped, in one sentence: the words `trace` prints for its verdict and the
// flow log writes for each denied connection, so an operator reads the same explanation in both.

import { lookupNamesText, type AfterLookup } from './learned.js';

export type PolicyDirection = 'ingress' | 'egress';

/**
 * "A pod is isolated for ingress if there is any NetworkPolicy that both selects the pod and has
 * "Ingress" in its policyTypes" (likewise egress); then only what one of them allows gets through.
 */
export function isolatedReason(
  pod: string,
  direction: PolicyDirection,
  policies: readonly string[],
  invalid: readonly string[] = [],
): string {
  const selecting =
    policies.length === 0
      ? 'no policy allows anything'
      : `${policies.length === 1 ? 'policy' : 'policies'} ${policies.join(', ')} ${policies.length === 1 ? 'selects' : 'select'} it`;
  const broken =
    invalid.length === 0
      ? ''
      : `; ${invalid.join(', ')} ${invalid.length === 1 ? 'is' : 'are'} invalid and allow${invalid.length === 1 ? 's' : ''} nothing`;
  return `${pod} is isolated for ${direction}; ${selecting}; none allowed this peer${broken}`;
}

/** An allowed new connection (opt-in flow log), as trace words its ACCEPT verdict. */
export function allowedReason(policy: string, rule: string): string {
  return `allowed by policy ${policy} rule ${rule}`;
}

/**
 * A logged allow or ClusterNetworkPolicy Deny whose rule no longer exists with the content it had when the packet
 * was logged (edited or removed since): the policy is known, its rule is not named, lest it name another.
 */
export const changedRuleWords = (direction: PolicyDirection): string => `an ${direction} rule changed since the packet was logged`;

export const allowedByChangedRule = (policy: string, direction: PolicyDirection): string =>
  `allowed by policy ${policy}, by ${changedRuleWords(direction)}`;

/** Audit mode: what the audited policies would change about a connection, beside what happens now. */
export function auditReason(wouldDeny: boolean, pod: string, direction: PolicyDirection, audited: readonly string[]): string {
  const who = audited.map((p) => `${p} (audit)`).join(', ');
  return wouldDeny
    ? `allowed now; would be DROPPED by ${who}: ${pod} would be isolated for ${direction} with no rule allowing this`
    : `dropped now; would be ALLOWED by ${who} (${pod}, ${direction})`;
}

/** fail-closed: an address of this node's pod CIDR that no known pod owns. */
export function unknownPodReason(ip: string, direction: PolicyDirection): string {
  return `${ip} is in this node's pod CIDR but is no known pod (unknown local pods fail closed, ${direction})`;
}

/** A ClusterNetworkPolicy Deny (or a rule failing closed as one): `rule` is its comment's `egress:1 [name] Deny`. */
export function clusterDenyReason(policy: string, rule: string): string {
  return `dropped by ClusterNetworkPolicy ${policy} rule ${rule}`;
}

export const clusterDenyByChangedRule = (policy: string, direction: PolicyDirection): string =>
  `dropped by ClusterNetworkPolicy ${policy}, by ${changedRuleWords(direction)}`;

/**
 * A drop that `domainNames` rules above it would not have made after a lookup: `no lookup by x/a of
 * good.example or *.cdn.example had learned 198.51.100.10 (ClusterNetworkPolicy p rule egress:0 api Accept)`.
 */
export function notLearnedReason(address: string, missed: readonly AfterLookup[]): string {
  return missed
    .map((a) => `no lookup by ${a.pod} of ${lookupNamesText(a.names)} had learned ${address} (${a.policy} rule ${a.rule})`)
    .join('; ');
}
