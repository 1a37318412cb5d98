// What one pod costs in a daemon heap snapshot, for pods this node never selects and pods it does.
// A pod's own bytes: the model Pod object in the ObjectStore and everything only it holds (followed while
// every reference to an object comes from what is already counted: its IPs array, ports, strings of its
// own). Shared things are shared out: its labels object divided by the references to it (pods of one
// ReplicaSet share one, src/cluster/intern.ts), and each reference to the pod from a Map, Set or array
// costs that container's bytes divided by its number of references (a Map entry's slot).

import { HeapGraph } from './heap-kinds.js';
import type { HeapSnapshot } from './heap-snapshot.js';

export interface PodGroup {
  readonly name: string;
  readonly pods: number;
  /** Means per pod, bytes. */
  readonly own: number;
  readonly labels: number;
  readonly slots: number;
  readonly informer: number;
  /** Mean references to the model Pod object (store map, sorted arrays, selections, …). */
  readonly references: number;
  /** Mean `own` bytes by the Pod's property they hang from. */
  readonly fields: ReadonlyMap<string, number>;
}

export interface PodCosts {
  readonly storePods: number;
  readonly sample: number;
  readonly groups: PodGroup[];
}

/** Reverse edges (non-weak, non-shortcut), as CSR: sources of node i are from[start[i]..start[i+1]). */
function reverseIndex(g: HeapGraph): { start: Uint32Array; from: Uint32Array } {
  const n = g.s.nodeCount;
  const weak = g.edgeType('weak');
  const shortcut = g.edgeType('shortcut');
  const start = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++)
    g.forEdges(i, (t, _n, to) => {
      if (t !== weak && t !== shortcut) start[to + 1]!++;
    });
  for (let i = 0; i < n; i++) start[i + 1]! += start[i]!;
  const fill = start.slice(0, n);
  const from = new Uint32Array(start[n]!);
  for (let i = 0; i < n; i++)
    g.forEdges(i, (t, _n, to) => {
      if (t !== weak && t !== shortcut) from[fill[to]!++] = i;
    });
  return { start, from };
}

export function podCosts(s: HeapSnapshot, _owner: Int16Array, node: string, sample = 1000): PodCosts {
  const g = new HeapGraph(s);
  const rev = reverseIndex(g);
  const objectType = s.nodeTypes.indexOf('object');
  const shape = s.nodeTypes.indexOf('object shape');
  const prop = (i: number, name: string): number | undefined => {
    let found: number | undefined;
    g.forEdges(i, (t, n, to) => {
      if (found === undefined && g.edgeName(t, n) === name) found = to;
    });
    return found;
  };
  /** Objects a Map holds (keys and values), through its backing table. */
  const mapEntries = (map: number): number[] => {
    const out: number[] = [];
    const table = prop(map, 'table');
    if (table !== undefined) g.forEdges(table, (_t, _n, to) => void out.push(to));
    return out;
  };
  const isObject = (i: number): boolean => s.nodes[i * g.F] === objectType;

  // The model Pods: values of ObjectStore.maps.Pod.
  const storePods: number[] = [];
  const inSelection = new Set<number>();
  const informerValues: number[] = [];
  for (let i = 0; i < s.nodeCount; i++) {
    if (!isObject(i)) continue;
    const name = g.name(i);
    if (name === 'ObjectStore') {
      const maps = prop(i, 'maps');
      const podMap = maps === undefined ? undefined : prop(maps, 'Pod');
      if (podMap !== undefined) storePods.push(...mapEntries(podMap).filter(isObject));
    } else if (name === 'SelectionEntry') {
      const pods = prop(i, 'pods');
      if (pods !== undefined) for (const p of mapEntries(pods)) inSelection.add(p);
    } else if (name === 'ListWatch') {
      const path = prop(i, 'path');
      const objects = prop(i, 'objects');
      // client-node's cache: Map<namespace, Map<name, object>>.
      if (path !== undefined && g.name(path).endsWith('/pods') && objects !== undefined)
        for (const inner of mapEntries(objects).filter(isObject)) informerValues.push(...mapEntries(inner).filter(isObject));
    }
  }

  /**
   * The objects only `root` holds, and the slot bytes of the references into that set from outside it;
   * `fields` adds each object's bytes under the root's property it hangs from ('(object)' for the root).
   */
  const exclusive = (root: number, fields?: Map<string, number>): { bytes: number; slots: number; set: Set<number> } => {
    const set = new Set([root]);
    const hits = new Map<number, number>();
    const via = new Map<number, string>([[root, '(object)']]);
    const queue = [root];
    let bytes = 0;
    while (queue.length > 0) {
      const i = queue.pop()!;
      bytes += g.self(i);
      if (fields) fields.set(via.get(i)!, (fields.get(via.get(i)!) ?? 0) + g.self(i));
      g.forEdges(i, (t, n, to) => {
        if (set.has(to) || s.nodes[to * g.F] === shape || t === g.edgeType('weak') || t === g.edgeType('shortcut')) return;
        const h = (hits.get(to) ?? 0) + 1;
        hits.set(to, h);
        if (h === rev.start[to + 1]! - rev.start[to]!) {
          set.add(to);
          queue.push(to);
          via.set(to, i === root ? (g.edgeName(t, n) ?? '(elements)') : via.get(i)!);
        }
      });
    }
    let slots = 0;
    for (const i of set)
      for (let k = rev.start[i]!; k < rev.start[i + 1]!; k++) {
        const holder = rev.from[k]!;
        if (set.has(holder)) continue;
        const edges = (s.firstEdge[holder + 1]! - s.firstEdge[holder]!) / g.E;
        slots += g.self(holder) / Math.max(1, edges);
      }
    return { bytes, slots, set };
  };

  const groups = new Map<string, number[]>();
  for (const p of storePods) {
    const nodeName = prop(p, 'nodeName');
    const local = nodeName !== undefined && g.name(nodeName) === node;
    const kind = local
      ? `on ${node}`
      : inSelection.has(p)
        ? 'selected here (in ≥ 1 selection), other node'
        : 'never selected here, other node';
    groups.set(kind, [...(groups.get(kind) ?? []), p]);
  }
  const informer =
    informerValues.length === 0
      ? 0
      : informerValues.reduce((sum, v) => {
          const e = exclusive(v);
          return sum + e.bytes + e.slots;
        }, 0) / informerValues.length;

  const out: PodGroup[] = [];
  for (const [name, pods] of [...groups].sort((a, b) => b[1].length - a[1].length)) {
    const step = Math.max(1, Math.floor(pods.length / sample));
    const picked = pods.filter((_, i) => i % step === 0).slice(0, sample);
    let own = 0;
    let labels = 0;
    let slots = 0;
    let references = 0;
    const fields = new Map<string, number>();
    for (const p of picked) {
      const e = exclusive(p, fields);
      own += e.bytes;
      slots += e.slots;
      references += rev.start[p + 1]! - rev.start[p]!;
      const l = prop(p, 'labels');
      if (l !== undefined && !e.set.has(l)) {
        const le = exclusive(l);
        labels += (le.bytes + le.slots) / Math.max(1, rev.start[l + 1]! - rev.start[l]!);
      }
    }
    const n = Math.max(1, picked.length);
    for (const [field, bytes] of fields) fields.set(field, bytes / n);
    out.push({ name, pods: pods.length, own: own / n, labels: labels / n, slots: slots / n, informer, references: references / n, fields });
  }
  return { storePods: storePods.length, sample, groups: out };
}
