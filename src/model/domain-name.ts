// ClusterNetworkPolicy `domainNames` entries: which texts are domain names at all. Checked where a CNP is
// read (cluster/cnp-convert.ts) and where an entry is matched against a queried name (dns/pattern.ts), so
// both refuse exactly the same entries.

/**
 * The CRD's validation pattern for a DomainName (kubernetes-sigs/network-policy-api, apis/v1alpha2), except
 * that its `[a-zA-z0-9]` (which also admits `[\]^_` and the backquote) is read as the `[a-zA-Z0-9]` it means.
 */
const DOMAIN_NAME = /^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$/;

/** Why `text` is not a valid `domainNames` entry; undefined when it is one. */
export function domainNameProblem(text: string): string | undefined {
  return DOMAIN_NAME.test(text) ? undefined : `"${text}" is not a domain name (optionally with a leading "*.")`;
}
