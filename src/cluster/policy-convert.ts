// A NetworkPolicy's JSON → the model's NetworkPolicy, after its schema check (convert.ts). Read leniently, but
// where a broken field could change *which* pods or directions the policy isolates it is read the closed way
// (readPolicyTypes, readRules): a policy with problems is kept, isolates, and allows nothing.

import type {
  LabelSelector,
  NetworkPolicy,
  PolicyPeer,
  PolicyPort,
  PolicyRule,
  PolicyType,
  SelectorOperator,
  SelectorRequirement,
} from '../model/index.js';
import { array, namespaceOf, readLabels, readProtocol, record } from './read-fields.js';

export function readPolicy(obj: Record<string, unknown>, meta: Record<string, unknown>): NetworkPolicy {
  const spec = record(obj['spec']) ?? {};
  const policyTypes = readPolicyTypes(spec['policyTypes']);
  const ingress = readRules(spec['ingress'], 'from');
  const egress = readRules(spec['egress'], 'to');
  return {
    namespace: namespaceOf(meta),
    name: meta['name'] as string,
    // "podSelector ... An empty podSelector selects all pods in this namespace." A missing or unreadable
    // one reads as empty: for a broken policy that isolates the whole namespace, the closed choice.
    podSelector: readSelector(spec['podSelector']),
    ...creationTimestampOf(meta),
    ...(policyTypes ? { policyTypes } : {}),
    ...(ingress ? { ingress } : {}),
    ...(egress ? { egress } : {}),
  };
}

/**
 * metadata.creationTimestamp as client-node or a manifest gives it (a Date, or RFC 3339 text), as RFC 3339
 * UTC text that sorts by time; anything else is left out (the policy then counts as oldest).
 */
function creationTimestampOf(meta: Record<string, unknown>): { creationTimestamp?: string } {
  const v = meta['creationTimestamp'];
  const date = v instanceof Date ? v : typeof v === 'string' ? new Date(v) : undefined;
  return date && !Number.isNaN(date.getTime()) ? { creationTimestamp: date.toISOString() } : {};
}

const POLICY_TYPES: readonly PolicyType[] = ['Ingress', 'Egress'];

/** Absent stays absent (the compiler defaults it). Unreadable means both directions: fail closed. */
function readPolicyTypes(v: unknown): PolicyType[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (Array.isArray(v) && v.every((t) => POLICY_TYPES.includes(t as PolicyType))) return v as PolicyType[];
  return ['Ingress', 'Egress'];
}

/**
 * client-node's ObjectSerializer renames ingress `from` to `_from` (a reserved word in its generated models):
 * listed objects carry `_from`, watch events the wire name. Reading only `from` would silently turn every
 * listed ingress rule into "allow from anywhere", so put the wire name back before anything reads it.
 */
export function wireNames(obj: unknown): unknown {
  const spec = record(record(obj)?.['spec']);
  const ingress = spec?.['ingress'];
  if (!Array.isArray(ingress) || !ingress.some((r) => record(r) && '_from' in (r as object))) return obj;
  const fixed = (ingress as unknown[]).map((r) => {
    const rule = record(r);
    if (!rule || !('_from' in rule)) return r;
    const { _from, ...rest } = rule;
    return rest['from'] === undefined ? { ...rest, from: _from } : rest;
  });
  return { ...(obj as Record<string, unknown>), spec: { ...spec, ingress: fixed } };
}

/**
 * A rule list that is present but not a list reads as one empty rule, so that policyTypes
 * defaulting ("policies that contain an egress section are assumed to affect egress") still isolates
 * that direction. The policy is invalid then, so the rule allows nothing.
 */
function readRules(v: unknown, peersField: 'from' | 'to'): PolicyRule[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) return [{}];
  return v.map((r): PolicyRule => {
    const rule = record(r) ?? {};
    const peers = rule[peersField];
    const ports = rule['ports'];
    return {
      ...(Array.isArray(peers) ? { peers: peers.map(readPeer) } : {}),
      ...(Array.isArray(ports) ? { ports: ports.map(readPort) } : {}),
    };
  });
}

function readPeer(v: unknown): PolicyPeer {
  const peer = record(v) ?? {};
  const block = record(peer['ipBlock']);
  return {
    ...(record(peer['podSelector']) ? { podSelector: readSelector(peer['podSelector']) } : {}),
    ...(record(peer['namespaceSelector']) ? { namespaceSelector: readSelector(peer['namespaceSelector']) } : {}),
    ...(block
      ? {
          ipBlock: {
            cidr: typeof block['cidr'] === 'string' ? block['cidr'] : '',
            except: array(block['except']).filter((e): e is string => typeof e === 'string'),
          },
        }
      : {}),
  };
}

function readPort(v: unknown): PolicyPort {
  const port = record(v) ?? {};
  const p = port['port'];
  const end = port['endPort'];
  return {
    // "The protocol (TCP, UDP, or SCTP) which traffic must match. If not specified, this field defaults to TCP."
    protocol: readProtocol(port['protocol']),
    ...(typeof p === 'number' || typeof p === 'string' ? { port: p } : {}),
    ...(typeof end === 'number' ? { endPort: end } : {}),
  };
}

const OPERATORS: readonly SelectorOperator[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** Unreadable requirements are left out, which can only widen a selector (see readPolicy). */
export function readSelector(v: unknown): LabelSelector {
  const sel = record(v) ?? {};
  const matchExpressions = array(sel['matchExpressions']).flatMap((e): SelectorRequirement[] => {
    const req = record(e);
    if (!req || typeof req['key'] !== 'string' || !OPERATORS.includes(req['operator'] as SelectorOperator)) return [];
    const values = array(req['values']).filter((x): x is string => typeof x === 'string');
    return [{ key: req['key'], operator: req['operator'] as SelectorOperator, values }];
  });
  return { matchLabels: readLabels(sel['matchLabels']), matchExpressions };
}
