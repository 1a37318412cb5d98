// A V8 .heapsnapshot file read without JSON.parse of the whole text: at 50,000 pods a snapshot is a few
// hundred MB, more than one JS string may hold. The file is `{"snapshot":{meta},"nodes":[ints],
// "edges":[ints],…,"strings":[…]}`; the two integer arrays are parsed byte by byte into typed arrays
// (sized from the header's counts), and each string of the string table is decoded on its own.

import { closeSync, openSync, readSync } from 'node:fs';

export interface HeapSnapshot {
  readonly nodeFields: number;
  readonly edgeFields: number;
  readonly nodeTypes: readonly string[];
  readonly edgeTypes: readonly string[];
  /** Flat: nodeFields integers per node (type, name, id, self_size, edge_count, …). */
  readonly nodes: Uint32Array;
  /** Flat: type, name_or_index, to_node (an offset into `nodes`) per edge, in node order. */
  readonly edges: Uint32Array;
  readonly strings: readonly string[];
  readonly nodeCount: number;
  /** Offset into `edges` of each node's first edge (nodeCount + 1 entries). */
  readonly firstEdge: Uint32Array;
}

interface Meta {
  node_fields: string[];
  node_types: [string[], ...unknown[]];
  edge_fields: string[];
  edge_types: [string[], ...unknown[]];
}

/** Sequential reader over the file in 4 MiB chunks. */
class Bytes {
  private readonly buf = Buffer.allocUnsafe(4 << 20);
  private len = 0;
  private pos = 0;
  private readonly fd: number;

  constructor(file: string) {
    this.fd = openSync(file, 'r');
  }

  /** The next byte, or -1 at the end of the file. */
  next(): number {
    if (this.pos === this.len) {
      this.len = readSync(this.fd, this.buf, 0, this.buf.length, null);
      this.pos = 0;
      if (this.len === 0) return -1;
    }
    return this.buf[this.pos++]!;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Reads up to and including `marker` (ASCII), returning what came before it. */
function readUntil(bytes: Bytes, marker: string): string {
  const chunks: number[] = [];
  const m = Buffer.from(marker, 'latin1');
  let matched = 0;
  for (;;) {
    const b = bytes.next();
    if (b < 0) throw new Error(`heap snapshot: "${marker}" not found`);
    chunks.push(b);
    if (b === m[matched]) {
      matched++;
      if (matched === m.length) return Buffer.from(chunks.slice(0, chunks.length - m.length)).toString('utf8');
    } else matched = b === m[0] ? 1 : 0;
  }
}

/** Parses unsigned integers separated by commas/whitespace until `]`. */
function readInts(bytes: Bytes, out: Uint32Array): number {
  let n = 0;
  let value = 0;
  let inNumber = false;
  for (;;) {
    const b = bytes.next();
    if (b >= 48 && b <= 57) {
      value = value * 10 + (b - 48);
      inNumber = true;
      continue;
    }
    if (inNumber) {
      if (n >= out.length) throw new Error('heap snapshot: more integers than the header announced');
      out[n++] = value;
      value = 0;
      inNumber = false;
    }
    if (b === 93 /* ] */) return n;
    if (b < 0) throw new Error('heap snapshot: truncated integer array');
  }
}

function readStrings(bytes: Bytes): string[] {
  const strings: string[] = [];
  let raw: number[] = [];
  let inString = false;
  let escaped = false;
  let hasEscape = false;
  for (;;) {
    const b = bytes.next();
    if (b < 0) throw new Error('heap snapshot: truncated string table');
    if (!inString) {
      if (b === 34 /* " */) {
        inString = true;
        raw = [];
        hasEscape = false;
      } else if (b === 93) return strings;
      continue;
    }
    if (escaped) {
      escaped = false;
      raw.push(b);
      continue;
    }
    if (b === 92 /* \ */) {
      escaped = true;
      hasEscape = true;
      raw.push(b);
      continue;
    }
    if (b === 34) {
      const text = Buffer.from(raw).toString('utf8');
      strings.push(hasEscape ? safeUnescape(text) : text);
      inString = false;
      continue;
    }
    raw.push(b);
  }
}

function safeUnescape(text: string): string {
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    return text; // V8 writes lone surrogates as \uD8xx; keep the raw form (only names are needed)
  }
}

export function readHeapSnapshot(file: string): HeapSnapshot {
  const bytes = new Bytes(file);
  try {
    const header = readUntil(bytes, '"nodes":[');
    const { snapshot } = JSON.parse(`${header.replace(/,\s*$/, '')}}`) as {
      snapshot: { meta: Meta; node_count: number; edge_count: number };
    };
    const { meta } = snapshot;
    const nodeFields = meta.node_fields.length;
    const edgeFields = meta.edge_fields.length;
    const nodes = new Uint32Array(snapshot.node_count * nodeFields);
    if (readInts(bytes, nodes) !== nodes.length) throw new Error('heap snapshot: node count differs from the header');
    readUntil(bytes, '"edges":[');
    const edges = new Uint32Array(snapshot.edge_count * edgeFields);
    if (readInts(bytes, edges) !== edges.length) throw new Error('heap snapshot: edge count differs from the header');
    readUntil(bytes, '"strings":[');
    const strings = readStrings(bytes);
    const edgeCountField = meta.node_fields.indexOf('edge_count');
    const firstEdge = new Uint32Array(snapshot.node_count + 1);
    for (let i = 0, e = 0; i < snapshot.node_count; i++) {
      firstEdge[i] = e;
      e += nodes[i * nodeFields + edgeCountField]! * edgeFields;
      firstEdge[i + 1] = e;
    }
    return {
      nodeFields,
      edgeFields,
      nodeTypes: meta.node_types[0],
      edgeTypes: meta.edge_types[0],
      nodes,
      edges,
      strings,
      nodeCount: snapshot.node_count,
      firstEdge,
    };
  } finally {
    bytes.close();
  }
}
