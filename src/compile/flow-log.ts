// Flow-log rules: every DROP verdict netfence makes for a new connection is preceded by a rate-limited
// NFLOG rule whose prefix names the drop, so the daemon's netlink reader can explain the packet it
// receives ("x/db is isolated for ingress; …"). They sit only on drop paths: allowed traffic never
// reaches them, and established flows are accepted long before.

import { AUDIT_PREFIX, type ChainName, type CnpRule, type FlowLogSettings, type PolicyRule, type Rule } from '../model/index.js';
import { hash32 } from './names.js';

/**
 * Why a drop happened, as carried in the NFLOG prefix (≤ 63 bytes, the kernel's NFLOG prefix limit):
 * `nf:iso:<workload chain>` a pod isolated in that chain's direction with no policy allowing the packet;
 * `nf:unk:from` / `nf:unk:to` an address of this node's pod CIDR that no known pod owns (fail-closed);
 * `nf:cnp:<ClusterNetworkPolicy chain>:<rule>:<id>` a ClusterNetworkPolicy Deny rule (or a rule failing closed as one).
 * `<id>` (ruleId) is the rule's content: chains are named by the object, not its content, so after an edit
 * the same index may hold another rule, and a packet logged just before must not be explained with it.
 * Without `<id>`: a prefix the previous version wrote, read by index as it was then.
 */
export type DropCode =
  | { readonly kind: 'isolated'; readonly chain: ChainName }
  | { readonly kind: 'unknown-pod'; readonly direction: 'from' | 'to' }
  /** `nf:cnp:<ClusterNetworkPolicy chain>:<rule>:<id>`, the Deny rule `i` of that chain's direction (ingress or egress list). */
  | { readonly kind: 'cluster-deny'; readonly chain: ChainName; readonly rule: number; readonly id?: string }
  /** Not a drop: `nf:alw:<policy chain>:<rule>:<id>`, rule `i` of the policy's ingress/egress list allowed it (opt-in). */
  | { readonly kind: 'allowed'; readonly chain: ChainName; readonly rule: number; readonly id?: string }
  /** Not a drop: `nf:aud:d:<workload chain>`, allowed now, dropped if the audited policies were enforced. */
  | { readonly kind: 'would-deny'; readonly chain: ChainName }
  /** Not a drop's log: `nf:aud:a:<workload chain>`, dropped now, allowed if the audited policies were enforced. */
  | { readonly kind: 'would-allow'; readonly chain: ChainName };

const PREFIX_HEAD = 'nf:';

/** Base32 characters of a rule's identity: one chain's rules meet a collision once in 2^30. */
const RULE_ID_LENGTH = 6;

/** JSON with each object's keys sorted: the same rule reads the same whatever built the object. */
const sortedKeys = (_key: string, value: unknown): unknown =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : value;

/** Each rule object's identity, once: both families' chains and every logged packet explained ask again. */
const ruleIds = new WeakMap<PolicyRule | CnpRule, string>();

/** The identity of a spec rule as the compiler read it (the `<id>` of `nf:alw:` and `nf:cnp:` prefixes). */
export function ruleId(rule: PolicyRule | CnpRule): string {
  let id = ruleIds.get(rule);
  if (id === undefined) ruleIds.set(rule, (id = hash32(JSON.stringify(rule, sortedKeys), RULE_ID_LENGTH)));
  return id;
}

const ruleTail = (rule: number, id: string | undefined): string => (id === undefined ? `${rule}` : `${rule}:${id}`);

export function dropPrefix(code: DropCode): string {
  switch (code.kind) {
    case 'isolated':
      return `${PREFIX_HEAD}iso:${code.chain}`;
    case 'unknown-pod':
      return `${PREFIX_HEAD}unk:${code.direction}`;
    case 'cluster-deny':
      return `${PREFIX_HEAD}cnp:${code.chain}:${ruleTail(code.rule, code.id)}`;
    case 'allowed':
      return `${PREFIX_HEAD}alw:${code.chain}:${ruleTail(code.rule, code.id)}`;
    case 'would-deny':
      return `${AUDIT_PREFIX.wouldDeny}${code.chain}`;
    case 'would-allow':
      return `${AUDIT_PREFIX.wouldAllow}${code.chain}`;
  }
}

const RULED_WITH_ID = new RegExp(`^nf:(alw|cnp):(.+):(\\d+):([a-z2-7]{${RULE_ID_LENGTH}})$`);
/** The previous version's form, without the identity. */
const RULED_BY_INDEX = /^nf:(alw|cnp):(.+):(\d+)$/;

/** Inverse of dropPrefix; undefined for a prefix netfence did not write. */
export function parseDropPrefix(prefix: string): DropCode | undefined {
  if (prefix.startsWith(`${PREFIX_HEAD}iso:`)) {
    const chain = prefix.slice(`${PREFIX_HEAD}iso:`.length);
    return chain.length > 0 ? { kind: 'isolated', chain: chain as ChainName } : undefined;
  }
  // The form with the rule's identity first: an identity of digits alone must not read as an old form's index.
  const ruled = RULED_WITH_ID.exec(prefix) ?? RULED_BY_INDEX.exec(prefix);
  if (ruled)
    return {
      kind: ruled[1] === 'alw' ? 'allowed' : 'cluster-deny',
      chain: ruled[2]! as ChainName,
      rule: Number(ruled[3]),
      ...(ruled[4] !== undefined ? { id: ruled[4] } : {}),
    };
  for (const kind of ['would-deny', 'would-allow'] as const) {
    const head = kind === 'would-deny' ? AUDIT_PREFIX.wouldDeny : AUDIT_PREFIX.wouldAllow;
    if (prefix.startsWith(head) && prefix.length > head.length) return { kind, chain: prefix.slice(head.length) as ChainName };
  }
  if (prefix === `${PREFIX_HEAD}unk:from`) return { kind: 'unknown-pod', direction: 'from' };
  if (prefix === `${PREFIX_HEAD}unk:to`) return { kind: 'unknown-pod', direction: 'to' };
  return undefined;
}

/** The rule to put right before a DROP: none when flow logs are off. */
export function flowLogRules(settings: FlowLogSettings | undefined, code: DropCode, match: Rule['match'] = []): Rule[] {
  if (!settings) return [];
  return [
    {
      match: [...match, { kind: 'limit', perSecond: settings.perSecond, burst: settings.burst }],
      action: { kind: 'nflog', group: settings.group, prefix: dropPrefix(code) },
      comment: LOG_COMMENT[code.kind],
    },
  ];
}

const LOG_COMMENT: Readonly<Record<DropCode['kind'], string>> = {
  isolated: 'flow log of the drop below',
  'unknown-pod': 'flow log of the drop below',
  'cluster-deny': 'flow log of the drop below',
  allowed: 'flow log of the allow below',
  'would-deny': 'audit: enforced allows, audited would drop',
  'would-allow': 'audit: enforced drops, audited would allow',
};
