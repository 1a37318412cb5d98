// Manifest files → ClusterSnapshot (the `--resources` mode and the one-shot commands).
//
// Paths are files or directories (walked recursively, *.yaml/*.yml/*.json, sorted so two runs
// load the same snapshot). Each file may hold many YAML documents; `kind: List` and `*List` kinds are
// expanded. A malformed document is reported as an error Problem named `<file>#<docIndex>` (0-based)
// and left out of the snapshot. NetworkPolicies with schema errors are kept (with their `problems`,
// which the compiler reports), because dropping one would open traffic.
//
// Any error Problem in `problems` means the source was NOT read completely: something it holds is
// missing from the snapshot. Callers must not program such a snapshot in place of a complete one
// (`incompleteRead`): the one-shot commands refuse, the daemon keeps the last complete read of the file.
// Besides broken documents this covers a missing or unreadable path, a directory with no manifest
// file, a dangling manifest symlink (a ConfigMap volume mid-swap), an empty (0-byte) file and a file
// that changed while it was read (both: caught mid-write), and a file past the size limits (one file,
// or the total one read loads): parsing text costs many times its size in memory, so an oversized file
// is refused before it is read rather than take the process down. A file holding only comments or `---`
// is read as deliberately empty; so is an empty `kind: List`.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Document, LineCounter } from 'yaml';
import {
  DEFAULT_MANIFEST_LIMITS,
  type ClusterNetworkPolicy,
  type ClusterNode,
  type ClusterSnapshot,
  type ManifestLimits,
  type Namespace,
  type NetworkPolicy,
  type Pod,
  type Problem,
} from '../model/index.js';
import { convert, objectName } from './convert.js';
import { isObjectKind, type ObjectKind } from './object-kind.js';

export interface LoadedManifests {
  readonly snapshot: ClusterSnapshot;
  /** Skipped documents and warnings. Problems of kept policies travel on the policy instead. */
  readonly problems: readonly Problem[];
  /** Every file that was read, in load order (the manifest source watches these). */
  readonly files: readonly string[];
}

// The YAML parser is loaded on first use: a JSON dump never needs it (~20 ms of every command start).
const yaml = (): typeof Yaml => createRequire(import.meta.url)('yaml') as typeof Yaml;

const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

const API_VERSIONS: Readonly<Record<ObjectKind, string>> = {
  Namespace: 'v1',
  Pod: 'v1',
  Node: 'v1',
  NetworkPolicy: 'networking.k8s.io/v1',
  ClusterNetworkPolicy: 'policy.networking.k8s.io/v1alpha2',
};

export type { ManifestLimits } from '../model/index.js';

export function loadManifests(paths: readonly string[], limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): LoadedManifests {
  const collector = new Collector();
  const files: string[] = [];
  for (const path of paths) files.push(...pathFiles(path, collector));
  const budget = readBudget(limits);
  for (const file of files) loadFile(file, collector, budget);
  return { snapshot: collector.snapshot(), problems: collector.problems, files };
}

/** What one read (every given path) may still load; each file read takes its size from it. */
export interface ReadBudget {
  readonly limits: ManifestLimits;
  used: number;
}

export const readBudget = (limits: ManifestLimits = DEFAULT_MANIFEST_LIMITS): ReadBudget => ({ limits, used: 0 });

/** Why a file of `size` bytes may not be read within the budget; undefined when it may (and then it is charged). */
function overBudget(size: number, budget: ReadBudget): string | undefined {
  const { maxFileBytes, maxTotalBytes } = budget.limits;
  if (size > maxFileBytes) {
    return `is ${formatBytes(size)}, above the limit of ${formatBytes(maxFileBytes)} for one manifest file (manifestMaxFileBytes); not read`;
  }
  if (budget.used + size > maxTotalBytes) {
    return (
      `would bring the manifests of this read to ${formatBytes(budget.used + size)}, above the limit of ` +
      `${formatBytes(maxTotalBytes)} for all of them together (manifestMaxTotalBytes); not read`
    );
  }
  budget.used += size;
  return undefined;
}

const formatBytes = (n: number): string => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB (${n} bytes)` : `${n} bytes`);

/** The errors among `problems`: each one means part of the source is missing from the snapshot. */
export function incompleteRead(problems: readonly Problem[]): Problem[] {
  return problems.filter((p) => p.severity === 'error');
}

/** The manifest files of one given path; a path that holds none is an error (a typo, an unmounted volume). */
export function pathFiles(path: string, collector: { problem(p: Problem): void }): string[] {
  let failed = false;
  const files = manifestFiles(path, {
    problem: (p) => {
      failed = true;
      collector.problem(p);
    },
  });
  if (files.length === 0 && !failed) {
    collector.problem({
      object: path,
      field: '(file)',
      message: 'holds no manifest file (*.yaml, *.yml, *.json); to mean "no objects", give a file with an empty `kind: List`',
      severity: 'error',
    });
  }
  return files;
}

/** Reads one manifest file into the collector; a file caught mid-write is an error, not an empty file. */
export function loadFile(file: string, collector: Collector, budget: ReadBudget = readBudget()): void {
  const fail = (message: string) => collector.problem({ object: file, field: '(file)', message, severity: 'error' });
  let bytes: Buffer;
  try {
    const before = statSync(file);
    const refused = overBudget(before.size, budget);
    if (refused !== undefined) return fail(refused);
    bytes = readFileSync(file);
    const after = statSync(file);
    if (bytes.length !== before.size || before.size !== after.size || before.mtimeMs !== after.mtimeMs) {
      return fail('changed while being read (caught mid-write); write manifests to a temporary name and rename them into place');
    }
  } catch (err) {
    return fail(`cannot read: ${errorMessage(err)}`);
  }
  const text = bytes.toString('utf8');
  if (text.trim() === '') return fail('is empty (caught mid-write?); to mean "no objects", write an empty `kind: List`');
  loadText(file, text, collector);
}

/** The manifest files under a path. Hidden entries are skipped: a ConfigMap volume's `..data` links
 * and timestamped `..2024_…` directories would otherwise load every file twice. */
export function manifestFiles(path: string, collector?: { problem(p: Problem): void }): string[] {
  let stat;
  try {
    stat = statSync(path);
  } catch (err) {
    collector?.problem({ object: path, field: '(file)', message: `cannot read: ${errorMessage(err)}`, severity: 'error' });
    return [];
  }
  if (!stat.isDirectory()) return [path];
  let names: string[];
  try {
    names = readdirSync(path);
  } catch (err) {
    collector?.problem({ object: path, field: '(file)', message: `cannot read: ${errorMessage(err)}`, severity: 'error' });
    return [];
  }
  return names
    .filter((name) => !name.startsWith('.'))
    .sort()
    .flatMap((name) => {
      const child = join(path, name);
      const manifest = EXTENSIONS.has(extname(name).toLowerCase());
      try {
        if (statSync(child).isDirectory()) return manifestFiles(child, collector);
      } catch {
        // A dangling symlink. Named like a manifest it is one that cannot be read right now (a ConfigMap
        // volume swapping `..data`): loading it reports the error instead of silently dropping its objects.
        return manifest ? [child] : [];
      }
      return manifest ? [child] : [];
    });
}

/** Parses one file's text (YAML or JSON, multi-document) into the collector. Exported for tests. */
export function loadText(file: string, text: string, collector: Collector): void {
  if (loadJsonText(file, text, collector)) return;
  const { LineCounter, parseAllDocuments } = yaml();
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines });
  // parseAllDocuments returns an EmptyStream (not an array) for a file with no documents.
  if (!Array.isArray(docs)) return;
  docs.forEach((doc, index) => {
    const object = `${file}#${index}`;
    const fail = (field: string, message: string, line?: number) =>
      collector.problem({ object, field, message: line ? `${message} (line ${line})` : message, severity: 'error' });
    const firstError = doc.errors[0];
    if (firstError) return fail('(document)', firstError.message.split(':\n')[0] ?? firstError.message);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 1000 });
    } catch (err) {
      return fail('(document)', errorMessage(err));
    }
    if (value === null || value === undefined) return; // an empty document (comments only, trailing ---)
    const lineOf = (field: string) => lineOfField(doc, lines, field);
    if (!isRecord(value)) return fail('(root)', 'a document must be a Kubernetes object (a mapping)', lineOf('(root)'));
    loadObject(value, '', -1, object, collector, (field, message) => fail(field, message, lineOf(field)));
  });
}

/**
 * The fast path for JSON (a `kubectl get -o json` dump is JSON, and the YAML parser takes seconds over
 * megabytes of it): text that opens with `{` or `[` and is valid JSON is one document, read with
 * JSON.parse. Everything else — including JSON with a syntax error — goes through the YAML parser, which
 * reads JSON too and says where the error is. Line numbers of field problems come from the YAML parser
 * as well, run only when a problem is found. Returns false when the text is not taken.
 */
function loadJsonText(file: string, text: string, collector: Collector): boolean {
  const start = /^\uFEFF?\s*/.exec(text)?.[0].length ?? 0;
  const first = text.charCodeAt(start);
  if (first !== 0x7b /* { */ && first !== 0x5b /* [ */) return false;
  let value: unknown;
  try {
    value = JSON.parse(start > 0 ? text.slice(start) : text);
  } catch {
    return false;
  }
  const object = `${file}#0`;
  let located: { doc: Document; lines: LineCounter } | undefined;
  const lineOf = (field: string): number | undefined => {
    if (!located) {
      const { LineCounter, parseAllDocuments } = yaml();
      const lines = new LineCounter();
      const [doc] = parseAllDocuments(text, { lineCounter: lines }) as Document[];
      if (!doc) return undefined;
      located = { doc, lines };
    }
    return lineOfField(located.doc, located.lines, field);
  };
  const fail = (field: string, message: string) => {
    const line = lineOf(field);
    collector.problem({ object, field, message: line ? `${message} (line ${line})` : message, severity: 'error' });
  };
  if (!isRecord(value)) fail('(root)', 'a document must be a Kubernetes object (a mapping)');
  else loadObject(value, '', -1, object, collector, fail);
  return true;
}

type Fail = (field: string, message: string) => void;

/** Where an object sits in its document: `parent` itself, or its item `index` (-1: none). Built only to name a problem. */
const fieldAt = (parent: string, index: number, name?: string): string => {
  const at = index < 0 ? parent : `${parent}[${index}]`;
  return name === undefined ? (at === '' ? '(root)' : at) : at === '' ? name : `${at}.${name}`;
};

// Runs for every object of a dump (10,000 pods): a plain loop, and field paths built only for a problem.
function loadObject(
  value: Record<string, unknown>,
  parent: string,
  index: number,
  object: string,
  collector: Collector,
  fail: Fail,
  itemKind?: string,
): void {
  const kind = value['kind'] ?? itemKind;
  if (typeof kind !== 'string' || kind === '') return fail(fieldAt(parent, index, 'kind'), 'required field "kind" is missing');
  if (kind.endsWith('List')) {
    const items = value['items'];
    if (items !== undefined && items !== null && !Array.isArray(items)) return fail(fieldAt(parent, index, 'items'), 'must be array');
    if (!Array.isArray(items)) return;
    const itemsField = fieldAt(parent, index, 'items');
    // "PodList" items may leave out their kind; a plain "List" names it on each item.
    const inner = kind === 'List' ? undefined : kind.slice(0, -'List'.length);
    for (let i = 0; i < items.length; i++) {
      const item: unknown = items[i];
      if (!isRecord(item)) fail(fieldAt(itemsField, i), 'a list item must be a Kubernetes object (a mapping)');
      else loadObject(item, itemsField, i, object, collector, fail, inner);
    }
    return;
  }
  if (!isObjectKind(kind)) {
    // Well-formed objects netfence has no use for (Deployments, Services…) are common in a resources
    // directory; say so once per document, but it is not an error.
    collector.problem({
      object,
      field: fieldAt(parent, index, 'kind'),
      message: `kind "${kind}" is not used by netfence; skipped`,
      severity: 'warning',
    });
    return;
  }
  const apiVersion = value['apiVersion'];
  if (apiVersion !== undefined && apiVersion !== API_VERSIONS[kind]) {
    return fail(fieldAt(parent, index, 'apiVersion'), `${kind} must be ${API_VERSIONS[kind]} (got ${JSON.stringify(apiVersion)})`);
  }
  const result = convert(kind, value);
  if (!result.ok) {
    for (const p of result.problems) fail(fieldAt(parent, index, p.field), `${p.object}: ${p.message}`);
    if (result.problems.length === 0) fail(fieldAt(parent, index), `${objectName(kind, value)} could not be read`);
    return;
  }
  collector.add(kind, result.value);
  // A kept policy carries its own problems (the compiler reports them); only warnings go here.
  if (kind !== 'NetworkPolicy' && kind !== 'ClusterNetworkPolicy')
    for (let i = 0; i < result.problems.length; i++) collector.problem(result.problems[i]!);
}

/** Collects objects by key; a later document with the same key replaces the earlier one. */
export class Collector {
  readonly problems: Problem[] = [];
  private readonly namespaces = new Map<string, Namespace>();
  private readonly pods = new Map<string, Pod>();
  private readonly policies = new Map<string, NetworkPolicy>();
  private readonly nodes = new Map<string, ClusterNode>();
  private readonly clusterPolicies = new Map<string, ClusterNetworkPolicy>();

  problem(p: Problem): void {
    this.problems.push(p);
  }

  add(kind: ObjectKind, value: Namespace | Pod | NetworkPolicy | ClusterNode | ClusterNetworkPolicy): void {
    switch (kind) {
      case 'Namespace':
        return this.put(this.namespaces, (value as Namespace).name, value as Namespace, kind);
      case 'Node':
        return this.put(this.nodes, (value as ClusterNode).name, value as ClusterNode, kind);
      case 'Pod': {
        const pod = value as Pod;
        return this.put(this.pods, `${pod.namespace}/${pod.name}`, pod, kind);
      }
      case 'NetworkPolicy': {
        const policy = value as NetworkPolicy;
        return this.put(this.policies, `${policy.namespace}/${policy.name}`, policy, kind);
      }
      case 'ClusterNetworkPolicy':
        return this.put(this.clusterPolicies, (value as ClusterNetworkPolicy).name, value as ClusterNetworkPolicy, kind);
    }
  }

  snapshot(): ClusterSnapshot {
    return {
      nodes: [...this.nodes.values()],
      namespaces: [...this.namespaces.values()],
      pods: [...this.pods.values()],
      policies: [...this.policies.values()],
      ...(this.clusterPolicies.size > 0 ? { clusterPolicies: [...this.clusterPolicies.values()] } : {}),
    };
  }

  private put<T>(map: Map<string, T>, key: string, value: T, kind: ObjectKind): void {
    // One look-up per object (a dump holds 10,000 pods): a key already there leaves the size as it was.
    const size = map.size;
    map.set(key, value);
    if (map.size === size) {
      this.problem({
        object: `${kind} ${key}`,
        field: '(root)',
        message: 'defined more than once; the last definition wins',
        severity: 'warning',
      });
    }
  }
}

// --- line numbers for schema errors -------------------------------------------------------------

/** The line of the deepest node on the field's path that exists in the YAML document. */
function lineOfField(doc: Document, lines: LineCounter, field: string): number | undefined {
  const segments = parseFieldPath(field);
  for (let n = segments.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(segments.slice(0, n), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lines.linePos(range[0]).line;
  }
  return undefined;
}

const SEGMENT = /\.?([A-Za-z_$][\w$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/gy;

/** Inverse of fieldPath in schemas.ts: `spec.ingress[0].from[1].podSelector.matchLabels["a/b"]`. */
export function parseFieldPath(field: string): (string | number)[] {
  if (field === '(root)' || field === '(document)') return [];
  const out: (string | number)[] = [];
  SEGMENT.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = SEGMENT.exec(field)) !== null) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[3] !== undefined) out.push(JSON.parse(m[3]) as string);
    if (SEGMENT.lastIndex === field.length) break;
  }
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function errorMessage(err: unknown): string {
  // Not `instanceof Error`: errors from another realm (node:fs under a VM context) fail that test.
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(err);
}
