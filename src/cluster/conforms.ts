// Hand-written checks that an object fits its schema in schemas.ts, for the kinds a cluster holds
// thousands of. Compiling the ajv validators costs ~55 ms of CPU at every command start, more than
// validating 10,000 pods with these; ajv is compiled and run only for an object these do not pass, and
// its errors are what the user sees. So each check here must be at least as strict as its schema
// (passing here ⇒ the schema passes); being stricter only costs an ajv run. A unit test
// (conforms.test.ts) holds them against ajv on valid objects and on mutations of every field.
//
// Semantics mirrored from ajv: a property whose value is `undefined` is absent; `type: object` is a
// non-null, non-array object; every optional field also accepts `null` (see schemas.ts).

import type { ObjectKind } from './object-kind.js';

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || v === null || check(v);
const isString = (v: unknown): boolean => typeof v === 'string';
const optString = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';

function stringMap(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!isObject(v)) return false;
  for (const key in v) if (typeof v[key] !== 'string') return false;
  return true;
}

function listOf(v: unknown, item: (v: unknown) => boolean): boolean {
  if (v === undefined || v === null) return true;
  if (!Array.isArray(v)) return false;
  for (const x of v) if (!item(x)) return false;
  return true;
}

function meta(v: unknown, namespaced: boolean): boolean {
  if (!isObject(v)) return false;
  const name = v['name'];
  return (
    typeof name === 'string' &&
    name !== '' &&
    (!namespaced || optString(v['namespace'])) &&
    optString(v['uid']) &&
    optString(v['resourceVersion']) &&
    stringMap(v['labels'])
  );
}

const topLevel = (v: unknown, namespaced: boolean): v is Obj => isObject(v) && meta(v['metadata'], namespaced);

const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
const optProtocol = (v: unknown): boolean => v === undefined || v === null || PROTOCOLS.has(v as string);

// --- core/v1 ------------------------------------------------------------------------------------

// Pods are most of a cluster: these are written out without helper closures or `for…of` (commands run this
// code unoptimised, where every call and every iterator step counts).
function containerPorts(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (!Array.isArray(v)) return false;
  for (let i = 0; i < v.length; i++) {
    const p: unknown = v[i];
    if (!isObject(p) || !Number.isInteger(p['containerPort'])) return false;
    const name = p['name'];
    const protocol = p['protocol'];
    if (name !== undefined && name !== null && typeof name !== 'string') return false;
    if (protocol !== undefined && protocol !== null && protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP') return false;
  }
  return true;
}

function podSpec(s: unknown): boolean {
  if (s === undefined || s === null) return true;
  if (!isObject(s)) return false;
  const hostNetwork = s['hostNetwork'];
  if (hostNetwork !== undefined && hostNetwork !== null && typeof hostNetwork !== 'boolean') return false;
  if (!optString(s['nodeName'])) return false;
  const containers = s['containers'];
  if (containers === undefined || containers === null) return true;
  if (!Array.isArray(containers)) return false;
  for (let i = 0; i < containers.length; i++) {
    const c: unknown = containers[i];
    if (!isObject(c) || !containerPorts(c['ports'])) return false;
  }
  return true;
}

const PHASES = new Set(['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown']);

function podStatus(s: unknown): boolean {
  if (s === undefined || s === null) return true;
  if (!isObject(s)) return false;
  const phase = s['phase'];
  if (phase !== undefined && phase !== null && !PHASES.has(phase as string)) return false;
  if (!optString(s['podIP'])) return false;
  const ips = s['podIPs'];
  if (ips === undefined || ips === null) return true;
  if (!Array.isArray(ips)) return false;
  for (let i = 0; i < ips.length; i++) {
    const e: unknown = ips[i];
    if (!isObject(e) || typeof e['ip'] !== 'string') return false;
  }
  return true;
}

const pod = (v: unknown): boolean => topLevel(v, true) && podSpec(v['spec']) && podStatus(v['status']);

const address = (v: unknown): boolean => isObject(v) && typeof v['type'] === 'string' && typeof v['address'] === 'string';

function node(v: unknown): boolean {
  if (!topLevel(v, false)) return false;
  return (
    optional(v['spec'], (s) => isObject(s) && optString(s['podCIDR']) && listOf(s['podCIDRs'], isString)) &&
    optional(v['status'], (s) => isObject(s) && listOf(s['addresses'], address))
  );
}

// --- networking.k8s.io/v1 -----------------------------------------------------------------------

const OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

const requirement = (v: unknown): boolean =>
  isObject(v) && typeof v['key'] === 'string' && OPERATORS.has(v['operator'] as string) && listOf(v['values'], isString);

const labelSelector = (v: unknown): boolean =>
  optional(v, (s) => isObject(s) && stringMap(s['matchLabels']) && listOf(s['matchExpressions'], requirement));

const ipBlock = (v: unknown): boolean => optional(v, (b) => isObject(b) && typeof b['cidr'] === 'string' && listOf(b['except'], isString));

const peer = (v: unknown): boolean =>
  isObject(v) && labelSelector(v['podSelector']) && labelSelector(v['namespaceSelector']) && ipBlock(v['ipBlock']);

const policyPort = (v: unknown): boolean =>
  isObject(v) &&
  optProtocol(v['protocol']) &&
  optional(v['port'], (p) => Number.isInteger(p) || typeof p === 'string') &&
  optional(v['endPort'], Number.isInteger);

const rule =
  (peers: 'from' | 'to') =>
  (v: unknown): boolean =>
    isObject(v) && listOf(v[peers], peer) && listOf(v['ports'], policyPort);
const ingressRule = rule('from');
const egressRule = rule('to');

const POLICY_TYPES = new Set(['Ingress', 'Egress']);

function networkPolicy(v: unknown): boolean {
  if (!topLevel(v, true)) return false;
  const spec = v['spec'];
  // `spec` is `type: object` without null in the schema.
  if (spec === undefined) return true;
  return (
    isObject(spec) &&
    labelSelector(spec['podSelector']) &&
    listOf(spec['policyTypes'], (t) => POLICY_TYPES.has(t as string)) &&
    listOf(spec['ingress'], ingressRule) &&
    listOf(spec['egress'], egressRule)
  );
}

const namespace = (v: unknown): boolean => topLevel(v, false);

/**
 * True when `obj` certainly passes its kind's schema; false when it may not (then ajv decides).
 * ClusterNetworkPolicies are few and always go to ajv.
 */
export function conforms(kind: ObjectKind, obj: unknown): boolean {
  switch (kind) {
    case 'Pod':
      return pod(obj);
    case 'Namespace':
      return namespace(obj);
    case 'Node':
      return node(obj);
    case 'NetworkPolicy':
      return networkPolicy(obj);
    default:
      return false;
  }
}
