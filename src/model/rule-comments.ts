// The human part of our rule comments: written here by the compiler's chain builders and read back here by
// `trace` and `inspect` to say which policy rule matched. Writer and reader sit together (and are tested by
// round-tripping each other) so that changing a word cannot silently break attribution.

export type CommentDirection = 'ingress' | 'egress';
type CnpVerdict = 'Accept' | 'Deny' | 'Pass';

export const ruleComment = {
  /** The allow of one NetworkPolicy rule: `ns/name ingress:0`. */
  policyRule: (policy: string, direction: CommentDirection, index: number): string => `${policy} ${direction}:${index}`,
  /** A policy chain none of whose rules can match. */
  policyNone: (policy: string, direction: CommentDirection): string => `no ${direction} rule of ${policy} can match`,
  /** A policy with an error: it allows nothing. */
  policyInvalid: (policy: string): string => `${policy} is invalid: allows nothing`,
  /** "a pod is not isolated for <direction>" when no policy selects it; `tiers`: nor did a ClusterNetworkPolicy tier decide. */
  workloadOpen: (pod: string, direction: CommentDirection, tiers = false): string =>
    `${pod} not isolated for ${direction}${tiers ? ': no tier decided' : ''}`,
  workloadIsolated: (pod: string, direction: CommentDirection): string => `${pod} isolated for ${direction}: no policy allowed`,
  /** The head of a ClusterNetworkPolicy rule's comment: `cnp <name> ingress:0 [<rule name>]`. */
  cnpRuleLabel: (cnp: string, direction: CommentDirection, index: number, ruleName?: string): string =>
    `cnp ${cnp} ${direction}:${index}${ruleName ? ` ${ruleName}` : ''}`,
  cnpRule: (label: string, action: CnpVerdict): string => `${label} ${action}`,
  /**
   * A `domainNames` Accept for one subject pod: `<label> Accept learned by <ns/pod> for <names>`, so the tools
   * name the rule, the pod and what it would have to look up from the kernel alone. Names that do not fit
   * the comment end in `...`; with no room for any, the plain cnpRule comment.
   */
  cnpLearned: (label: string, pod: string, names: readonly string[]): string => {
    const head = `${label} Accept learned by ${pod} for `;
    const room = LEARNED_ROOM - head.length;
    let list = '';
    for (const name of names) {
      const next = list === '' ? name : `${list},${name}`;
      if (next.length > room - 4) return list === '' ? `${label} Accept` : `${head}${list},...`;
      list = next;
    }
    return `${head}${list}`;
  },
  cnpFailClosed: (label: string, action: CnpVerdict): string => `${label} ${action}: fails closed, denies all`,
  cnpNone: (cnp: string, direction: CommentDirection): string => `cnp ${cnp}: no ${direction} rule can match`,
} as const;

/** What the human part of a comment may hold: iptables allows 256 bytes, the hash and sanitizing take the rest. */
const LEARNED_ROOM = 200;

/** What a comment says, read back. */
export type CommentMeaning =
  | { readonly kind: 'policy-rule'; readonly policy: string; readonly direction: CommentDirection; readonly rule: string }
  | { readonly kind: 'policy-empty'; readonly policy: string; readonly why: string }
  | { readonly kind: 'workload'; readonly pod: string; readonly direction: CommentDirection; readonly isolated: boolean }
  /** A ClusterNetworkPolicy rule: `cnp <name> ingress:0 [<rule name>] Deny`. */
  | {
      readonly kind: 'cluster-policy-rule';
      readonly policy: string;
      readonly direction: CommentDirection;
      readonly rule: string;
      readonly action: CnpVerdict;
      /** A `domainNames` Accept: the pod whose lookups fill its set, and the names (a `...` last: more not shown). */
      readonly learned?: { readonly pod: string; readonly names: readonly string[] };
      /** A rule netfence cannot use, denying everything in its place (cnpFailClosed). */
      readonly failsClosed?: true;
    }
  | { readonly kind: 'cluster-policy-empty'; readonly policy: string; readonly direction: CommentDirection }
  | { readonly kind: 'other'; readonly text: string };

const KEY = String.raw`([a-z0-9.-]+\/[A-Za-z0-9._-]+)`;
const POLICY_RULE = new RegExp(`^${KEY} (ingress|egress):(\\d+)$`);
const POLICY_NONE = new RegExp(`^no (ingress|egress) rule of ${KEY} can match$`);
const POLICY_INVALID = new RegExp(`^${KEY} is invalid: allows nothing$`);
const WORKLOAD = new RegExp(`^${KEY} (not isolated|isolated) for (ingress|egress)`);
const CNP_RULE = /^cnp ([a-z0-9.-]+) (ingress|egress):(\d+)(?: (.*?))? (Accept|Deny|Pass)(: fails closed, denies all)?$/;
const CNP_LEARNED = new RegExp(`^cnp ([a-z0-9.-]+) (egress):(\\d+)(?: (.*?))? (Accept) learned by ${KEY} for (\\S+)$`);
const CNP_NONE = /^cnp ([a-z0-9.-]+): no (ingress|egress) rule can match$/;

// Read once per comment text: a map traces thousands of packets past the same rules, and the tracer asks what
// a comment says of every rule that decides or allows. Bounded like model/address.ts's parsed addresses.
const meanings = new Map<string, CommentMeaning>();

/** What a comment says (one shared, read-only answer per text). */
export function readComment(text: string): CommentMeaning {
  let meaning = meanings.get(text);
  if (meaning === undefined) {
    if (meanings.size >= 100_000) meanings.clear();
    meanings.set(text, (meaning = parseComment(text)));
  }
  return meaning;
}

function parseComment(text: string): CommentMeaning {
  let m = POLICY_RULE.exec(text);
  if (m) return { kind: 'policy-rule', policy: m[1]!, direction: m[2] as CommentDirection, rule: `${m[2]}:${m[3]}` };
  if ((m = POLICY_NONE.exec(text))) return { kind: 'policy-empty', policy: m[2]!, why: `no ${m[1]} rule can match` };
  if ((m = POLICY_INVALID.exec(text))) return { kind: 'policy-empty', policy: m[1]!, why: 'invalid: allows nothing' };
  if ((m = WORKLOAD.exec(text)))
    return { kind: 'workload', pod: m[1]!, direction: m[3] as CommentDirection, isolated: m[2] === 'isolated' };
  if ((m = CNP_LEARNED.exec(text))) {
    // Sanitized comments keep no `*`: a wildcard entry reads back from `_.` (no label may start with `_`).
    const names = m[7]!.split(',').map((n) => (n.startsWith('_.') ? `*${n.slice(1)}` : n));
    return {
      kind: 'cluster-policy-rule',
      policy: `ClusterNetworkPolicy ${m[1]!}`,
      direction: 'egress',
      rule: `${m[2]}:${m[3]}${m[4] ? ` ${m[4]}` : ''}`,
      action: 'Accept',
      learned: { pod: m[6]!, names },
    };
  }
  if ((m = CNP_RULE.exec(text))) {
    const rule = `${m[2]}:${m[3]}${m[4] ? ` ${m[4]}` : ''}`;
    return {
      kind: 'cluster-policy-rule',
      policy: `ClusterNetworkPolicy ${m[1]!}`,
      direction: m[2] as CommentDirection,
      rule,
      action: m[5] as CnpVerdict,
      ...(m[6] !== undefined ? { failsClosed: true as const } : {}),
    };
  }
  if ((m = CNP_NONE.exec(text)))
    return { kind: 'cluster-policy-empty', policy: `ClusterNetworkPolicy ${m[1]!}`, direction: m[2] as CommentDirection };
  return { kind: 'other', text };
}
