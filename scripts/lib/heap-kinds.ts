// A daemon heap snapshot by what the bytes are for. Each object is counted once, in the first category (in
// table order) that reaches it from that category's holders: e.g. a label object is "label objects" even
// though the store's Pod, the selections and the compiler all point at it, and a Pod that a selection
// change journal holds is "journals" only when the store no longer holds it (a replaced version).
// Data categories walk data only (not closures, code or hidden classes); module categories start at the
// module's functions (closure → shared info → script, source text, class statics, module context).

import type { HeapSnapshot } from './heap-snapshot.js';

export interface Category {
  readonly name: string;
  /** Holders: objects whose constructor is `holder` ('*' = any object), edges named `edges` (all when undefined). */
  readonly seeds: readonly { holder: string; edges?: readonly string[]; edgeType?: string }[];
  /** For module categories: functions whose script URL matches. */
  readonly script?: (url: string) => boolean;
}

export const DAEMON_CATEGORIES: readonly Category[] = [
  { name: 'label objects (pods, namespaces; interner)', seeds: [{ holder: '*', edges: ['labels'] }, { holder: 'LabelInterner' }] },
  { name: 'informer caches (client-node ListWatch)', seeds: [{ holder: 'ListWatch', edges: ['objects', 'indexCache'] }] },
  { name: 'object store (model Pods, policies, …)', seeds: [{ holder: 'ObjectStore' }] },
  { name: 'selection change journals (old pod versions)', seeds: [{ holder: 'SelectionEntry', edges: ['journal'] }] },
  { name: 'selector memberships (ClusterState)', seeds: [{ holder: 'ClusterState' }, { holder: 'SelectionEntry' }] },
  { name: 'compiler caches + desired state', seeds: [{ holder: 'Compiler' }, { holder: 'Syncer', edges: ['lastDesired'] }] },
  { name: 'kernel tracker (Syncer: programmed, last read)', seeds: [{ holder: 'Syncer' }] },
  { name: 'daemon pod-by-IP index (flow logs)', seeds: [{ holder: '*', edges: ['podsByIp'], edgeType: 'context' }] },
  { name: 'client-node module: code, generated models', seeds: [], script: (u) => u.includes('/@kubernetes/client-node/') },
  { name: 'netfence code (dist/)', seeds: [], script: (u) => u.startsWith('file://') && !u.includes('/node_modules/') },
  { name: 'other dependencies: code', seeds: [], script: (u) => u.includes('/node_modules/') },
  { name: 'node internals: code', seeds: [], script: () => true },
];

export interface CategoryRow {
  readonly name: string;
  objects: number;
  bytes: number;
  stringBytes: number;
}

export interface HeapKinds {
  readonly total: number;
  readonly rows: CategoryRow[];
  /** Unclaimed objects: "other", by node type. */
  readonly other: CategoryRow[];
  /** Self size by constructor/kind over the whole heap, largest first. */
  readonly byConstructor: { name: string; count: number; bytes: number }[];
  readonly owner: Int16Array;
}

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);
const CODE_TYPES = new Set(['code', 'closure', 'object shape']);

export class HeapGraph {
  readonly F: number;
  readonly E: number;
  private readonly typeIdx: Record<string, number>;
  private readonly edgeIdx: Record<string, number>;

  constructor(readonly s: HeapSnapshot) {
    this.F = s.nodeFields;
    this.E = s.edgeFields;
    this.typeIdx = Object.fromEntries(s.nodeTypes.map((t, i) => [t, i]));
    this.edgeIdx = Object.fromEntries(s.edgeTypes.map((t, i) => [t, i]));
  }

  type(i: number): string {
    return this.s.nodeTypes[this.s.nodes[i * this.F]!]!;
  }
  isType(i: number, t: string): boolean {
    return this.s.nodes[i * this.F] === this.typeIdx[t];
  }
  name(i: number): string {
    return this.s.strings[this.s.nodes[i * this.F + 1]!]!;
  }
  self(i: number): number {
    return this.s.nodes[i * this.F + 3]!;
  }
  /** Calls `f(edgeType, edgeName, target)` for each outgoing edge. */
  forEdges(i: number, f: (type: number, name: number, to: number) => void): void {
    const { edges, firstEdge } = this.s;
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += this.E) f(edges[e]!, edges[e + 1]!, edges[e + 2]! / this.F);
  }
  edgeType(t: string): number {
    return this.edgeIdx[t] ?? -1;
  }
  /** The edge's name, for named (not element/hidden) edges. */
  edgeName(type: number, name: number): string | undefined {
    return type === this.edgeIdx.element || type === this.edgeIdx.hidden ? undefined : this.s.strings[name];
  }
  /** A function's script URL (closure → shared → script_or_debug_info), or undefined. */
  scriptOf(closure: number): string | undefined {
    let script: string | undefined;
    this.forEdges(closure, (t, n, to) => {
      if (this.edgeName(t, n) !== 'shared') return;
      this.forEdges(to, (t2, n2, sc) => {
        if (this.edgeName(t2, n2) === 'script_or_debug_info' || this.edgeName(t2, n2) === 'script') script = this.name(sc);
      });
    });
    return script;
  }
}

export function classifyHeap(s: HeapSnapshot, categories: readonly Category[] = DAEMON_CATEGORIES): HeapKinds {
  const g = new HeapGraph(s);
  const owner = new Int16Array(s.nodeCount).fill(-1);
  const weak = g.edgeType('weak');
  const shortcut = g.edgeType('shortcut');
  const context = g.edgeType('context');
  const objectType = s.nodeTypes.indexOf('object');
  const closureType = s.nodeTypes.indexOf('closure');
  const codeTypes = new Set([...CODE_TYPES].map((t) => s.nodeTypes.indexOf(t)));
  const synthetic = s.nodeTypes.indexOf('synthetic');
  const scriptCache = new Map<number, string>();
  const scriptOf = (i: number): string => {
    let u = scriptCache.get(i);
    if (u === undefined) scriptCache.set(i, (u = g.scriptOf(i) ?? ''));
    return u;
  };

  const walk = (cat: number, start: number[], dataOnly: boolean, sameModule?: (url: string) => boolean): void => {
    const stack = start.filter((i) => owner[i] === -1);
    for (const i of stack) owner[i] = cat;
    while (stack.length > 0) {
      const i = stack.pop()!;
      g.forEdges(i, (t, n, to) => {
        if (owner[to] !== -1 || t === weak || t === shortcut) return;
        const nodeType = s.nodes[to * g.F]!;
        if (nodeType === synthetic) return;
        if (dataOnly && codeTypes.has(nodeType)) return;
        if (g.edgeName(t, n) === '__proto__') return;
        // A module category stops at another module's functions.
        if (!dataOnly && nodeType === closureType && !sameModule?.(scriptOf(to))) return;
        owner[to] = cat;
        stack.push(to);
      });
    }
  };

  categories.forEach((cat, c) => {
    if (cat.script) {
      const start: number[] = [];
      for (let i = 0; i < s.nodeCount; i++)
        if (s.nodes[i * g.F] === closureType && owner[i] === -1 && cat.script(scriptOf(i))) start.push(i);
      walk(c, start, false, cat.script);
      return;
    }
    const start: number[] = [];
    for (const seed of cat.seeds) {
      const wantType = seed.edgeType === undefined ? undefined : g.edgeType(seed.edgeType);
      const wantEdges = seed.edges ? new Set(seed.edges.map((e) => s.strings.indexOf(e)).filter((x) => x >= 0)) : undefined;
      if (wantEdges?.size === 0) continue;
      for (let i = 0; i < s.nodeCount; i++) {
        if (seed.holder === '*' ? seed.edgeType === undefined && s.nodes[i * g.F] !== objectType : g.name(i) !== seed.holder) continue;
        if (seed.holder !== '*' && s.nodes[i * g.F] !== objectType) continue;
        g.forEdges(i, (t, n, to) => {
          if (t === weak || t === shortcut || (wantType !== undefined && t !== wantType)) return;
          if (wantType === undefined && t === context) return;
          if (wantEdges && !wantEdges.has(n)) return;
          if (!wantEdges && g.edgeName(t, n) === '__proto__') return;
          if (codeTypes.has(s.nodes[to * g.F]!)) return;
          start.push(to);
        });
      }
    }
    walk(c, start, true);
  });

  const rows: CategoryRow[] = categories.map((c) => ({ name: c.name, objects: 0, bytes: 0, stringBytes: 0 }));
  const otherByType = new Map<string, CategoryRow>();
  const byCtor = new Map<string, { name: string; count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < s.nodeCount; i++) {
    const size = g.self(i);
    total += size;
    const type = g.type(i);
    const isString = STRING_TYPES.has(type);
    const o = owner[i]!;
    let row = o >= 0 ? rows[o]! : undefined;
    if (!row) {
      const kind = isString
        ? 'strings'
        : CODE_TYPES.has(type) || g.name(i).startsWith('system /')
          ? 'code, shapes, V8 internals'
          : `${type}s`;
      row = otherByType.get(kind);
      if (!row) otherByType.set(kind, (row = { name: `other: ${kind}`, objects: 0, bytes: 0, stringBytes: 0 }));
    }
    row.objects++;
    row.bytes += size;
    if (isString) row.stringBytes += size;
    const ctor = type === 'object' || type === 'closure' || type === 'hidden' || type === 'code' ? `${g.name(i)} (${type})` : `(${type})`;
    let c = byCtor.get(ctor);
    if (!c) byCtor.set(ctor, (c = { name: ctor, count: 0, bytes: 0 }));
    c.count++;
    c.bytes += size;
  }
  return {
    total,
    rows,
    other: [...otherByType.values()].sort((a, b) => b.bytes - a.bytes),
    byConstructor: [...byCtor.values()].sort((a, b) => b.bytes - a.bytes),
    owner,
  };
}
