// Address sets rules refer to: one per distinct canonical content, shared by every rule that uses it.
// Rules only need a set's name; what it holds is described declaratively (MemberSpec) and resolved once
// per compile, so a cached chain can re-request its sets and a set is rebuilt only when its inputs moved.

import {
  editSorted,
  podKey,
  recordMemberDelta,
  type Chain,
  type ClusterNetworkPolicy,
  type ClusterNode,
  type DnsLearnedSet,
  type IpFamily,
  type IpSet,
  type IpSetName,
  type IpSetType,
  type MemberDelta,
  type L4Protocol,
  type LabelSelector,
  type LearnedSetOptions,
  type NetworkPolicy,
  type Pod,
  type PolicyPeer,
} from '../model/index.js';
import { containsIp, parseIp, strictV4Value, type Cidr } from '../model/address.js';
import { ipsOfFamily, type ClusterState, type Selection } from './cluster-state.js';
import { ipSetNameFor, type SetKind } from './names.js';
import { selectorMatches } from './selectors.js';

const TYPE_OF: Record<SetKind, IpSetType> = { s: 'hash:ip', n: 'hash:ip,port', b: 'hash:net', x: 'hash:net', d: 'hash:ip', q: 'hash:ip' };

/** Destinations of an egress named port: all peer pods, a selector's pods, or the pods inside an ipBlock. */
export type PodScope =
  | { readonly kind: 'all' }
  | { readonly kind: 'selector'; readonly peer: PolicyPeer; readonly namespace: string }
  | { readonly kind: 'cidrs'; readonly cidrs: readonly Cidr[]; readonly excepts: readonly Cidr[] };

export type MemberSpec =
  /** Pod IPs a selector peer matches. */
  | { readonly kind: 'selector'; readonly peer: PolicyPeer; readonly namespace: string }
  /** CIDR members, fixed by the key. */
  | { readonly kind: 'cidrs'; readonly members: readonly string[] }
  /** Ingress named port: the policy's own local targets define the number. */
  | { readonly kind: 'named-targets'; readonly policy: NetworkPolicy; readonly protocol: L4Protocol; readonly name: string }
  /** Egress named port: the destination pods define the number. */
  | { readonly kind: 'named-pods'; readonly scope: PodScope; readonly protocol: L4Protocol; readonly name: string }
  // --- ClusterNetworkPolicy (cluster-policy-chains.ts) ---
  /** `nodes` peer: InternalIP/ExternalIP addresses of the nodes whose labels match. */
  | { readonly kind: 'node-ips'; readonly nodeSelector: LabelSelector }
  /** Ingress `destinationNamedPort`: the CNP's local subjects define the number. */
  | { readonly kind: 'named-subjects'; readonly cnp: ClusterNetworkPolicy; readonly protocol: L4Protocol; readonly name: string }
  /**
   * `domainNames`: what one subject pod learns for one rule, filled at run time by the DNS agent; the
   * compiler's members are none (model/dns-egress.ts). `learnedFor` is the agent's entry without the set's name.
   */
  | { readonly kind: 'learned'; readonly options: LearnedSetOptions; readonly learnedFor: Omit<DnsLearnedSet, 'setName' | 'family'> }
  /** Addresses listed by the compile itself (the subject pods whose DNS answers are held). */
  | { readonly kind: 'listed'; readonly members: readonly string[] };

export interface SetRequest {
  readonly kind: SetKind;
  readonly key: string;
  readonly description: string;
  readonly spec: MemberSpec;
}

/**
 * A chain with the sets its rules name, in the order they named them: what a chain renderer returns. A
 * set's name is settled by its request alone (prefix, family, kind, key), so a renderer names its sets
 * without asking anyone, and the caller registers them afterwards (or again, from a cached result).
 */
export interface RenderedChain {
  readonly chain: Chain;
  readonly sets: readonly SetRequest[];
}

/** One render's set names: lives inside a renderer call, so the renderer has no effect outside it. */
export class SetNamer {
  readonly requests: SetRequest[] = [];

  constructor(
    private readonly prefix: string,
    private readonly family: IpFamily,
  ) {}

  request(req: SetRequest): IpSetName {
    this.requests.push(req);
    return nameOf(req, this.prefix, this.family);
  }
}

/** What a compile asks of the sets: the requests of its chains, members resolved at the end. */
export class IpSetRegistry {
  private readonly requests = new Map<IpSetName, SetRequest>();

  constructor(
    private readonly prefix: string,
    readonly family: IpFamily,
  ) {}

  /** The first request of a name describes the set (its description names the rule that asked first). */
  add(requests: readonly SetRequest[]): void {
    const names = namesOf(requests, this.prefix, this.family);
    for (let i = 0; i < requests.length; i++) if (!this.requests.has(names[i]!)) this.requests.set(names[i]!, requests[i]!);
  }

  entries(): [IpSetName, SetRequest][] {
    return [...this.requests].sort(([a], [b]) => (a < b ? -1 : 1));
  }
}

// Cached policy chains re-request every set they use on each compile: the name is kept with the request
// object rather than rebuilt from its key (a string built and looked up per request per compile).
const namesOfRequests = new WeakMap<SetRequest, { readonly prefix: string; readonly family: IpFamily; readonly name: IpSetName }>();
function nameOf(req: SetRequest, prefix: string, family: IpFamily): IpSetName {
  const known = namesOfRequests.get(req);
  if (known && known.prefix === prefix && known.family === family) return known.name;
  const name = ipSetNameFor(prefix, family, req.kind, req.key);
  namesOfRequests.set(req, { prefix, family, name });
  return name;
}

// A cached chain's requests come back as the same array on every compile: their names are kept with it, one
// lookup per chain instead of one per set it names.
const namesOfLists = new WeakMap<
  readonly SetRequest[],
  { readonly prefix: string; readonly family: IpFamily; readonly names: IpSetName[] }
>();
function namesOf(requests: readonly SetRequest[], prefix: string, family: IpFamily): readonly IpSetName[] {
  const known = namesOfLists.get(requests);
  if (known && known.prefix === prefix && known.family === family) return known.names;
  const names = requests.map((req) => nameOf(req, prefix, family));
  namesOfLists.set(requests, { prefix, family, names });
  return names;
}

export interface MemberContext {
  readonly state: ClusterState;
  readonly family: IpFamily;
  /** Local pods a policy selects (for ingress named ports): the same array while they are the same. */
  readonly targetsOf: (policy: NetworkPolicy) => readonly Pod[];
  /** The cluster's nodes (the same array while unchanged), for `nodes` peers. */
  readonly nodes?: readonly ClusterNode[];
  /** Local pods a ClusterNetworkPolicy selects: the same array while they are the same. */
  readonly subjectsOf?: (cnp: ClusterNetworkPolicy) => readonly Pod[];
}

/** A resolved set, with the stamp of the inputs it was built from (cache key across compiles). */
interface Built {
  readonly stamp: Stamp;
  readonly set: IpSet;
  /** For pod-selector sets: the selection version the members reflect. */
  readonly version?: number;
  /** The shared-address version the members reflect (shared addresses are left out). */
  readonly sharedVersion: number;
}

/** Resolves set requests into IpSets, reusing the previous compile's object when its inputs did not move. */
export class IpSetBuilder {
  private previous = new Map<string, Built>();
  private node: string | undefined;

  /** `node`: the node compiled (ctx.state's); the sets of another node are kept for the next one asked for. */
  build(registry: IpSetRegistry, ctx: MemberContext, node = '', everyNode = false): IpSet[] {
    // One node's compiles forget the sets it no longer asks for. A compiler asked for each node in turn keeps
    // them: the next node asks for most of them again, and a set's members do not depend on the node
    // asking (those that do, the named-port targets, carry the targets in their stamp). `everyNode`: a
    // compiler asked for each node (compile.ts) keeps them all, also across two compiles of one node.
    const next = everyNode
      ? this.previous
      : node !== this.node && this.node !== undefined
        ? new Map(this.previous)
        : new Map<string, Built>();
    this.node = node;
    const out: IpSet[] = [];
    for (const [name, req] of registry.entries()) {
      const tag = stampTag(req.spec);
      const value = stampValue(req.spec, ctx);
      const shared = tag === 'fixed' || tag === 'listed' ? 0 : ctx.state.sharedVersion;
      const old = this.previous.get(name);
      const sameStamp = old !== undefined && old.stamp.tag === tag && old.stamp.value === value && old.stamp.shared === shared;
      let built: Built;
      if (sameStamp && old.set.description === req.description) {
        built = old;
      } else if (sameStamp) {
        // Only the description moved (another rule asked first): the members are the same list.
        built = { ...old, set: { ...old.set, description: req.description } };
      } else {
        const selection = req.spec.kind === 'selector' ? ctx.state.select(req.spec.peer, req.spec.namespace) : undefined;
        const patchable = old && selection && old.version !== undefined && old.sharedVersion === ctx.state.sharedVersion;
        const patched = patchable ? patchMembers(old.set.members, selection, old.version!, ctx.family, ctx.state) : undefined;
        const members =
          patched?.members ??
          (old ? resortMembers(old.set.members, new Set(membersOf(req.spec, ctx))) : sortMembers(new Set(membersOf(req.spec, ctx))));
        // A patch says itself whether anything moved: no walk over the members to find out.
        const sameMembers = old && (patched ? members === old.set.members : sameList(old.set.members, members));
        const same = old && old.set.description === req.description && sameMembers;
        const set: IpSet = same
          ? old.set
          : {
              name,
              type: TYPE_OF[req.kind],
              family: ctx.family,
              members,
              description: req.description,
              ...(req.kind === 'x' ? { negated: true as const } : {}),
              ...(req.spec.kind === 'learned' ? { learned: req.spec.options } : {}),
            };
        if (old && patched && set !== old.set) recordMemberDelta(set, old.set, patched.delta);
        built = {
          stamp: { tag, value, shared },
          set,
          ...(selection ? { version: selection.version } : {}),
          sharedVersion: ctx.state.sharedVersion,
        };
      }
      next.set(name, built);
      out.push(built.set);
    }
    this.previous = next;
    return out;
  }
}

const objectIds = new WeakMap<object, number>();
let nextObjectId = 0;
/** A number per object: the compiler hands over the same array while its content is unchanged. */
function objectId(o: object): number {
  let id = objectIds.get(o);
  if (id === undefined) objectIds.set(o, (id = ++nextObjectId));
  return id;
}

/**
 * What the members of a set were made from, in three parts that change whenever the members might: the kind of
 * input (`tag`), its version or identity, or the listed members themselves (`value`), and the shared-address
 * version (shared addresses are left out of pod sets). Compared part by part: no string is built per set on
 * every compile.
 */
interface Stamp {
  readonly tag: StampTag;
  readonly value: number | string;
  readonly shared: number;
}

type StampTag = 'listed' | 'fixed' | 'selection' | 'targets' | 'all-pods' | 'nodes';

function stampTag(spec: MemberSpec): StampTag {
  switch (spec.kind) {
    case 'listed':
      return 'listed';
    case 'cidrs':
    case 'learned':
      return 'fixed';
    case 'selector':
      return 'selection';
    case 'named-targets':
    case 'named-subjects':
      return 'targets';
    case 'named-pods':
      return spec.scope.kind === 'selector' ? 'selection' : 'all-pods';
    case 'node-ips':
      return 'nodes';
  }
}

function stampValue(spec: MemberSpec, ctx: MemberContext): number | string {
  switch (spec.kind) {
    case 'listed':
      return spec.members.join(',');
    case 'cidrs':
    case 'learned':
      return 0;
    case 'selector':
      return ctx.state.select(spec.peer, spec.namespace).version;
    case 'named-targets':
      return objectId(ctx.targetsOf(spec.policy));
    case 'named-pods':
      return spec.scope.kind === 'selector' ? ctx.state.select(spec.scope.peer, spec.scope.namespace).version : ctx.state.allPodsVersion;
    case 'node-ips':
      return objectId(ctx.nodes ?? NO_NODES);
    case 'named-subjects':
      return objectId(ctx.subjectsOf?.(spec.cnp) ?? NO_PODS);
  }
}

/**
 * A pod's addresses of the family that may stand for it in a set: an address another pod also claims is
 * left out, so neither pod's traffic matches a peer rule by it (fail closed until the conflict clears).
 */
function peerIps(pod: Pod, family: IpFamily, state: ClusterState): readonly string[] {
  const ips = ipsOfFamily(pod, family);
  return ips.some((ip) => state.isShared(ip)) ? ips.filter((ip) => !state.isShared(ip)) : ips;
}

function membersOf(spec: MemberSpec, ctx: MemberContext): string[] {
  switch (spec.kind) {
    case 'selector': {
      const out: string[] = [];
      for (const p of ctx.state.select(spec.peer, spec.namespace).pods.values())
        for (const ip of peerIps(p, ctx.family, ctx.state)) out.push(ip);
      return out;
    }
    case 'cidrs':
    case 'listed':
      return [...spec.members];
    // The agent's, never the compiler's (plan.ts leaves them alone).
    case 'learned':
      return [];
    case 'named-targets':
      return namedMembers(ctx.targetsOf(spec.policy), spec.protocol, spec.name, ctx.family, ctx.state);
    case 'named-pods':
      return namedMembers(podsInScope(spec.scope, ctx), spec.protocol, spec.name, ctx.family, ctx.state);
    case 'node-ips':
      return (ctx.nodes ?? NO_NODES)
        .filter((n) => selectorMatches(spec.nodeSelector, n.labels ?? {}))
        .flatMap((n) => n.addresses.filter((ip) => parseIp(ip)?.family === ctx.family));
    case 'named-subjects':
      return namedMembers(ctx.subjectsOf?.(spec.cnp) ?? NO_PODS, spec.protocol, spec.name, ctx.family, ctx.state);
  }
}

const NO_NODES: readonly ClusterNode[] = [];
const NO_PODS: readonly Pod[] = [];

function podsInScope(scope: PodScope, ctx: MemberContext): Iterable<Pod> {
  switch (scope.kind) {
    case 'all':
      return ctx.state.allPeers();
    case 'selector':
      return ctx.state.select(scope.peer, scope.namespace).pods.values();
    case 'cidrs':
      return [...ctx.state.allPeers()].filter((pod) =>
        pod.ips.some((ip) => {
          const parsed = parseIp(ip);
          return (
            parsed?.family === ctx.family &&
            scope.cidrs.some((c) => containsIp(c, ctx.family, parsed.value)) &&
            !scope.excepts.some((c) => containsIp(c, ctx.family, parsed.value))
          );
        }),
      );
  }
}

// "port ... can either be a numerical or named port on a pod" — resolved per destination pod, from its
// own container ports with the same protocol; a destination without that name does not match.
function namedMembers(pods: Iterable<Pod>, protocol: L4Protocol, name: string, family: IpFamily, state: ClusterState): string[] {
  const out: string[] = [];
  for (const pod of pods) {
    const port = pod.ports.find((p) => p.name === name && p.protocol.toLowerCase() === protocol)?.containerPort;
    if (port === undefined) continue;
    for (const ip of peerIps(pod, family, state)) out.push(`${ip},${protocol}:${port}`);
  }
  return out;
}

/** Order members the way humans read addresses (numeric within dotted quads), stable across runs. */
export function sortMembers(members: Iterable<string>): string[] {
  const list = [...members];
  // Nearly every member is a plain IPv4 address: sort those by value (already parsed once per address),
  // packed with their index into one float so a typed-array sort does the work.
  if (list.length < INDEX_RANGE) {
    const packed = new Float64Array(list.length);
    let allV4 = true;
    for (let i = 0; i < list.length && allV4; i++) {
      const v4 = v4Value(list[i]!);
      if (v4 === undefined) allV4 = false;
      else packed[i] = v4 * INDEX_RANGE + i;
    }
    if (allV4) {
      packed.sort();
      const out = new Array<string>(list.length);
      for (let i = 0; i < packed.length; i++) out[i] = list[packed[i]! % INDEX_RANGE]!;
      return out;
    }
  }
  // Keys are computed once per member, not once per comparison: this sort runs over every set member.
  return list
    .map((m) => [memberSortKey(m), m] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, m]) => m);
}

/** 2^21: an index below it times a 32-bit value stays an exact float (2^53). */
const INDEX_RANGE = 2_097_152;

/** The value of a plain IPv4 address (strict dotted quad), else undefined: read from its characters, as parseIp reads it. */
const v4Value = (member: string): number | undefined => (member.length <= 15 ? strictV4Value(member) : undefined);

/**
 * sortMembers' order for two members. Two plain IPv4 addresses compare by value, which is the order of
 * their padded keys (four octets of five digits each).
 */
function compareMembers(a: string, b: string): number {
  const va = v4Value(a);
  const vb = va === undefined ? undefined : v4Value(b);
  if (va !== undefined && vb !== undefined) return va - vb;
  const ka = memberSortKey(a);
  const kb = memberSortKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * A pod-selector set's members after the selection's changes since `version`, applied to the members it
 * had then, and what moved: a pod change touches an address or two of a set that may hold thousands, found
 * by binary search (editSorted). Undefined when the selection no longer remembers that far back, or changed
 * too much to be worth patching.
 */
function patchMembers(
  before: readonly string[],
  selection: Selection,
  version: number,
  family: IpFamily,
  state: ClusterState,
): { readonly members: readonly string[]; readonly delta: MemberDelta } | undefined {
  const changes = selection.changesSince(version);
  if (!changes || changes.length > 64) return undefined;
  // Per pod, from what it was before the first change to what it is after the last: a pod that came and
  // went again since (a set kept while other nodes or clusters were compiled) is neither.
  const spans = new Map<string, { readonly first: Pod | undefined; last: Pod | undefined }>();
  for (const c of changes) {
    const pod = (c.before ?? c.after)!;
    const key = podKey(pod);
    const span = spans.get(key);
    if (span) span.last = c.after;
    else spans.set(key, { first: c.before, last: c.after });
  }
  const gone = new Set([...spans.values()].flatMap((s) => (s.first ? ipsOfFamily(s.first, family) : [])));
  const come = new Set([...spans.values()].flatMap((s) => (s.last ? peerIps(s.last, family, state) : [])));
  for (const ip of come) gone.delete(ip);
  // An address that left may still be another selected pod's (an IP handed on while both are listed). Asked
  // of the address's claimants, not by walking the selection: a namespaceSelector set may hold 40,000 pods.
  for (const ip of gone) if (state.claimantsOf(ip).some((key) => selection.pods.has(key))) gone.delete(ip);
  return editSorted(before, gone, come, compareMembers);
}

/** `now` in sortMembers order, given the sorted members a set had before. */
function resortMembers(before: readonly string[], now: ReadonlySet<string>): readonly string[] {
  const kept = before.filter((m) => now.has(m));
  if (kept.length === now.size) return kept;
  // Nothing kept (another node's named-port targets): the members sorted, with no merge to walk.
  return kept.length === 0 ? sortMembers(now) : mergeMembers(kept, now);
}

/**
 * `sorted` (in sortMembers order) with `more` merged in, each once. A change adds a member or two to a set
 * that may hold thousands: only the new ones are sorted.
 */
function mergeMembers(sorted: readonly string[], more: Iterable<string>): readonly string[] {
  const out: string[] = [];
  let i = 0;
  let added = false;
  for (const m of sortMembers(more)) {
    while (i < sorted.length && compareMembers(sorted[i]!, m) < 0) out.push(sorted[i++]!);
    if (sorted[i] !== m) {
      out.push(m);
      added = true;
    }
  }
  // Nothing new (a pod that changed but kept its address): the same array, so the caller's comparison is
  // one identity check instead of a walk over every member.
  if (!added) return sorted;
  while (i < sorted.length) out.push(sorted[i++]!);
  return out;
}

// Sets are re-sorted whenever a member moves; the same addresses come back every time, so their keys are kept.
const sortKeys = new Map<string, string>();
function memberSortKey(member: string): string {
  let key = sortKeys.get(member);
  if (key === undefined) {
    key = member.replace(/\d+/g, (d) => d.padStart(5, '0'));
    if (sortKeys.size >= 1_000_000) sortKeys.clear();
    sortKeys.set(member, key);
  }
  return key;
}

const sameList = (a: readonly string[], b: readonly string[]): boolean =>
  a === b || (a.length === b.length && a.every((v, i) => v === b[i]));
