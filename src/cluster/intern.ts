// One shared object per distinct label set. The pods of a ReplicaSet, Job or DaemonSet carry the same
// labels (pod-template-hash included), and a cluster of 50,000 pods has a few thousand distinct sets:
// sharing them makes a pod cost its own fields, not a copy of its labels. Model objects are immutable,
// so sharing is safe. Entries are held weakly: a label set no pod uses any more is collected, and its
// entry goes with it.

import type { Labels } from '../model/index.js';

export class LabelInterner {
  private readonly byKey = new Map<string, WeakRef<Labels>>();
  private readonly cleanup = new FinalizationRegistry<string>((key) => {
    if (this.byKey.get(key)?.deref() === undefined) this.byKey.delete(key);
  });

  /** The shared object equal to `labels` (same keys in the same order, same values); `labels` if new. */
  intern(labels: Labels): Labels {
    const key = JSON.stringify(labels);
    const hit = this.byKey.get(key)?.deref();
    if (hit) return hit;
    this.byKey.set(key, new WeakRef(labels));
    this.cleanup.register(labels, key);
    return labels;
  }

  /** Distinct label sets held (tests, diagnostics). */
  get size(): number {
    return this.byKey.size;
  }
}
