// Checks a manifest against real Kubernetes schemas, in two passes:
// - kubernetes-models: validators generated from the Kubernetes OpenAPI spec (types, required
//   fields, enums, int32/quantity formats), the same checks the API server's schema applies;
// - @kubernetes/client-node's generated models: their attribute maps list every field each type
//   has, which catches misspelt keys (what `kubectl apply --validate=strict` rejects).

import * as k8s from '@kubernetes/client-node';
import { ClusterRole, ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { DaemonSet } from 'kubernetes-models/apps/v1';

interface Validatable {
  validate(): void;
}

const MODELS: Record<string, { model: new (data: never) => Validatable; type: string }> = {
  'v1/ConfigMap': { model: ConfigMap, type: 'V1ConfigMap' },
  'v1/ServiceAccount': { model: ServiceAccount, type: 'V1ServiceAccount' },
  'v1/Service': { model: Service, type: 'V1Service' },
  'apps/v1/DaemonSet': { model: DaemonSet, type: 'V1DaemonSet' },
  'rbac.authorization.k8s.io/v1/ClusterRole': { model: ClusterRole, type: 'V1ClusterRole' },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': { model: ClusterRoleBinding, type: 'V1ClusterRoleBinding' },
};

/** Every schema problem of one object, as readable strings; empty when it is valid. */
export function schemaProblems(doc: Record<string, unknown>): string[] {
  const key = `${String(doc['apiVersion'])}/${String(doc['kind'])}`;
  const entry = MODELS[key];
  if (!entry) return [`${key}: no schema known for this kind`];
  const problems: string[] = [];
  try {
    new entry.model(doc as never).validate();
  } catch (err) {
    problems.push(`${key}: ${(err as Error).message}`);
  }
  unknownFields(doc, entry.type, key, problems);
  return problems;
}

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

function unknownFields(value: unknown, type: string, path: string, out: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((item, i) => unknownFields(item, array[1] ?? '', `${path}[${i}]`, out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) unknownFields(v, map[1] ?? '', `${path}.${k}`, out);
    return;
  }
  const model = (k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] } | undefined>)[type];
  // Scalars, IntOrString and `any` have no fields; wrong scalar types are kubernetes-models' job.
  if (!model?.getAttributeTypeMap || typeof value !== 'object' || Array.isArray(value)) return;
  const attributes = model.getAttributeTypeMap();
  for (const [field, child] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === field);
    if (attribute) unknownFields(child, attribute.type, `${path}.${field}`, out);
    else out.push(`${path}.${field}: unknown field`);
  }
}
