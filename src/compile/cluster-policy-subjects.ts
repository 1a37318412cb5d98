// Which local pods each ClusterNetworkPolicy selects (its subjects), kept from one compile to the next as
// NetworkPolicy targets are (policy-targets.ts): per CNP and local namespace, the selected pods are worked
// out again only when the CNP's subject, that namespace's local pods or its labels changed, so a pod change
// costs one namespace per CNP, not every local pod. A CNP's list is replaced (a new array) only when its
// pods changed, so resolution and the named-port sets built from it keep what they made.
//
// "host-networked pods are not included in subject selection": local pods are never host-networked.

import type { ClusterNetworkPolicy, Labels, Pod } from '../model/index.js';
import type { ClusterState } from './cluster-state.js';
import { sameData } from './memo.js';
import { selectorMatches } from './selectors.js';

type Subject = ClusterNetworkPolicy['subject'];

interface NamespaceInputs {
  /** The namespace's local pods (the state hands out the same array until one of them changes). */
  readonly local: readonly Pod[];
  readonly labels: Labels;
}

interface Entry {
  subject: Subject;
  /** Per local namespace, the pods of it the subject selects; namespaces with none are left out. */
  readonly byNamespace: Map<string, readonly Pod[]>;
  /** All of them, in local pod order (namespace, then name). */
  pods: readonly Pod[];
}

type StateView = Pick<ClusterState, 'localPods' | 'localPodsIn' | 'namespaceLabels'>;

const NO_PODS: readonly Pod[] = [];

export class ClusterPolicySubjects {
  private readonly entries = new Map<string, Entry>();
  private namespaces = new Map<string, NamespaceInputs>();
  private localPods: readonly Pod[] | undefined;
  private localNamespaces: readonly string[] = [];

  /** Call once per compile with every CNP. */
  update(cnps: readonly ClusterNetworkPolicy[], state: StateView): void {
    if (cnps.length === 0) {
      // Most clusters have none: nothing to keep, and the first CNP to come looks at every namespace anyway.
      this.entries.clear();
      this.namespaces.clear();
      this.localPods = undefined;
      return;
    }
    const changed = this.changedNamespaces(state);
    const seen = new Set<string>();
    for (const cnp of cnps) {
      seen.add(cnp.name);
      let entry = this.entries.get(cnp.name);
      const fresh = entry === undefined || (entry.subject !== cnp.subject && !sameData(entry.subject, cnp.subject));
      if (!fresh && changed.length === 0) continue;
      if (entry === undefined) this.entries.set(cnp.name, (entry = { subject: cnp.subject, byNamespace: new Map(), pods: NO_PODS }));
      let moved = fresh;
      if (fresh) {
        entry.subject = cnp.subject;
        entry.byNamespace.clear();
      }
      for (const ns of fresh ? this.localNamespaces : changed) {
        const inputs = this.namespaces.get(ns);
        const now = inputs ? selected(cnp.subject, inputs) : NO_PODS;
        const was = entry.byNamespace.get(ns) ?? NO_PODS;
        if (!fresh && sameItems(was, now)) continue;
        moved = true;
        if (now.length > 0) entry.byNamespace.set(ns, now);
        else entry.byNamespace.delete(ns);
      }
      if (!moved) continue;
      const pods = this.localNamespaces.flatMap((ns) => entry.byNamespace.get(ns) ?? NO_PODS);
      if (!sameItems(entry.pods, pods)) entry.pods = pods;
    }
    for (const name of this.entries.keys()) if (!seen.has(name)) this.entries.delete(name);
  }

  /** The CNP's local subjects: the same array while they are the same pods. */
  of(name: string): readonly Pod[] {
    return this.entries.get(name)?.pods ?? NO_PODS;
  }

  /** Local namespaces whose pods or labels changed since the last call, and those no longer local. */
  private changedNamespaces(state: StateView): string[] {
    const local = state.localPods;
    if (local !== this.localPods) {
      this.localPods = local;
      // Local pods are sorted by namespace: each namespace's first pod starts a new run.
      this.localNamespaces = local.filter((p, i) => i === 0 || local[i - 1]!.namespace !== p.namespace).map((p) => p.namespace);
    }
    const changed: string[] = [];
    const next = new Map<string, NamespaceInputs>();
    for (const ns of this.localNamespaces) {
      const was = this.namespaces.get(ns);
      const now = { local: state.localPodsIn(ns), labels: state.namespaceLabels(ns) };
      // A namespace the cluster does not list gets fresh default labels on every call: compared by content.
      const same = was !== undefined && was.local === now.local && (was.labels === now.labels || sameData(was.labels, now.labels));
      next.set(ns, same ? was : now);
      if (!same) changed.push(ns);
    }
    for (const ns of this.namespaces.keys()) if (!next.has(ns)) changed.push(ns);
    this.namespaces = next;
    return changed;
  }
}

/** The pods of one namespace a subject selects; the namespace's own array when it selects all of them. */
function selected(subject: Subject, inputs: NamespaceInputs): readonly Pod[] {
  if (!selectorMatches(subject.namespaceSelector, inputs.labels)) return NO_PODS;
  if (subject.kind === 'namespaces') return inputs.local;
  return inputs.local.filter((p) => selectorMatches(subject.podSelector, p.labels));
}

const sameItems = <T>(a: readonly T[], b: readonly T[]): boolean => a === b || (a.length === b.length && a.every((v, i) => v === b[i]));
