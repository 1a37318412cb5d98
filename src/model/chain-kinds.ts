// Our chain names, by kind: `<prefix><kind>-<hash>` for per-object chains, fixed names for the entry and the
// dispatch roots. compile/names.ts and compile/cluster-policy-chains.ts build names from these; `chainKind`
// (trace, inspect) reads them back. Writer and reader share this one table.

/** The two-letter kind of each hashed chain. */
export const CHAIN_KIND_TAG = {
  fromDispatchChild: 'fd',
  toDispatchChild: 'td',
  fromWorkload: 'fw',
  toWorkload: 'tw',
  policyIngress: 'pi',
  policyEgress: 'po',
  cnpIngress: 'ci',
  cnpEgress: 'ce',
  /** A ClusterNetworkPolicy's chain whose Deny sets a bit instead of dropping: audit mode's second verdict. */
  cnpIngressVerdict: 'vi',
  cnpEgressVerdict: 've',
  hostDispatchChild: 'hd',
  toHost: 'fh',
} as const;

/** The chains with fixed names (after the prefix). */
export const FIXED_CHAIN = {
  forward: 'FORWARD',
  fromDispatch: 'from-wl-dispatch',
  toDispatch: 'to-wl-dispatch',
  input: 'INPUT',
  /** DNS answers a node-local resolver sends to pods with `domainNames` egress (held for the DNS agent). */
  output: 'OUTPUT',
  hostDispatch: 'to-host-dispatch',
  hostPass: 'to-host-pass',
} as const;

export type ChainTag = (typeof CHAIN_KIND_TAG)[keyof typeof CHAIN_KIND_TAG];

/** `<prefix><tag>-<hash>`. */
export const taggedChainName = (prefix: string, tag: ChainTag, hash: string): string => `${prefix}${tag}-${hash}`;

export type ChainKind =
  | 'builtin'
  | 'foreign'
  | 'forward'
  | 'input'
  | 'dispatch-host'
  | 'workload-host'
  | 'dispatch-from'
  | 'dispatch-to'
  | 'workload-egress'
  | 'workload-ingress'
  | 'policy-ingress'
  | 'policy-egress'
  | 'cluster-policy-ingress'
  | 'cluster-policy-egress'
  | 'owned-other';

const KIND_OF_TAG: { readonly [T in ChainTag]: ChainKind } = {
  fd: 'dispatch-from',
  td: 'dispatch-to',
  fw: 'workload-egress',
  tw: 'workload-ingress',
  pi: 'policy-ingress',
  po: 'policy-egress',
  ci: 'cluster-policy-ingress',
  ce: 'cluster-policy-egress',
  vi: 'cluster-policy-ingress',
  ve: 'cluster-policy-egress',
  hd: 'dispatch-host',
  fh: 'workload-host',
};

const KIND_OF_FIXED: { readonly [N in (typeof FIXED_CHAIN)[keyof typeof FIXED_CHAIN]]: ChainKind } = {
  FORWARD: 'forward',
  'from-wl-dispatch': 'dispatch-from',
  'to-wl-dispatch': 'dispatch-to',
  INPUT: 'input',
  OUTPUT: 'owned-other',
  'to-host-dispatch': 'dispatch-host',
  // The shared "no CNP egress tier" return of the host dispatch: ours, but no pod's or policy's.
  'to-host-pass': 'owned-other',
};

/** Classifies a chain by its name; `builtins` are the kernel's own chains (FORWARD, INPUT, …). */
export function chainKindOf(name: string, prefix: string, builtins: readonly string[]): ChainKind {
  if (builtins.includes(name)) return 'builtin';
  if (!name.startsWith(prefix)) return 'foreign';
  const rest = name.slice(prefix.length);
  const fixed = (KIND_OF_FIXED as Record<string, ChainKind | undefined>)[rest];
  if (fixed) return fixed;
  const tag = rest.slice(0, 2);
  const kind = rest[2] === '-' ? (KIND_OF_TAG as Record<string, ChainKind | undefined>)[tag] : undefined;
  return kind ?? 'owned-other';
}
