// Kubernetes JSON objects (from the API or from manifest files) → netfence's model objects.
//
// Each object is first checked against its schema (schemas.ts); every schema error becomes a Problem
// naming the object and the field. Then the fields are read leniently: what has the wrong type is
// left out. That leniency matters only for NetworkPolicies, which are never dropped (dropping one
// would open the traffic it restricts): a policy with problems is returned with `problems` set, and
// the compiler isolates the pods it selects and allows nothing through it. Where a broken field
// could change *which* pods or directions that isolation covers, we read it the closed way (see
// policy-convert.ts). Pods, Namespaces and Nodes with schema errors are rejected. This module checks and
// dispatches, and reads Namespaces, Pods and Nodes; NetworkPolicies are read in policy-convert.ts,
// ClusterNetworkPolicies in cnp-convert.ts, the plain fields they share in read-fields.ts.

import type {
  ClusterNetworkPolicy,
  ClusterNode,
  ContainerPort,
  Labels,
  Namespace,
  NetworkPolicy,
  Pod,
  PodOwner,
  PodPhase,
  Problem,
} from '../model/index.js';
import { canonicalIp, parseCidr } from '../model/index.js';
import { LabelInterner, OwnerInterner } from './intern.js';
import { readClusterPolicy } from './cnp-convert.js';
import { readPolicy, readSelector, wireNames } from './policy-convert.js';
import { readPolicyMode } from './policy-mode.js';
import type { ObjectKind } from './object-kind.js';
import { array, namespaceOf, readLabels, readProtocol, record } from './read-fields.js';
import { schemaErrors } from './schemas.js';

export interface ModelOf {
  readonly Namespace: Namespace;
  readonly Pod: Pod;
  readonly NetworkPolicy: NetworkPolicy;
  readonly Node: ClusterNode;
  readonly ClusterNetworkPolicy: ClusterNetworkPolicy;
}

export type Converted<T> =
  | { readonly ok: true; readonly value: T; readonly problems: readonly Problem[] }
  | { readonly ok: false; readonly problems: readonly Problem[] };

const NAMESPACED: Readonly<Record<ObjectKind, boolean>> = {
  Namespace: false,
  Pod: true,
  NetworkPolicy: true,
  Node: false,
  ClusterNetworkPolicy: false,
};

/** `NetworkPolicy ns/name`, `Pod ns/name`, `Namespace name`, `Node name`: how problems name objects. */
export function objectName(kind: ObjectKind, obj: unknown): string {
  const meta = record(record(obj)?.['metadata']);
  const name = typeof meta?.['name'] === 'string' && meta['name'] !== '' ? meta['name'] : '<unnamed>';
  if (!NAMESPACED[kind]) return `${kind} ${name}`;
  return `${kind} ${namespaceOf(meta)}/${name}`;
}

export function convert<K extends ObjectKind>(kind: K, input: unknown): Converted<ModelOf[K]> {
  const obj = kind === 'NetworkPolicy' ? wireNames(input) : input;
  // Named only when there is a problem to name it in (most of 10,000 pods have none).
  let name: string | undefined;
  const object = (): string => (name ??= objectName(kind, obj));
  const errors = schemaErrors(kind, obj);
  const problems: Problem[] =
    errors.length === 0 ? [] : errors.map((e) => ({ object: object(), field: e.field, message: e.message, severity: 'error' }));
  const meta = record(record(obj)?.['metadata']);
  // Without a name there is nothing to key the object by (and the API server would never hold it).
  if (!meta || typeof meta['name'] !== 'string' || meta['name'] === '') return { ok: false, problems };
  if (kind === 'NetworkPolicy') {
    // A mode warning is reported but does not invalidate the policy (the policy's own problems would).
    const { mode, problems: modeProblems } = readPolicyMode(meta, object);
    const policy = { ...readPolicy(obj as Record<string, unknown>, meta), ...mode };
    return {
      ok: true,
      value: (problems.length > 0 ? { ...policy, problems } : policy) as ModelOf[K],
      problems: [...problems, ...modeProblems],
    };
  }
  if (kind === 'ClusterNetworkPolicy') {
    const { mode, problems: modeProblems } = readPolicyMode(meta, object);
    // Like a NetworkPolicy, a CNP is kept with its problems: dropping it would lift an admin Deny.
    const cnp = {
      ...readClusterPolicy(obj as Record<string, unknown>, meta, readSelector, (field, message, severity = 'error') =>
        problems.push({ object: object(), field, message, severity }),
      ),
      ...mode,
    };
    return {
      ok: true,
      value: (problems.length > 0 ? { ...cnp, problems: [...problems] } : cnp) as ModelOf[K],
      problems: [...problems, ...modeProblems],
    };
  }
  if (problems.some((p) => p.severity === 'error')) return { ok: false, problems };
  const read = readers[kind as Exclude<ObjectKind, 'NetworkPolicy' | 'ClusterNetworkPolicy'>];
  const value = read(obj as Record<string, unknown>, meta, (field, message) =>
    problems.push({ object: object(), field, message, severity: 'warning' }),
  );
  return { ok: true, value: value as ModelOf[K], problems };
}

type Warn = (field: string, message: string) => void;
type Reader<T> = (obj: Record<string, unknown>, meta: Record<string, unknown>, warn: Warn) => T;

const readers: { readonly [K in Exclude<ObjectKind, 'NetworkPolicy' | 'ClusterNetworkPolicy'>]: Reader<ModelOf[K]> } = {
  Namespace: (_obj, meta) => {
    const name = meta['name'] as string;
    // The API server sets this label on every namespace (since 1.21); manifests rarely write it, and
    // namespaceSelectors often use it.
    return { name, labels: { ...readLabels(meta['labels']), 'kubernetes.io/metadata.name': name } };
  },
  Pod: readPod,
  Node: readNode,
};

// --- Pod --------------------------------------------------------------------------------------

const PHASES: readonly PodPhase[] = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'];

/** Pods share label and owner objects: see intern.ts. */
const podLabels = new LabelInterner();
const podOwners = new OwnerInterner();

// Pods are most of a cluster, and the one-shot commands run this unoptimised (main.ts): plain loops and
// object literals here, not flatMap and spreads (10,000 pods: ~40 ms less CPU).
function readPod(obj: Record<string, unknown>, meta: Record<string, unknown>, warn: Warn): Pod {
  const spec = record(obj['spec']) ?? {};
  const status = record(obj['status']) ?? {};
  const phase = status['phase'];
  const namespace = namespaceOf(meta);
  const name = meta['name'] as string;
  const labels = podLabels.intern(readLabels(meta['labels']));
  const nodeName = typeof spec['nodeName'] === 'string' ? spec['nodeName'] : '';
  const hostNetwork = spec['hostNetwork'] === true;
  // A pod without a reported phase has not started yet.
  const podPhase = PHASES.includes(phase as PodPhase) ? (phase as PodPhase) : 'Pending';
  const ips = readPodIps(status, warn);
  const ports = readContainerPorts(spec, warn);
  const owner = readOwner(meta['ownerReferences'], labels);
  // No uid: nothing decides by it, and at 50,000 pods it was 2.7 MiB of the daemon's heap (bench-heap).
  // `owner` always set (undefined when none), so every pod has one shape.
  return { namespace, name, labels, nodeName, hostNetwork, phase: podPhase, ips, ports, owner };
}

/**
 * The controller among the owner references ("There cannot be more than one managing controller"), read
 * leniently and outside the schema: nothing in policy depends on it, so a malformed one is left out and never
 * rejects the pod. A ReplicaSet named `<name>-<the pod's pod-template-hash>` is a Deployment's: the Deployment
 * controller names its ReplicaSets so and puts the hash on their pods, so the Deployment is told without
 * reading the ReplicaSet. Other owners of owners (a CronJob's Job) cannot be told from the names: kept as is.
 */
function readOwner(refs: unknown, labels: Labels): PodOwner | undefined {
  if (!Array.isArray(refs)) return undefined;
  for (let i = 0; i < refs.length; i++) {
    const r = record(refs[i]);
    if (r?.['controller'] !== true || typeof r['kind'] !== 'string' || typeof r['name'] !== 'string') continue;
    const kind = r['kind'];
    const name = r['name'];
    const hash = labels['pod-template-hash'];
    if (kind === 'ReplicaSet' && hash !== undefined && hash !== '' && name.endsWith(`-${hash}`) && name.length > hash.length + 1)
      return podOwners.intern('Deployment', name.slice(0, name.length - hash.length - 1));
    return podOwners.intern(kind, name);
  }
  return undefined;
}

function readPodIps(status: Record<string, unknown>, warn: Warn): string[] {
  // "podIPs holds the IP addresses allocated to the pod. If this field is specified, the 0th entry must
  // match the podIP field." Older servers and hand-written manifests may only set podIP.
  const ips: string[] = [];
  const listed = array(status['podIPs']);
  if (listed.length > 0) for (let i = 0; i < listed.length; i++) addPodIp(ips, record(listed[i])?.['ip'], i, warn);
  else if (status['podIP']) addPodIp(ips, status['podIP'], -1, warn);
  return fitted(ips);
}

/**
 * The array with room for its elements only. V8 gives an array its first `push` room for 17 (152 bytes);
 * a pod keeps its IPs and ports for as long as it exists, and at 50,000 pods that slack was ~14 MiB of
 * the daemon's heap (scripts/bench-heap.ts). `slice` copies into an exactly sized store.
 */
function fitted<T>(items: T[]): T[] {
  return items.length === 0 ? items : items.slice();
}

/** `index` in status.podIPs, or -1 for status.podIP; the field is named only in a warning. */
function addPodIp(ips: string[], text: unknown, index: number, warn: Warn): void {
  const ip = canonicalIp(text);
  if (ip === undefined) warn(index < 0 ? 'status.podIP' : `status.podIPs[${index}].ip`, `"${String(text)}" is not an IP address; ignored`);
  else if (!ips.includes(ip)) ips.push(ip);
}

function readContainerPorts(spec: Record<string, unknown>, warn: Warn): ContainerPort[] {
  const out: ContainerPort[] = [];
  const containers = array(spec['containers']);
  for (let ci = 0; ci < containers.length; ci++) {
    const ports = array(record(containers[ci])?.['ports']);
    for (let pi = 0; pi < ports.length; pi++) {
      const port = record(ports[pi]);
      if (!port || !Number.isInteger(port['containerPort'])) continue;
      // "Number of port to expose on the pod's IP address. This must be a valid port number, 0 < x < 65536."
      // The API server rejects anything else; one that got here anyway (a manifest, an old object) would
      // make the named-port set's `ipset restore` fail and hold back every later change.
      const containerPort = port['containerPort'] as number;
      if (containerPort < 1 || containerPort > 65535) {
        warn(`spec.containers[${ci}].ports[${pi}].containerPort`, `${containerPort} is not a port number (1-65535); ignored`);
        continue;
      }
      // Only named ports are kept: a container port matters to policy only when a rule names it ("named port
      // ... resolved per destination pod"); a numeric rule port needs no declaration. Unnamed ones were most
      // of a real pod's ports and cost every pod of the cluster memory in the daemon.
      const name = port['name'];
      if (typeof name !== 'string' || name === '') continue;
      out.push({ name, containerPort, protocol: readProtocol(port['protocol']) });
    }
  }
  return fitted(out);
}

// --- Node -------------------------------------------------------------------------------------

function readNode(obj: Record<string, unknown>, meta: Record<string, unknown>, warn: Warn): ClusterNode {
  const spec = record(obj['spec']) ?? {};
  const status = record(obj['status']) ?? {};
  const listed = array(spec['podCIDRs']).filter((c): c is string => typeof c === 'string');
  const given = listed.length > 0 ? listed : typeof spec['podCIDR'] === 'string' && spec['podCIDR'] ? [spec['podCIDR']] : [];
  // A CIDR the API server would reject is refused here, named, rather than thrown later from the sync loop.
  const podCidrs = given.filter((cidr, i) => {
    const bad = !parseCidr(cidr).ok;
    if (bad) warn(listed.length > 0 ? `spec.podCIDRs[${i}]` : 'spec.podCIDR', `"${cidr}" is not a CIDR; ignored`);
    return !bad;
  });
  const addresses: string[] = [];
  array(status['addresses']).forEach((a, i) => {
    const entry = record(a);
    if (!entry || (entry['type'] !== 'InternalIP' && entry['type'] !== 'ExternalIP')) return;
    const ip = canonicalIp(entry['address']);
    if (ip === undefined) warn(`status.addresses[${i}].address`, `"${String(entry['address'])}" is not an IP address; ignored`);
    else if (!addresses.includes(ip)) addresses.push(ip);
  });
  const labels = readLabels(meta['labels']);
  // Labels only matter to ClusterNetworkPolicy `nodes` peers; left out when empty so older snapshots compare equal.
  return { name: meta['name'] as string, podCidrs, addresses, ...(Object.keys(labels).length > 0 ? { labels } : {}) };
}
