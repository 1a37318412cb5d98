// The compiler's view of the cluster, kept up to date from one snapshot to the next: which pods count as
// peers, which are local, and which pods each selector peer matches. Sources hand over unchanged objects
// as the same references, so a new snapshot is diffed by identity and only what changed is re-matched.

import {
  diffByIdentity,
  type ClusterSnapshot,
  type Labels,
  type Namespace,
  type Pod,
  type PolicyPeer,
  type SnapshotDelta,
} from '../model/index.js';
import { podAddressFamily } from '../model/address.js';
import { countsAsPeer, hasBadAddress, peerKey } from './pod-peers.js';
import { SelectionEntry, type Selection } from './selection.js';
import { selectorMatches } from './selectors.js';

export { ipsOfFamily, peerKey } from './pod-peers.js';
export type { Selection } from './selection.js';

// Built only for pods that changed (updatePods); not cached per pod, which cost a WeakMap entry per pod
// kept for the daemon's lifetime for a string the maps below already hold.
const keyOf = (p: { readonly namespace: string; readonly name: string }): string => `${p.namespace}/${p.name}`;
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byName = (a: Pod, b: Pod): number => cmp(a.name, b.name);
const NO_PODS: readonly Pod[] = [];
const NO_PEERS: ReadonlyMap<string, Pod> = new Map();

export class ClusterState {
  /** The pod list the state was last brought to, while known (after a delta only the keys are). */
  private pods: readonly Pod[] | undefined = [];
  /** Pods (by key) with an address that does not parse. */
  private readonly badPods = new Map<string, Pod>();
  /** Moves whenever the pods changed at all (their problems may then read differently). */
  podsVersion = 0;
  private namespaces: readonly Namespace[] = [];
  private readonly peerByKey = new Map<string, Pod>();
  private readonly peersByNamespace = new Map<string, Map<string, Pod>>();
  /** The same peers by node: a compiler asked for each node in turn finds a node's pods without walking all. */
  private readonly peersByNode = new Map<string, Map<string, Pod>>();
  /**
   * The same peers by label (key, then value), when asked for: a new selection starts from the pods carrying
   * one label its podSelector asks for, not from every pod of every namespace it selects. Kept by a compiler
   * asked for each node in turn (a map fills a selection for every peer the policies name); a daemon fills a
   * few after its first compile and keeps its memory instead (some 140 bytes per pod).
   */
  private readonly peersByLabel: Map<string, Map<string, Map<string, Pod>>> | undefined;

  constructor(options: { readonly labelIndex?: boolean } = {}) {
    this.peersByLabel = options.labelIndex ? new Map() : undefined;
  }
  private readonly nsLabels = new Map<string, Labels>();
  private readonly selections = new Map<string, SelectionEntry>();
  private readonly byNamespace = new Map<string, Set<SelectionEntry>>();
  private readonly crossNamespace = new Set<SelectionEntry>();
  private nodeName = '';
  private local: readonly Pod[] = [];
  /** Local pods per namespace, each array replaced only when that namespace's local pods change. */
  private readonly localByNamespace = new Map<string, readonly Pod[]>();
  private versionCounter = 0;
  /** Moves whenever any peer pod is added, removed or changed. */
  allPodsVersion = 0;
  /** Peer pods (by key) claiming each address; an address with more than one is shared. */
  private readonly claims = new Map<string, string | Set<string>>();
  private readonly sharedIps = new Set<string>();
  /** Moves whenever an address becomes shared or stops being shared. */
  sharedVersion = 0;

  /**
   * Bring the state to `snapshot`. With `delta` (what changed since the snapshot the state was last brought to,
   * from the source) the work is in proportion to the change; without it, O(pods) identity checks. Then
   * re-matching of what changed.
   */
  update(snapshot: ClusterSnapshot, nodeName: string, delta?: SnapshotDelta): void {
    const nodeChanged = nodeName !== this.nodeName;
    this.nodeName = nodeName;
    if (snapshot.namespaces !== this.namespaces) this.updateNamespaces(snapshot.namespaces);
    if (delta && !nodeChanged) {
      if (delta.pods.size === 0) return;
      // The list itself is never read (building it is O(pods)): from here on only the keys are known.
      this.pods = undefined;
      this.podsVersion = ++this.versionCounter;
      this.applyPods(delta.pods, false);
    } else if (snapshot.pods !== this.pods || nodeChanged) {
      this.podsVersion = ++this.versionCounter;
      this.updatePods(snapshot.pods, nodeChanged);
    }
  }

  namespaceLabels(ns: string): Labels {
    return this.nsLabels.get(ns) ?? { 'kubernetes.io/metadata.name': ns };
  }

  /** Pods of this node that policies can target, sorted by namespace/name. */
  get localPods(): readonly Pod[] {
    return this.local;
  }

  /** Whether more than one peer pod claims this address (a packet cannot tell which one it is). */
  isShared(ip: string): boolean {
    return this.sharedIps.has(ip);
  }

  /** The peer pods (by key) claiming an address. */
  claimantsOf(ip: string): readonly string[] {
    const claimants = this.claims.get(ip);
    return claimants === undefined ? [] : typeof claimants === 'string' ? [claimants] : [...claimants];
  }

  /** Every shared address with the peer pods claiming it, sorted by namespace/name. */
  shared(): ReadonlyMap<string, readonly Pod[]> {
    const out = new Map<string, readonly Pod[]>();
    for (const ip of [...this.sharedIps].sort(cmp)) {
      const claimants = this.claims.get(ip)!;
      const owners = (typeof claimants === 'string' ? [claimants] : [...claimants].sort(cmp)).flatMap((key) => {
        const pod = this.peerByKey.get(key);
        return pod ? [pod] : [];
      });
      out.set(ip, owners);
    }
    return out;
  }

  private claim(pod: Pod, key: string, add: boolean): void {
    for (const ip of pod.ips) {
      if (podAddressFamily(ip) === undefined) continue;
      // One claimant (nearly every address) is kept as its key; a Set only while several claim it.
      const before = this.claims.get(ip);
      let now: string | Set<string> | undefined;
      if (add) {
        if (before === undefined || before === key) now = key;
        else if (typeof before === 'string') now = new Set([before, key]);
        else now = before.add(key);
      } else if (before === key) {
        now = undefined;
      } else if (typeof before === 'string' || before === undefined) {
        now = before;
      } else {
        before.delete(key);
        now = before.size === 1 ? before.values().next().value! : before;
      }
      if (now === undefined) this.claims.delete(ip);
      else if (now !== before) this.claims.set(ip, now);
      const shared = typeof now === 'object';
      if (shared !== this.sharedIps.has(ip)) {
        if (shared) this.sharedIps.add(ip);
        else this.sharedIps.delete(ip);
        this.sharedVersion = ++this.versionCounter;
      }
    }
  }

  /** Pods with an address that does not parse (reported as problems; usually none). */
  get badAddresses(): ReadonlySet<Pod> {
    return new Set(this.badPods.values());
  }

  /** The same pods sorted by `ns/name` key: a source's snapshot order, without reading its whole pod list. */
  badAddressesByKey(): readonly Pod[] {
    return [...this.badPods].sort(([a], [b]) => cmp(a, b)).map(([, pod]) => pod);
  }

  /** Local pods of one namespace, sorted by name; the same array until one of them changes. */
  localPodsIn(namespace: string): readonly Pod[] {
    return this.localByNamespace.get(namespace) ?? NO_PODS;
  }

  allPeers(): Iterable<Pod> {
    return this.peerByKey.values();
  }

  /** Canonical key of a selector peer (namespace scope + selectors). */
  /** The peer pods a selector peer matches (computed on first use, then kept current). */
  select(peer: PolicyPeer, policyNamespace: string): Selection {
    const key = peerKey(peer, policyNamespace);
    let entry = this.selections.get(key);
    if (!entry) {
      entry = new SelectionEntry(key, peer, policyNamespace, ++this.versionCounter);
      this.fill(entry);
      this.selections.set(key, entry);
      this.scopeOf(entry).add(entry);
    }
    entry.used = true;
    return entry;
  }

  /** Forget selections no compile asked for since the last sweep (policies that went away). */
  sweep(): void {
    for (const [key, entry] of this.selections) {
      if (!entry.used) {
        this.selections.delete(key);
        this.scopeOf(entry).delete(entry);
      } else entry.used = false;
    }
  }

  /** Selections a pod of one namespace can be in: those scoped to it, and those with a namespaceSelector. */
  private scopeOf(entry: SelectionEntry): Set<SelectionEntry> {
    if (entry.peer.namespaceSelector) return this.crossNamespace;
    let scoped = this.byNamespace.get(entry.namespace);
    if (!scoped) this.byNamespace.set(entry.namespace, (scoped = new Set()));
    return scoped;
  }

  private matches(entry: SelectionEntry, pod: Pod): boolean {
    const inScope = entry.peer.namespaceSelector
      ? selectorMatches(entry.peer.namespaceSelector, this.namespaceLabels(pod.namespace))
      : pod.namespace === entry.namespace;
    return inScope && (!entry.peer.podSelector || selectorMatches(entry.peer.podSelector, pod.labels));
  }

  private fill(entry: SelectionEntry): void {
    entry.pods.clear();
    const podSelector = entry.peer.podSelector;
    // Narrow by namespace first: most selectors scope to one namespace or a few.
    const namespaces = entry.peer.namespaceSelector
      ? [...this.peersByNamespace.keys()].filter((ns) => selectorMatches(entry.peer.namespaceSelector!, this.namespaceLabels(ns)))
      : [entry.namespace];
    // Then by one label the podSelector asks for, when fewer pods carry it than those namespaces hold (the
    // order the pods are found in does not matter: a set's members are sorted).
    const carrying = podSelector && this.peersByLabel ? this.carrying(this.peersByLabel, podSelector.matchLabels) : undefined;
    if (carrying && carrying.size < namespaces.reduce((n, ns) => n + (this.peersByNamespace.get(ns)?.size ?? 0), 0)) {
      const inScope = new Set(namespaces);
      for (const [key, pod] of carrying)
        if (inScope.has(pod.namespace) && selectorMatches(podSelector!, pod.labels)) entry.pods.set(key, pod);
      return;
    }
    for (const ns of namespaces) {
      for (const [key, pod] of this.peersByNamespace.get(ns) ?? []) {
        if (!podSelector || selectorMatches(podSelector, pod.labels)) entry.pods.set(key, pod);
      }
    }
  }

  /** The peers carrying the first label of `matchLabels` (by key); undefined when it asks for none. */
  private carrying(
    index: ReadonlyMap<string, ReadonlyMap<string, ReadonlyMap<string, Pod>>>,
    matchLabels: Labels,
  ): ReadonlyMap<string, Pod> | undefined {
    for (const label in matchLabels) {
      if (!Object.hasOwn(matchLabels, label)) continue;
      return index.get(label)?.get(matchLabels[label]!) ?? NO_PEERS;
    }
    return undefined;
  }

  /** Adds a peer to (or removes it from) the label index. */
  private indexLabels(pod: Pod, key: string, add: boolean): void {
    const index = this.peersByLabel;
    if (!index) return;
    for (const label in pod.labels) {
      if (!Object.hasOwn(pod.labels, label)) continue;
      const value = pod.labels[label]!;
      let byValue = index.get(label);
      if (add) {
        if (!byValue) index.set(label, (byValue = new Map<string, Map<string, Pod>>()));
        let pods = byValue.get(value);
        if (!pods) byValue.set(value, (pods = new Map<string, Pod>()));
        pods.set(key, pod);
        continue;
      }
      const pods = byValue?.get(value);
      if (!pods) continue;
      pods.delete(key);
      if (pods.size > 0) continue;
      byValue!.delete(value);
      if (byValue!.size === 0) index.delete(label);
    }
  }

  private updateNamespaces(namespaces: readonly Namespace[]): void {
    const before = new Map(this.namespaces.map((n) => [n.name, n]));
    this.namespaces = namespaces;
    const moved: { readonly name: string; readonly was: Labels }[] = [];
    const seen = new Set<string>();
    for (const n of namespaces) {
      seen.add(n.name);
      if (before.get(n.name) === n) continue;
      const was = this.namespaceLabels(n.name);
      this.nsLabels.set(n.name, n.labels);
      if (JSON.stringify(was) !== JSON.stringify(n.labels)) moved.push({ name: n.name, was });
    }
    for (const name of before.keys()) {
      if (seen.has(name)) continue;
      const was = this.namespaceLabels(name);
      this.nsLabels.delete(name);
      moved.push({ name, was });
    }
    // Namespace labels only matter to selectors with a namespaceSelector, and only where a namespace
    // enters or leaves one: move that namespace's pods in or out of those selections.
    for (const { name, was } of moved) {
      const now = this.namespaceLabels(name);
      for (const entry of this.selections.values()) {
        const nsSelector = entry.peer.namespaceSelector;
        if (!nsSelector) continue;
        const wasIn = selectorMatches(nsSelector, was);
        const isIn = selectorMatches(nsSelector, now);
        if (wasIn === isIn) continue;
        for (const [key, pod] of this.peersByNamespace.get(name) ?? []) {
          if (isIn) {
            if (entry.peer.podSelector && !selectorMatches(entry.peer.podSelector, pod.labels)) continue;
            entry.pods.set(key, pod);
            entry.record(++this.versionCounter, undefined, pod);
          } else if (entry.pods.delete(key)) {
            entry.record(++this.versionCounter, pod, undefined);
          }
        }
      }
    }
  }

  /** Moves one pod (by key; `now` undefined: gone) into or out of each of these selections. */
  private rematch(entries: Iterable<SelectionEntry> | undefined, key: string, now: Pod | undefined): void {
    if (!entries) return;
    for (const entry of entries) {
      const was = entry.pods.get(key);
      const is = now !== undefined && this.matches(entry, now);
      if (is) entry.pods.set(key, now);
      else if (was) entry.pods.delete(key);
      if (was || is) entry.record(++this.versionCounter, was, is ? now : undefined);
    }
  }

  /** Which pods (by key) differ from the state: by identity against the last list, else by key against the state. */
  private updatePods(pods: readonly Pod[], rebuildLocal: boolean): void {
    const changed = new Map<string, Pod | undefined>();
    if (this.pods) {
      // Diff by identity: unchanged pods are the same objects, so only new references need their keys.
      const { added, removed } = diffByIdentity(this.pods, pods);
      for (const p of removed) changed.set(keyOf(p), undefined);
      for (const p of added) changed.set(keyOf(p), p);
    } else {
      const keys = new Set<string>();
      for (const p of pods) {
        const key = keyOf(p);
        keys.add(key);
        if (this.peerByKey.get(key) !== (countsAsPeer(p) ? p : undefined) || this.badPods.get(key) !== (hasBadAddress(p) ? p : undefined))
          changed.set(key, p);
      }
      for (const key of [...this.peerByKey.keys(), ...this.badPods.keys()]) if (!keys.has(key)) changed.set(key, undefined);
    }
    this.pods = pods;
    this.applyPods(changed, rebuildLocal);
  }

  /** Bring each pod (by key; undefined: gone) to its new value: peers, claims, selections, local pods. */
  private applyPods(changed: ReadonlyMap<string, Pod | undefined>, rebuildLocal: boolean): void {
    const localNamespaces = new Set<string>();
    for (const [key, now] of changed) {
      const badNow = now && hasBadAddress(now) ? now : undefined;
      if (badNow) this.badPods.set(key, badNow);
      else this.badPods.delete(key);
      const peerNow = now && countsAsPeer(now) ? now : undefined;
      const peerBefore = this.peerByKey.get(key);
      if (peerNow === peerBefore) continue;
      if (peerBefore?.nodeName === this.nodeName) localNamespaces.add(peerBefore.namespace);
      if (peerNow?.nodeName === this.nodeName) localNamespaces.add(peerNow.namespace);
      this.allPodsVersion = ++this.versionCounter;
      if (peerBefore) this.claim(peerBefore, key, false);
      if (peerNow) this.claim(peerNow, key, true);
      if (peerBefore) {
        this.peersByNamespace.get(peerBefore.namespace)?.delete(key);
        this.peersByNode.get(peerBefore.nodeName)?.delete(key);
        this.indexLabels(peerBefore, key, false);
      }
      if (peerNow) {
        this.indexLabels(peerNow, key, true);
        this.peerByKey.set(key, peerNow);
        let inNs = this.peersByNamespace.get(peerNow.namespace);
        if (!inNs) this.peersByNamespace.set(peerNow.namespace, (inNs = new Map<string, Pod>()));
        inNs.set(key, peerNow);
        let onNode = this.peersByNode.get(peerNow.nodeName);
        if (!onNode) this.peersByNode.set(peerNow.nodeName, (onNode = new Map<string, Pod>()));
        onNode.set(key, peerNow);
      } else {
        this.peerByKey.delete(key);
      }
      // A pod's key holds its namespace, so before and now it can only be in these selections.
      const namespace = (peerNow ?? peerBefore)!.namespace;
      this.rematch(this.byNamespace.get(namespace), key, peerNow);
      this.rematch(this.crossNamespace, key, peerNow);
    }
    if (rebuildLocal) {
      // Another node: its pods by namespace, from the node's own peers.
      this.localByNamespace.clear();
      const byNamespace = new Map<string, Pod[]>();
      for (const pod of this.peersByNode.get(this.nodeName)?.values() ?? []) {
        const list = byNamespace.get(pod.namespace);
        if (list) list.push(pod);
        else byNamespace.set(pod.namespace, [pod]);
      }
      for (const [ns, pods] of byNamespace) this.localByNamespace.set(ns, pods.sort(byName));
      localNamespaces.clear();
    } else if (localNamespaces.size === 0) return;
    for (const ns of localNamespaces) {
      const pods = [...(this.peersByNamespace.get(ns)?.values() ?? [])].filter((p) => p.nodeName === this.nodeName).sort(byName);
      if (pods.length > 0) this.localByNamespace.set(ns, pods);
      else this.localByNamespace.delete(ns);
    }
    // A loop, not flatMap: asked on every node a compiler moves to.
    const local: Pod[] = [];
    for (const ns of [...this.localByNamespace.keys()].sort(cmp)) for (const pod of this.localByNamespace.get(ns)!) local.push(pod);
    this.local = local;
  }
}
