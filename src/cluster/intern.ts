// One shared object per distinct label set, and per pod owner. The pods of a ReplicaSet, Job or DaemonSet
// carry the same labels (pod-template-hash included) and the same owner, and a cluster of 50,000 pods has a
// few thousand distinct of each: sharing them makes a pod cost its own fields, not copies of its labels and
// its owner's name. Model objects are immutable, so sharing is safe. Entries are held weakly: a label set or
// owner no pod uses any more is collected, and its entry goes with it.

import type { Labels, PodOwner } from '../model/index.js';

class WeakInterner<T extends object> {
  private readonly byKey = new Map<string, WeakRef<T>>();
  private readonly cleanup = new FinalizationRegistry<string>((key) => {
    if (this.byKey.get(key)?.deref() === undefined) this.byKey.delete(key);
  });

  /** The shared object of `key`; `make()`'s (remembered) if there is none. */
  protected share(key: string, make: () => T): T {
    const hit = this.byKey.get(key)?.deref();
    if (hit) return hit;
    const value = make();
    this.byKey.set(key, new WeakRef(value));
    this.cleanup.register(value, key);
    return value;
  }

  /** Distinct objects held (tests, diagnostics). */
  get size(): number {
    return this.byKey.size;
  }
}

export class LabelInterner extends WeakInterner<Labels> {
  /** The label set interned last: the pods of one workload come one after another in a list. */
  private last: WeakRef<Labels> | undefined;

  /** The shared object equal to `labels` (same keys in the same order, same values); `labels` if new. */
  intern(labels: Labels): Labels {
    const last = this.last?.deref();
    if (last !== undefined && sameLabels(last, labels)) return last;
    const shared = this.share(JSON.stringify(labels), () => labels);
    this.last = new WeakRef(shared);
    return shared;
  }
}

/** The same keys in the same order with the same values: what equal JSON.stringify texts of two label sets mean. */
function sameLabels(a: Labels, b: Labels): boolean {
  const keys = Object.keys(a);
  const others = Object.keys(b);
  if (keys.length !== others.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== others[i] || a[keys[i]!] !== b[keys[i]!]) return false;
  return true;
}

export class OwnerInterner extends WeakInterner<PodOwner> {
  /** The shared `{ kind, name }`. */
  intern(kind: string, name: string): PodOwner {
    return this.share(`${kind}/${name}`, () => ({ kind, name }));
  }
}

/** What slimming keeps of a pod's controller reference, one array per owner (the informer's cache holds every pod). */
export class ControllerRefInterner extends WeakInterner<readonly Readonly<Record<string, unknown>>[]> {
  intern(kind: string, name: string): readonly Readonly<Record<string, unknown>>[] {
    return this.share(`${kind}/${name}`, () => Object.freeze([Object.freeze({ kind, name, controller: true })]));
  }
}
