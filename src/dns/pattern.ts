// ClusterNetworkPolicy v1alpha2 egress peer `domainNames`: which queried names one entry matches.
// The field's documentation (kubernetes-sigs/network-policy-api, apis/v1alpha2/clusternetworkpolicy_types.go,
// type DomainName):
//   "DomainName can be an exact match, or use the wildcard specifier '*' to match one or more labels.
//    '*', the wildcard specifier, matches one or more entire labels. It does not support partial matches.
//    '*' may only be specified as a prefix."
//   "`*.kubernetes.io` matches subdomains of kubernetes.io. "www.kubernetes.io", "blog.kubernetes.io", and
//    "latest.blog.kubernetes.io" match, however "kubernetes.io", and "wikipedia.org" do not."

import { domainNameProblem } from '../model/domain-name.js';
import { sameName, type DnsName } from './wire.js';

export interface DomainPattern {
  /** The entry as written. */
  readonly text: string;
  /** A leading `*.`: one or more labels before `suffix`. */
  readonly wildcard: boolean;
  readonly suffix: DnsName;
}

/** One `domainNames` entry → its pattern, or why it is not a valid DomainName. */
export function parseDomainPattern(text: string): { ok: true; value: DomainPattern } | { ok: false; reason: string } {
  // The CRD's validation pattern: anything else is refused (the rule then fails closed).
  const problem = domainNameProblem(text);
  if (problem !== undefined) return { ok: false, reason: problem };
  const wildcard = text.startsWith('*.');
  // A trailing dot (the fully qualified form) names the same domain.
  const body = (wildcard ? text.slice(2) : text).replace(/\.$/, '');
  return { ok: true, value: { text, wildcard, suffix: body.split('.') } };
}

/** Whether the queried name (as labels, so a `.` inside a label never counts as a boundary) matches the pattern. */
export function domainMatches(pattern: DomainPattern, name: DnsName): boolean {
  if (!pattern.wildcard) return sameName(pattern.suffix, name);
  const extra = name.length - pattern.suffix.length;
  return extra >= 1 && sameName(pattern.suffix, name.slice(extra));
}
