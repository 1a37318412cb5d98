// Every object is cut down as it is decoded, before a list page or WatchList stream is held whole. Full Pod
// objects (managedFields, env, volumes, conditions, …) cost kilobytes each; netfence reads a few fields.
// Whatever convert() reads must survive here.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectKind } from './object-kind.js';
import { ControllerRefInterner } from './intern.js';
import { MODE_ANNOTATION } from './policy-mode.js';
import { record } from './read-fields.js';

type Json = Record<string, unknown>;

function pick(obj: Json | undefined, keys: readonly string[]): Json | undefined {
  if (!obj) return undefined;
  const out: Json = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}

const controllerRefs = new ControllerRefInterner();

const META = ['name', 'namespace', 'uid', 'resourceVersion', 'labels', 'deletionTimestamp'] as const;

export function slimObject(kind: ObjectKind, obj: KubernetesObject): KubernetesObject {
  const o = record(obj);
  if (!o) return obj;
  const head: Json = { ...pick(o, ['apiVersion', 'kind']), metadata: pick(record(o['metadata']), META) };
  switch (kind) {
    case 'Pod': {
      const spec = record(o['spec']);
      // Only the controller reference, and of it only what convert() reads (the map groups pods by it), one
      // array shared by the pods of one owner (intern.ts): the cache holds every pod.
      const refs = record(o['metadata'])?.['ownerReferences'];
      const controller = Array.isArray(refs) ? refs.map(record).find((r) => r?.['controller'] === true) : undefined;
      const [kind, name] = [controller?.['kind'], controller?.['name']];
      // A malformed one is of no use to convert() (it leaves it out): not kept.
      if (typeof kind === 'string' && typeof name === 'string')
        head['metadata'] = { ...(head['metadata'] as Json), ownerReferences: controllerRefs.intern(kind, name) };
      const containers = Array.isArray(spec?.['containers'])
        ? (spec['containers'] as unknown[]).map((c) => pick(record(c), ['name', 'ports']) ?? c)
        : spec?.['containers'];
      return {
        ...head,
        spec: { ...pick(spec, ['nodeName', 'hostNetwork']), ...(containers !== undefined ? { containers } : {}) },
        status: pick(record(o['status']), ['phase', 'podIP', 'podIPs']),
      } as KubernetesObject;
    }
    case 'Node':
      return {
        ...head,
        spec: pick(record(o['spec']), ['podCIDR', 'podCIDRs']),
        status: pick(record(o['status']), ['addresses']),
      } as KubernetesObject;
    case 'Namespace':
      return head as KubernetesObject;
    case 'NetworkPolicy':
    case 'ClusterNetworkPolicy': {
      // Policies are small and every field of the spec matters (and must be validated): keep it whole. Their
      // creationTimestamp orders them for the node budget (compile/budget.ts).
      // The mode annotation says whether the policy is enforced or only audited (docs/audit.md).
      const created = record(o['metadata'])?.['creationTimestamp'];
      const mode = record(record(o['metadata'])?.['annotations'])?.[MODE_ANNOTATION];
      const metadata = {
        ...(head['metadata'] as Json),
        ...(created !== undefined ? { creationTimestamp: created } : {}),
        ...(mode !== undefined ? { annotations: { [MODE_ANNOTATION]: mode } } : {}),
      };
      return { ...head, metadata, spec: o['spec'] } as unknown as KubernetesObject;
    }
  }
}
