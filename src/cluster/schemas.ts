// JSON schemas for the fields netfence reads from Kubernetes objects (core/v1 and networking.k8s.io/v1),
// compiled with ajv on first need (conforms.ts passes the common case without it). Only shape and type:
// semantic checks (CIDR syntax, port ranges, selector syntax) are the compiler's job. Unknown fields are
// allowed because real objects carry many.
//
// Every optional field also accepts `null`: the API server's JSON decoding treats `null` as "unset",
// and YAML writes an empty key (`egress:`) as null.

import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { conforms } from './conforms.js';
import type { ObjectKind } from './object-kind.js';

type Schema = Record<string, unknown>;

const nullable = (...types: string[]): Schema => ({ type: [...types, 'null'] });
const stringMap: Schema = { ...nullable('object'), additionalProperties: { type: 'string' } };
const stringList: Schema = { ...nullable('array'), items: { type: 'string' } };
const listOf = (items: Schema): Schema => ({ ...nullable('array'), items });
const objectWith = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  ...nullable('object'),
  properties,
  required,
});

/** metadata.name is what everything is keyed by; the rest is optional here. */
const objectMeta = (namespaced: boolean): Schema => ({
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1 },
    ...(namespaced ? { namespace: nullable('string') } : {}),
    uid: nullable('string'),
    resourceVersion: nullable('string'),
    labels: stringMap,
  },
  required: ['name'],
});

const topLevel = (namespaced: boolean, spec?: Schema, status?: Schema): Schema => ({
  type: 'object',
  properties: {
    metadata: objectMeta(namespaced),
    ...(spec ? { spec } : {}),
    ...(status ? { status } : {}),
  },
  required: ['metadata'],
});

// --- metav1.LabelSelector ---------------------------------------------------------------------

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

const labelSelector: Schema = objectWith({
  matchLabels: stringMap,
  matchExpressions: listOf({
    type: 'object',
    properties: {
      key: { type: 'string' },
      operator: { enum: OPERATORS },
      values: stringList,
    },
    required: ['key', 'operator'],
  }),
});

// --- networking.k8s.io/v1 NetworkPolicy -------------------------------------------------------

export const PROTOCOL_ENUM = ['TCP', 'UDP', 'SCTP'];

const policyPeer: Schema = {
  type: 'object',
  properties: {
    podSelector: labelSelector,
    namespaceSelector: labelSelector,
    ipBlock: objectWith({ cidr: { type: 'string' }, except: stringList }, ['cidr']),
  },
};

const policyPort: Schema = {
  type: 'object',
  properties: {
    protocol: { enum: [...PROTOCOL_ENUM, null] },
    // intstr.IntOrString
    port: nullable('integer', 'string'),
    endPort: nullable('integer'),
  },
};

const policyRule = (peersField: 'from' | 'to'): Schema => ({
  type: 'object',
  properties: { [peersField]: listOf(policyPeer), ports: listOf(policyPort) },
});

export const networkPolicySchema: Schema = topLevel(true, {
  type: 'object',
  properties: {
    podSelector: labelSelector,
    policyTypes: listOf({ enum: ['Ingress', 'Egress'] }),
    ingress: listOf(policyRule('from')),
    egress: listOf(policyRule('to')),
  },
});

// --- core/v1 Pod, Namespace, Node -------------------------------------------------------------

const containerPort: Schema = {
  type: 'object',
  properties: {
    name: nullable('string'),
    containerPort: { type: 'integer' },
    protocol: { enum: [...PROTOCOL_ENUM, null] },
  },
  required: ['containerPort'],
};

export const podSchema: Schema = topLevel(
  true,
  objectWith({
    nodeName: nullable('string'),
    hostNetwork: nullable('boolean'),
    containers: listOf({ type: 'object', properties: { ports: listOf(containerPort) } }),
  }),
  objectWith({
    phase: { enum: ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown', null] },
    podIP: nullable('string'),
    podIPs: listOf({ type: 'object', properties: { ip: { type: 'string' } }, required: ['ip'] }),
  }),
);

export const namespaceSchema: Schema = topLevel(false);

export const nodeSchema: Schema = topLevel(
  false,
  objectWith({ podCIDR: nullable('string'), podCIDRs: stringList }),
  objectWith({
    addresses: listOf({
      type: 'object',
      properties: { type: { type: 'string' }, address: { type: 'string' } },
      required: ['type', 'address'],
    }),
  }),
);

// --- policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicy -------------------------------------
// Shape only, like the rest. The CRD's own validation (one-of peers, CEL, MaxItems) is not repeated:
// cnp-convert.ts reads what does not fit the closed way and reports it.

export const CNP_ACTION_ENUM = ['Accept', 'Deny', 'Pass'];

const cnpPodsSelector: Schema = objectWith({ namespaceSelector: labelSelector, podSelector: labelSelector });

const cnpPeer: Schema = {
  type: 'object',
  properties: {
    namespaces: labelSelector,
    pods: cnpPodsSelector,
    networks: stringList,
    nodes: labelSelector,
    domainNames: stringList,
  },
};

const cnpPort: Schema = objectWith({
  number: nullable('integer'),
  range: objectWith({ start: { type: 'integer' }, end: { type: 'integer' } }, ['start', 'end']),
});

const cnpProtocol: Schema = {
  type: 'object',
  properties: {
    tcp: objectWith({ destinationPort: cnpPort }),
    udp: objectWith({ destinationPort: cnpPort }),
    sctp: objectWith({ destinationPort: cnpPort }),
    destinationNamedPort: nullable('string'),
  },
};

const cnpRule = (peersField: 'from' | 'to'): Schema => ({
  type: 'object',
  properties: {
    name: nullable('string'),
    action: { enum: CNP_ACTION_ENUM },
    [peersField]: { type: 'array', items: cnpPeer },
    protocols: listOf(cnpProtocol),
  },
  required: ['action', peersField],
});

export const clusterNetworkPolicySchema: Schema = {
  ...topLevel(false, {
    type: 'object',
    properties: {
      tier: { enum: ['Admin', 'Baseline'] },
      priority: { type: 'integer', minimum: 0, maximum: 1000 },
      subject: { type: 'object', properties: { namespaces: labelSelector, pods: cnpPodsSelector } },
      ingress: listOf(cnpRule('from')),
      egress: listOf(cnpRule('to')),
    },
    required: ['tier', 'priority', 'subject'],
  }),
  required: ['metadata', 'spec'],
};

// --- compilation and error formatting ---------------------------------------------------------

let ajv: InstanceType<typeof AjvModule.Ajv> | undefined;

const SCHEMAS: { readonly [K in ObjectKind]: Schema } = {
  Namespace: namespaceSchema,
  Pod: podSchema,
  NetworkPolicy: networkPolicySchema,
  Node: nodeSchema,
  ClusterNetworkPolicy: clusterNetworkPolicySchema,
};

const compiled = new Map<ObjectKind, ValidateFunction>();

/** The kind's ajv validator, compiled on first use: most objects never need one (see conforms.ts). */
export function validatorOf(kind: ObjectKind): ValidateFunction {
  let validate = compiled.get(kind);
  if (!validate) {
    if (!ajv) {
      // Loaded here, not on import (~30 ms of every command start). validateSchema off: checking the
      // schema against the JSON Schema meta-schema compiles that too; strict mode still rejects unknown
      // keywords, and the unit tests compile it.
      const { Ajv } = createRequire(import.meta.url)('ajv') as typeof AjvModule;
      ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, validateSchema: false });
    }
    validate = ajv.compile(SCHEMAS[kind]);
    compiled.set(kind, validate);
  }
  return validate;
}

export interface SchemaError {
  /** `spec.ingress[0].ports[1].port` */
  readonly field: string;
  readonly message: string;
}

/** Runs the kind's schema and turns ajv's errors into readable field/message pairs. */
export function schemaErrors(kind: ObjectKind, obj: unknown): SchemaError[] {
  if (conforms(kind, obj)) return [];
  const validate = validatorOf(kind);
  if (validate(obj)) return [];
  return (validate.errors ?? []).map((e) => describe(e, obj));
}

function describe(e: ErrorObject, root: unknown): SchemaError {
  const segments = pointerSegments(e.instancePath);
  const got = valueAt(root, segments);
  switch (e.keyword) {
    case 'required': {
      const missing = String((e.params as { missingProperty: string }).missingProperty);
      return { field: fieldPath([...segments, missing]), message: `required field "${missing}" is missing` };
    }
    case 'enum': {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.filter((v) => v !== null);
      return { field: fieldPath(segments), message: `must be one of ${allowed.join(', ')} (got ${show(got)})` };
    }
    case 'type': {
      const types = ([] as string[]).concat((e.params as { type: string | string[] }).type).filter((t) => t !== 'null');
      return { field: fieldPath(segments), message: `must be ${types.join(' or ')} (got ${show(got)})` };
    }
    case 'minLength':
      return { field: fieldPath(segments), message: 'must not be empty' };
    case 'minimum':
    case 'maximum':
      return { field: fieldPath(segments), message: `${e.message ?? e.keyword} (got ${show(got)})` };
    default:
      return { field: fieldPath(segments), message: e.message ?? e.keyword };
  }
}

function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** JSON pointer segments → `spec.ingress[0].from[1].podSelector.matchLabels["app.kubernetes.io/name"]`. */
export function fieldPath(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number' || /^(0|[1-9][0-9]*)$/.test(s)) out += `[${s}]`;
    else if (IDENTIFIER.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out === '' ? '(root)' : out;
}

function valueAt(root: unknown, segments: readonly string[]): unknown {
  let v: unknown = root;
  for (const s of segments) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

function show(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return `${typeof v} ${String(v)}`;
}
