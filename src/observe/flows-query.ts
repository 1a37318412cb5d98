// The query of GET /flows, checked. A filter that cannot be read must not quietly become no filter: a
// malformed or misspelt parameter (`since=NaN`, `since=-1`, `namespce=prod`) would otherwise select every
// record. Every parameter is checked; the first bad one is named in a short plain message.
//
// Accepted forms (each at most once, none empty):
//   pod=<namespace>/<name>     namespace a DNS-1123 label, name a DNS-1123 subdomain
//   namespace=<namespace>      a DNS-1123 label
//   policy=<namespace>/<name>  as pod; or <name>, a ClusterNetworkPolicy (cluster-scoped, a DNS-1123 subdomain)
//   since=<seq>                decimal digits only, 0 to 2^53-1 (records with a greater seq)
//   audit=true                 the audit records (docs/audit.md) instead of the drops

import type { FlowFilter, FlowRecord } from './flow-log.js';

const FLOWS_QUERY_PARAMETERS = ['pod', 'namespace', 'policy', 'since', 'audit'] as const;
type Parameter = (typeof FLOWS_QUERY_PARAMETERS)[number];

export type FlowsQuery = { readonly filter: FlowFilter } | { readonly error: string };

// Kubernetes object names: a namespace is a DNS-1123 label, a pod or NetworkPolicy name a DNS-1123 subdomain.
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const isLabel = (s: string): boolean => LABEL.test(s);
const isSubdomain = (s: string): boolean => s.length <= 253 && s.split('.').every(isLabel);
const isObjectRef = (s: string): boolean => {
  const [ns, name, ...rest] = s.split('/');
  return rest.length === 0 && ns !== undefined && name !== undefined && isLabel(ns) && isSubdomain(name);
};

const FORMS: Readonly<Record<Parameter, { readonly valid: (s: string) => boolean; readonly expected: string }>> = {
  pod: { valid: isObjectRef, expected: 'namespace/name of a pod' },
  namespace: { valid: isLabel, expected: 'a namespace name (DNS-1123 label)' },
  policy: {
    valid: (s) => isObjectRef(s) || isSubdomain(s),
    expected: 'namespace/name of a NetworkPolicy, or the name of a ClusterNetworkPolicy',
  },
  // Digits only: Number() would also take '', ' 1', '1e3', '0x10' and '-0'.
  since: {
    valid: (s) => /^[0-9]{1,16}$/.test(s) && Number(s) <= Number.MAX_SAFE_INTEGER,
    expected: 'a record seq: decimal digits, 0 to 2^53-1',
  },
  audit: { valid: (s) => s === 'true', expected: 'true' },
};

// The client's own text goes back only if it is plainly a name: the answer may end up on a terminal.
const nameOf = (key: string): string => (/^[A-Za-z0-9_.-]{1,40}$/.test(key) ? key : 'a parameter');

const isParameter = (key: string): key is Parameter => (FLOWS_QUERY_PARAMETERS as readonly string[]).includes(key);

/** The filter the query asks for, or why it cannot be served (the parameter first, then the accepted form). */
export function parseFlowsQuery(params: URLSearchParams): FlowsQuery {
  const seen = new Set<string>();
  for (const [key, value] of params) {
    if (!isParameter(key)) return { error: `${nameOf(key)}: unknown parameter (accepted: ${FLOWS_QUERY_PARAMETERS.join(', ')})` };
    if (seen.has(key)) return { error: `${key}: given more than once` };
    seen.add(key);
    if (!FORMS[key].valid(value)) return { error: `${key}: expected ${FORMS[key].expected}` };
  }
  const since = params.get('since');
  return {
    filter: {
      pod: params.get('pod') ?? undefined,
      namespace: params.get('namespace') ?? undefined,
      policy: params.get('policy') ?? undefined,
      since: since === null ? undefined : Number(since),
      ...(params.get('audit') === 'true' ? { audit: true } : {}),
    },
  };
}

/** The /flows answer: the records the query selects, or (nothing listed) why the query was refused. */
export type FlowsAnswer = { readonly records: readonly FlowRecord[] } | { readonly error: string };

export function answerFlowsQuery(params: URLSearchParams, list: (filter: FlowFilter) => readonly FlowRecord[]): FlowsAnswer {
  const query = parseFlowsQuery(params);
  return 'error' in query ? { error: query.error } : { records: list(query.filter) };
}
