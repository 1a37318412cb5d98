// A listed or watched object converted the moment it is decoded (see `arrive`): the informers hold it so until
// its turn to be applied.

import type { KubernetesObject } from '@kubernetes/client-node';
import { convert, type Converted, type ModelOf } from './convert.js';
import type { ObjectKind } from './object-kind.js';
import { slimObject } from './slim.js';

/** An object as the informer holds it between its arrival and its turn: its names, and what it converted to. */
export interface Arrived extends KubernetesObject {
  readonly converted: Converted<ModelOf[ObjectKind]>;
}

/**
 * Converted as it is decoded, not when the informer applies it: a list's objects wait until the whole list
 * has arrived (a list that fails halfway applies nothing), and 100,000 pods waiting as slimmed API objects
 * were most of the daemon's heap at that moment, each one promoted and marked again by every collection
 * while the list grew. What waits now is the model object the store keeps anyway. The conversion is the same
 * as applying it would do (of the slimmed object); its problems are reported when it is applied.
 */
export function arrive(kind: ObjectKind, obj: KubernetesObject): Arrived {
  const slim = slimObject(kind, obj);
  const meta = slim.metadata;
  return {
    metadata: { name: meta?.name, namespace: meta?.namespace, resourceVersion: meta?.resourceVersion },
    converted: convert(kind, slim),
  } as Arrived;
}
