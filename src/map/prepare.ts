// The first half of a map: every node that runs a pod compiled (exactly as its daemon would compile it),
// each pod's two profiles (profiles.ts) and its address class (addresses.ts), the workloads the operator
// thinks in, and the groups: the pods of one workload that the compiled rules cannot tell apart.

import { Compiler } from '../compile/index.js';
import { podKey, type ClusterSnapshot, type IpFamily, type NodeSettings, type Pod, type PodOwner } from '../model/index.js';
import { parseIp } from '../model/address.js';
import { SavedForms, type IpSets } from '../trace/index.js';
import { compiledKey, nodeRulesOf, type CompiledRules, type NodeRules } from '../why/index.js';
import { AddressClasses } from './addresses.js';
import { NodeProfiles, SubtreeCache, type Profile } from './profiles.js';

/** A pod as the map sees it: where it runs, its address of the map's family, and what the rules see of it. */
export interface PodView {
  readonly key: string;
  readonly pod: Pod;
  readonly ip: string;
  readonly node: string;
  readonly egress: Profile;
  readonly ingress: Profile;
  /** Its address class (addresses.ts). */
  readonly addressClass: string;
}

export interface Prepared {
  readonly snapshot: ClusterSnapshot;
  readonly family: IpFamily;
  readonly settingsFor: (node: string) => NodeSettings;
  readonly compiled: CompiledRules;
  readonly pods: readonly PodView[];
  readonly addresses: AddressClasses;
  readonly skipped: readonly string[];
}

/** Labels that differ between replicas of one workload by construction (revision hashes, ordinals). */
const PER_REPLICA_LABELS = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'batch.kubernetes.io/job-completion-index',
  'controller-uid',
  'batch.kubernetes.io/controller-uid',
]);

/** The family to map when none is asked for: IPv4 when any pod has an IPv4 address. */
export function defaultFamily(snapshot: ClusterSnapshot): IpFamily {
  return snapshot.pods.some((p) => p.ips.some((ip) => parseIp(ip)?.family === 4)) ? 4 : 6;
}

/**
 * What prepares of related clusters (a diff's two sides) share: one compiler, which follows one snapshot to
 * the next as a daemon does (what did not change is not rendered or resolved again), and the saved forms and
 * profile subtrees of the chains and sets it hands back again.
 */
export class PrepareCache {
  readonly compiler = new Compiler(true);
  readonly forms = new SavedForms();
  readonly subtrees = new SubtreeCache();
}

export function prepare(
  snapshot: ClusterSnapshot,
  settingsFor: (node: string) => NodeSettings,
  family: IpFamily,
  compiled: CompiledRules = new Map(),
  cache: PrepareCache = new PrepareCache(),
): Prepared {
  return prepareAll([{ snapshot, settingsFor, compiled }], family, cache)[0]!;
}

/** One cluster of `prepareAll`. */
export interface PrepareSide {
  readonly snapshot: ClusterSnapshot;
  readonly settingsFor: (node: string) => NodeSettings;
  readonly compiled: CompiledRules;
}

/**
 * Related clusters (a diff's two sides) prepared together, node by node: the one compiler compiles a node for
 * each cluster in turn, so the second compile of a node follows the first as a daemon's next compile follows
 * its last (only what the change touched is resolved and rendered again). Switching nodes costs a compile
 * most of its work (the local pods and their selections change); switching clusters on one node costs little.
 */
export function prepareAll(sides: readonly PrepareSide[], family: IpFamily, cache: PrepareCache = new PrepareCache()): Prepared[] {
  const runs = sides.map((side) => ({ side, ...runningPods(side.snapshot, family) }));
  const nodesOf = runs.map((r) => [...new Set(r.running.map((p) => p.pod.nodeName))].sort());
  // Sets are shared between the nodes of one cluster only: one name may hold other members in the other.
  const shared = runs.map(() => new Map<string, SavedIpSet>());
  const rulesOf = runs.map(() => new Map<string, NodeRules>());
  const profilesOn = runs.map(() => new Map<string, ChainProfiles>());
  const hosting = nodesOf.map((list) => new Set(list));
  for (const node of [...new Set(nodesOf.flat())].sort())
    runs.forEach(({ side }, i) => {
      if (!hosting[i]!.has(node)) return;
      const rules = compileNode(side, node, family, cache, shared[i]!);
      rulesOf[i]!.set(node, rules);
      // Read while the node's chains are young: once read, nothing here needs them again.
      profilesOn[i]!.set(node, chainProfiles(rules, cache));
    });
  const out: Prepared[] = [];
  runs.forEach(({ side, running, skipped }, i) =>
    out.push(profilesOf(side, family, nodesOf[i]!, rulesOf[i]!, profilesOn[i]!, running, skipped, out[0]?.addresses)),
  );
  return out;
}

/** A node's workload chains' profiles, by pod. */
type ChainProfiles = ReadonlyMap<string, { ingress?: Profile; egress?: Profile }>;

function chainProfiles(rules: NodeRules, cache: PrepareCache): ChainProfiles {
  const profiles = new NodeProfiles(rules.chains, rules.ipsets, cache.subtrees);
  const chainsOf = new Map<string, { ingress?: Profile; egress?: Profile }>();
  // Indexed: some 40,000 chains a cluster, read unoptimized (cli/main.ts), where `for…of` makes an iterator.
  for (let i = 0; i < rules.chains.length; i++) {
    const chain = rules.chains[i]!;
    if (chain.role.kind !== 'workload') continue;
    const entry = chainsOf.get(chain.role.pod) ?? {};
    entry[chain.role.direction] = profiles.profileOf(chain);
    chainsOf.set(chain.role.pod, entry);
  }
  return chainsOf;
}

function runningPods(snapshot: ClusterSnapshot, family: IpFamily): { running: { pod: Pod; ip: string }[]; skipped: string[] } {
  const skipped: string[] = [];
  const running: { pod: Pod; ip: string }[] = [];
  // Indexed loops, each address read once: 10,000 pods a cluster, read unoptimized (cli/main.ts).
  for (let i = 0; i < snapshot.pods.length; i++) {
    const pod = snapshot.pods[i]!;
    const ip = addressOf(pod, family);
    const why = leftOut(pod, family, ip);
    if (why !== undefined || ip === undefined) skipped.push(`${podKey(pod)}: ${why ?? `no IPv${family} address`}`);
    else running.push({ pod, ip });
  }
  return { running, skipped };
}

// One long-lived compiler for every node, as the daemon keeps one: it gives the answer compile() gives
// (compile.ts), and reuses what does not depend on the node (selector matches), which is most of the work.
function compileNode(side: PrepareSide, node: string, family: IpFamily, cache: PrepareCache, shared: Map<string, SavedIpSet>): NodeRules {
  const key = compiledKey(family, node);
  let rules = side.compiled.get(key);
  if (!rules) {
    const settings = side.settingsFor(node);
    const desired = cache.compiler.compile(side.snapshot, settings).desired;
    rules = shareSets(nodeRulesOf(side.snapshot, settings, node, family === 6 ? desired.v6 : desired.v4, cache.forms), shared);
    side.compiled.set(key, rules);
  }
  return rules;
}

function profilesOf(
  side: PrepareSide,
  family: IpFamily,
  nodes: readonly string[],
  rulesOf: ReadonlyMap<string, NodeRules>,
  profilesOn: ReadonlyMap<string, ChainProfiles>,
  running: readonly { pod: Pod; ip: string }[],
  skipped: string[],
  related?: AddressClasses,
): Prepared {
  const { snapshot, settingsFor, compiled } = side;
  const addresses = new AddressClasses(family);
  for (const node of nodes) addresses.add(rulesOf.get(node)!.ipsets);
  // A diff's second cluster: the first one's classes, for the addresses no changed set holds.
  if (related) addresses.inherit(related);
  const byNode = new Map<string, { pod: Pod; ip: string }[]>();
  for (const r of running) {
    const list = byNode.get(r.pod.nodeName);
    if (list) list.push(r);
    else byNode.set(r.pod.nodeName, [r]);
  }
  const pods: PodView[] = [];
  for (const node of nodes) {
    const chainsOf = profilesOn.get(node)!;
    const here = byNode.get(node) ?? [];
    for (let i = 0; i < here.length; i++) {
      const { pod, ip } = here[i]!;
      const key = podKey(pod);
      const chains = chainsOf.get(key);
      if (!chains?.egress || !chains.ingress) {
        skipped.push(`${key}: no chains of its own on ${node} (its address is shared with another pod, or it is not programmed)`);
        continue;
      }
      pods.push({ key, pod, ip, node, egress: chains.egress, ingress: chains.ingress, addressClass: addresses.classOf(ip) });
    }
  }
  return { snapshot, family, settingsFor, compiled, pods: byKey(pods), addresses, skipped };
}

/**
 * The pods in the order of their keys (UTF-16 code units, as `<` compares): the keys sorted by the built-in
 * comparison, with no function called per comparison (10,000 pods, some 130,000 comparisons).
 */
function byKey(pods: readonly PodView[]): PodView[] {
  const of = new Map<string, PodView>();
  for (let i = 0; i < pods.length; i++) of.set(pods[i]!.key, pods[i]!);
  // One pod per key (a snapshot's pods are keyed by namespace and name); were two to share one, keep both.
  if (of.size !== pods.length) return [...pods].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const keys = [...of.keys()].sort();
  return keys.map((k) => of.get(k)!);
}

type SavedIpSet = IpSets extends ReadonlyMap<string, infer S> ? S : never;

/**
 * One object per selector, ipBlock and node set for all nodes: such a set's name is the hash of what it stands
 * for and its members are the cluster's (compile/ipsets.ts), so every node's copy is the same; the tracer then
 * indexes each once, not once per node. Named-port sets (`hash:ip,port`) hold each node's own targets: kept.
 */
function shareSets(rules: NodeRules, shared: Map<string, SavedIpSet>): NodeRules {
  const ipsets = new Map<string, SavedIpSet>();
  for (const [name, set] of rules.ipsets) {
    if (set.type === 'hash:ip,port') {
      ipsets.set(name, set);
      continue;
    }
    const first = shared.get(name);
    if (!first) shared.set(name, set);
    ipsets.set(name, first ?? set);
  }
  return { ...rules, ipsets };
}

/** The pod's first address of the family. */
function addressOf(pod: Pod, family: IpFamily): string | undefined {
  for (let i = 0; i < pod.ips.length; i++) if (parseIp(pod.ips[i]!)?.family === family) return pod.ips[i];
  return undefined;
}

/** `ip`: the pod's first address of the family (addressOf). */
function leftOut(pod: Pod, family: IpFamily, ip: string | undefined): string | undefined {
  if (pod.hostNetwork) return 'host network (its address is its node’s)';
  if (pod.phase === 'Succeeded' || pod.phase === 'Failed') return `${pod.phase.toLowerCase()}: not a peer any more`;
  if (pod.nodeName === '') return 'not scheduled';
  if (pod.ips.length === 0) return 'no address yet';
  if (ip === undefined) return `no IPv${family} address`;
  return undefined;
}

/** A workload as the operator names it: its key, its display name, another name for when two share one, its labels. */
export interface Workload {
  readonly key: string;
  readonly name: string;
  /** The name when another workload of the namespace has the same one: `StatefulSet/web`, `app=web,tier=db`, `Pod/x`. */
  readonly alt: string;
  readonly labels: Record<string, string>;
  readonly owner?: PodOwner;
}

/**
 * The workload a pod belongs to in the operator's words, in its namespace: by default (`owner`) its
 * controller (a Deployment, StatefulSet, DaemonSet, Job…; cluster/convert.ts), else its label set; with
 * `labels` its label set; with a label key that label's value. A pod with none of these is its own workload.
 * The groups drawn are cut finer where the rules tell the pods apart (build.ts), so this never joins pods
 * the rules treat differently.
 */
export function workloadOf(pod: Pod, groupBy: string | undefined): Workload {
  const { labels, text, name: labelName } = labelsView(pod.labels);
  const alone = (): Workload => ({ key: `${pod.namespace}\0pod\0${pod.name}`, name: pod.name, alt: `Pod/${pod.name}`, labels });
  if (groupBy !== undefined && groupBy !== 'labels' && groupBy !== 'owner') {
    // The pod's own label: `constructor` or `toString` is a label key, not a property to read from the prototype.
    const value = Object.hasOwn(pod.labels, groupBy) ? pod.labels[groupBy] : undefined;
    return value === undefined
      ? alone()
      : { key: `${pod.namespace}\0${groupBy}\0${value}`, name: value, alt: `${groupBy}=${value}`, labels: { [groupBy]: value } };
  }
  const owner = groupBy === 'labels' ? undefined : pod.owner;
  if (owner !== undefined)
    return {
      key: `${pod.namespace}\0owner\0${owner.kind}/${owner.name}`,
      name: owner.name,
      alt: `${owner.kind}/${owner.name}`,
      labels,
      owner,
    };
  if (text === '') return alone();
  return { key: `${pod.namespace}\0labels\0${text}`, name: labelName, alt: text, labels };
}

/** A label set as workloads show it: no per-replica labels, sorted; as text (`app=web,tier=db`); and the name it gives. */
interface LabelsView {
  readonly labels: Record<string, string>;
  readonly text: string;
  readonly name: string;
}

/**
 * Read once per label set object: the pods of one workload share theirs (cluster/intern.ts), and a map reads
 * every pod's. The view is shared too, so it is never changed.
 */
const labelsViews = new WeakMap<Readonly<Record<string, string>>, LabelsView>();

function labelsView(podLabels: Readonly<Record<string, string>>): LabelsView {
  let view = labelsViews.get(podLabels);
  if (view) return view;
  const labels = Object.fromEntries(
    Object.entries(podLabels)
      .filter(([k]) => !PER_REPLICA_LABELS.has(k))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  const text = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const values = Object.values(labels);
  const name =
    labels['app.kubernetes.io/name'] ?? labels['app'] ?? labels['k8s-app'] ?? labels['name'] ?? (values.length === 1 ? values[0]! : text);
  view = { labels, text, name };
  labelsViews.set(podLabels, view);
  return view;
}
