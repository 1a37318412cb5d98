// Where the cluster comes from: the API server (kube-source.ts) or manifest files (manifest-source.ts).
// The reconciler sees only this interface.

import type {
  ClusterNetworkPolicy,
  ClusterNode,
  ClusterSnapshot,
  Namespace,
  NetworkPolicy,
  Pod,
  Problem,
  SnapshotChanges,
  SnapshotDelta,
} from '../model/index.js';
import type { ObjectKind } from './object-kind.js';

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

const KINDS: readonly ObjectKind[] = ['Namespace', 'Pod', 'NetworkPolicy', 'Node', 'ClusterNetworkPolicy'];

/** The store key of an object of a kind (what the sorted key lists hold). */
const keyOf = (kind: ObjectKind, value: Model): string =>
  kind === 'Pod' || kind === 'NetworkPolicy' ? `${(value as Pod).namespace}/${value.name}` : value.name;

/**
 * One kind's objects as of one snapshot, sorted by key, built only when read: at 50,000 pods building the
 * array costs milliseconds (and a large, long-lived allocation) per change, and the daemon's compiler never
 * reads it (it asks `changes.since` instead). Lists of one kind form a chain from older to newer, so an old
 * list never keeps a newer one from being collected the other way round, and nothing keeps an old list alive
 * but whoever holds its snapshot.
 */
class KindList {
  private built: Model[] | undefined;
  /** The list handed out next for this kind; undefined while this one is the store's latest. */
  next: KindList | undefined;
  /** Keys changed after this list was handed out (until `next` was): their value in this list (undefined: absent). */
  readonly undo = new Map<string, Model | undefined>();

  constructor(
    private readonly kind: ObjectKind,
    private readonly current: () => Model[],
    private readonly currentValue: (key: string) => Model | undefined,
  ) {}

  values(): Model[] {
    if (this.built) return this.built;
    const base = this.next ? this.next.values() : this.current();
    if (this.undo.size === 0) return (this.built = base);
    const out = base.slice();
    for (const [key, value] of this.undo) {
      const i = lowerBoundBy(out, key, (m) => keyOf(this.kind, m));
      const there = i < out.length && keyOf(this.kind, out[i]!) === key;
      if (value === undefined) {
        if (there) out.splice(i, 1);
      } else if (there) out[i] = value;
      else out.splice(i, 0, value);
    }
    return (this.built = out);
  }

  valueOf(key: string): Model | undefined {
    if (this.undo.has(key)) return this.undo.get(key);
    for (let list = this.next; list; list = list.next) if (list.undo.has(key)) return list.undo.get(key);
    return this.currentValue(key);
  }

  /** Keys that may differ between this list and `later` (a list of the same store and kind); undefined if `later` is not later. */
  keysUntil(later: KindList): Set<string> | undefined {
    const keys = new Set<string>();
    if (later === this) return keys;
    for (const key of this.undo.keys()) keys.add(key);
    for (let list = this.next; list !== later; list = list.next) {
      if (!list) return undefined;
      for (const key of list.undo.keys()) keys.add(key);
    }
    return keys;
  }
}

type Lists = { readonly [K in ObjectKind]: KindList };

/** What the store's snapshots say about each other (ClusterSnapshot.changes). */
class StoreChanges implements SnapshotChanges {
  constructor(readonly lists: Lists) {}

  since(earlier: ClusterSnapshot): SnapshotDelta | undefined {
    const from = earlier.changes;
    if (!(from instanceof StoreChanges)) return undefined;
    const pods = this.changed(from.lists.Pod, this.lists.Pod);
    const policies = this.changed(from.lists.NetworkPolicy, this.lists.NetworkPolicy);
    return pods && policies
      ? { pods: pods as Map<string, Pod | undefined>, policies: policies as Map<string, NetworkPolicy | undefined> }
      : undefined;
  }

  private changed(from: KindList, to: KindList): Map<string, Model | undefined> | undefined {
    const keys = from.keysUntil(to);
    if (!keys) return undefined;
    const out = new Map<string, Model | undefined>();
    for (const key of keys) out.set(key, to.valueOf(key));
    return out;
  }
}

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
  /**
   * Keys per kind in sorted order, except the last `unsorted[kind]` of them: new keys are appended and merged in
   * when the order is next needed. An initial list of 100,000 pods in no particular order is one sort, not
   * 100,000 insertions that each move half the array; a later change is one merge step, never a re-sort.
   */
  private readonly sorted: { [K in ObjectKind]: string[] } = {
    Namespace: [],
    Pod: [],
    NetworkPolicy: [],
    Node: [],
    ClusterNetworkPolicy: [],
  };
  private readonly unsorted = new Map<ObjectKind, number>();
  /** Per kind, the list handed out last; a new one only for a kind that changed, so unchanged kinds keep their arrays. */
  private latest: Lists | undefined;
  private readonly dirty = new Set<ObjectKind>(KINDS);
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
    this.remember(kind, key, old);
    this.maps[kind].set(key, value);
    if (old === undefined) {
      const keys = this.sorted[kind];
      const pending = this.unsorted.get(kind) ?? 0;
      // A list that arrives in key order (the API server's) stays sorted as it is appended.
      if (pending > 0 || (keys.length > 0 && keys[keys.length - 1]! > key)) this.unsorted.set(kind, pending + 1);
      keys.push(key);
    }
    return { kind, key, type: old === undefined ? 'add' : 'update' };
  }

  delete(kind: ObjectKind, key: string): ClusterChange | undefined {
    const old = this.maps[kind].get(key);
    if (old === undefined) return undefined;
    this.remember(kind, key, old);
    this.maps[kind].delete(key);
    const keys = this.sortedKeys(kind);
    keys.splice(lowerBound(keys, key), 1);
    return { kind, key, type: 'delete' };
  }

  snapshot(): ClusterSnapshot {
    if (this.cached) return this.cached;
    const previous = this.latest;
    const lists = {} as { [K in ObjectKind]: KindList };
    for (const kind of KINDS) {
      const kept = previous?.[kind];
      if (kept && !this.dirty.has(kind)) {
        lists[kind] = kept;
        continue;
      }
      const map = this.maps[kind];
      lists[kind] = new KindList(
        kind,
        () => this.sortedKeys(kind).map((k) => map.get(k)!),
        (k) => map.get(k),
      );
      if (kept) kept.next = lists[kind];
    }
    this.latest = lists;
    this.dirty.clear();
    this.cached = snapshotOf(lists, this.maps.ClusterNetworkPolicy.size > 0);
    return this.cached;
  }

  /** The kind's keys, all in order: the appended ones sorted and merged in. */
  private sortedKeys(kind: ObjectKind): string[] {
    const pending = this.unsorted.get(kind) ?? 0;
    if (pending === 0) return this.sorted[kind];
    this.unsorted.delete(kind);
    const keys = this.sorted[kind];
    if (pending <= 64) {
      // A change or a few: each moved to its place (a memory move, no comparison per key).
      for (const key of keys.splice(keys.length - pending).sort()) keys.splice(lowerBound(keys, key), 0, key);
      return keys;
    }
    const head = keys.slice(0, keys.length - pending);
    const tail = keys.slice(keys.length - pending).sort();
    const merged = new Array<string>(keys.length);
    let h = 0;
    let t = 0;
    for (let o = 0; o < merged.length; o++)
      merged[o] = t >= tail.length || (h < head.length && head[h]! < tail[t]!) ? head[h++]! : tail[t++]!;
    return (this.sorted[kind] = merged);
  }

  /** Before a change: the latest snapshot's list of this kind keeps the old value (if it has not yet kept one for the key). */
  private remember(kind: ObjectKind, key: string, old: Model | undefined): void {
    const list = this.latest?.[kind];
    if (list && !list.undo.has(key)) list.undo.set(key, old);
    this.dirty.add(kind);
    this.cached = undefined;
  }
}

/** A snapshot whose lists are built on first read (each at most once). */
function snapshotOf(lists: Lists, withClusterPolicies: boolean): ClusterSnapshot {
  const snapshot = {} as ClusterSnapshot;
  const field = (name: keyof ClusterSnapshot, kind: ObjectKind): void => {
    Object.defineProperty(snapshot, name, { enumerable: true, get: () => lists[kind].values() });
  };
  field('nodes', 'Node');
  field('namespaces', 'Namespace');
  field('pods', 'Pod');
  field('policies', 'NetworkPolicy');
  // Present only when there are some: a cluster without the CRD gives the same snapshots as before.
  if (withClusterPolicies) field('clusterPolicies', 'ClusterNetworkPolicy');
  // Not enumerable: a snapshot still compares (and prints) as its lists only.
  Object.defineProperty(snapshot, 'changes', { enumerable: false, value: new StoreChanges(lists) });
  return snapshot;
}

function lowerBound(keys: readonly string[], key: string): number {
  return lowerBoundBy(keys, key, (k) => k);
}

function lowerBoundBy<T>(items: readonly T[], key: string, keyOfItem: (item: T) => string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyOfItem(items[mid]!) < key) lo = mid + 1;
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
