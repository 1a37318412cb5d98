// Where the cluster comes from: the API server (kube-source.ts) or manifest files (manifest-source.ts).
// The reconciler sees only this interface.

import type { ClusterNetworkPolicy, ClusterNode, ClusterSnapshot, Namespace, NetworkPolicy, Pod, Problem } from '../model/index.js';
import type { ObjectKind } from './schemas.js';

export type { ObjectKind } from './schemas.js';

export type ChangeType = 'add' | 'update' | 'delete';

export interface ClusterChange {
  readonly kind: ObjectKind;
  /** `ns/name` for pods and policies, `name` for namespaces and nodes. */
  readonly key: string;
  readonly type: ChangeType;
}

export interface ClusterSource {
  /** Resolves once the first full list of every kind has arrived; nothing may be written before. */
  readonly synced: Promise<void>;
  /** The current cluster. Cheap: the same object is returned until something changes. */
  snapshot(): ClusterSnapshot;
  /** Objects that could not be read (skipped) and warnings. A policy's own problems travel on it. */
  problems(): readonly Problem[];
  /** Called after each change is in the snapshot. Returns a function that unsubscribes. */
  onChange(cb: (change: ClusterChange) => void): () => void;
  stop(): Promise<void>;
}

/** The subset of winston's Logger the cluster layer uses (so tests can pass a plain object). */
export interface Logger {
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
  debug(message: string, meta?: Record<string, unknown>): void;
}

type Model = Namespace | Pod | NetworkPolicy | ClusterNode | ClusterNetworkPolicy;

/**
 * The objects of a source, keyed per kind, with a cached snapshot. Both sources keep their state
 * here so they build snapshots the same way (sorted by key, so equal clusters give equal snapshots).
 */
export class ObjectStore {
  private readonly maps: { readonly [K in ObjectKind]: Map<string, Model> } = {
    Namespace: new Map(),
    Pod: new Map(),
    NetworkPolicy: new Map(),
    Node: new Map(),
    ClusterNetworkPolicy: new Map(),
  };
  /** Keys per kind in sorted order, kept sorted on insert so a change never re-sorts 10k pods. */
  private readonly sorted: { readonly [K in ObjectKind]: string[] } = {
    Namespace: [],
    Pod: [],
    NetworkPolicy: [],
    Node: [],
    ClusterNetworkPolicy: [],
  };
  /** Per kind, the array handed out last; rebuilt only for the kind that changed, so unchanged kinds keep their identity. */
  private readonly arrays: { [K in ObjectKind]?: Model[] | undefined } = {};
  private cached: ClusterSnapshot | undefined;

  get(kind: ObjectKind, key: string): Model | undefined {
    return this.maps[kind].get(key);
  }

  keys(kind: ObjectKind): string[] {
    return [...this.maps[kind].keys()];
  }

  /** Stores the value; returns the change, or undefined if an equal value was already there. */
  set(kind: ObjectKind, key: string, value: Model): ClusterChange | undefined {
    const old = this.maps[kind].get(key);
    if (old !== undefined && JSON.stringify(old) === JSON.stringify(value)) return undefined;
    this.maps[kind].set(key, value);
    if (old === undefined) {
      const keys = this.sorted[kind];
      keys.splice(lowerBound(keys, key), 0, key);
    }
    this.invalidate(kind);
    return { kind, key, type: old === undefined ? 'add' : 'update' };
  }

  delete(kind: ObjectKind, key: string): ClusterChange | undefined {
    if (!this.maps[kind].delete(key)) return undefined;
    const keys = this.sorted[kind];
    keys.splice(lowerBound(keys, key), 1);
    this.invalidate(kind);
    return { kind, key, type: 'delete' };
  }

  snapshot(): ClusterSnapshot {
    this.cached ??= {
      nodes: this.values('Node') as ClusterNode[],
      namespaces: this.values('Namespace') as Namespace[],
      pods: this.values('Pod') as Pod[],
      policies: this.values('NetworkPolicy') as NetworkPolicy[],
      // Present only when there are some: a cluster without the CRD gives the same snapshots as before.
      ...(this.maps.ClusterNetworkPolicy.size > 0
        ? { clusterPolicies: this.values('ClusterNetworkPolicy') as ClusterNetworkPolicy[] }
        : {}),
    };
    return this.cached;
  }

  private invalidate(kind: ObjectKind): void {
    this.cached = undefined;
    this.arrays[kind] = undefined;
  }

  private values(kind: ObjectKind): Model[] {
    const map = this.maps[kind];
    return (this.arrays[kind] ??= this.sorted[kind].map((k) => map.get(k)!));
  }
}

function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Subscriber list whose callbacks cannot break the caller (a throwing subscriber is logged). */
export class ChangeEmitter {
  private readonly subscribers = new Set<(change: ClusterChange) => void>();

  constructor(private readonly logger: Logger) {}

  on(cb: (change: ClusterChange) => void): () => void {
    this.subscribers.add(cb);
    return () => this.subscribers.delete(cb);
  }

  emit(change: ClusterChange | undefined): void {
    if (!change) return;
    for (const cb of this.subscribers) {
      try {
        cb(change);
      } catch (err) {
        this.logger.error('cluster change subscriber failed', { error: String(err), ...change });
      }
    }
  }
}
