// The compiler: (cluster snapshot, node settings) → the desired dataplane state. No I/O, no clock, no
// logging; a bad object becomes a Problem and everything else still compiles.
//
// `compile()` is the pure function. A `Compiler` instance gives the same answer for the same inputs but
// remembers its previous work, so the daemon's next compile redoes only what the change touched. It works
// in two steps, as Felix's calc graph and RuleRenderer do:
//   resolution (resolution.ts): which policies and ClusterNetworkPolicies select each local pod, kept
//     incrementally;
//   rendering: policy chains per policy object (policy-chains.ts), each pod's chains from its resolved
//     selection (endpoint-chains.ts), the dispatch trees (dispatch.ts), all pure functions of their inputs.
// Rendered chains are remembered by the inputs they came from (memo.ts: typed keys) and set members per
// selector version, so unchanged chains and sets come back as the same objects, which the renderer and
// planner exploit. All of that lives in one object made from the settings (render-memory.ts).

import type {
  Chain,
  ClusterSnapshot,
  DesiredState,
  DnsLearnedSet,
  FamilyState,
  IpFamily,
  NetworkPolicy,
  NodeSettings,
  Pod,
  Problem,
} from '../model/index.js';
import { defaultDnsLearningSettings, emptyFamilyState } from '../model/index.js';
import { parseCidr, podAddressProblem } from '../model/address.js';
import { admit, type BudgetUse } from './budget.js';
import { ClusterPolicyCompiler, type CnpFamilyResult } from './cluster-policy.js';
import { ClusterState, ipsOfFamily } from './cluster-state.js';
import type { DispatchEntry } from './dispatch.js';
import { dispatchSideChains } from './dispatch-sides.js';
import { endpointChains, type EndpointChains, type EndpointRenderContext } from './endpoint-chains.js';
import { IpSetRegistry, sortMembers, type SetRequest } from './ipsets.js';
import { ipSetNameFor } from './names.js';
import { sameData } from './memo.js';
import { policyChain } from './policy-chains.js';
import { PolicyTargets, type CheckedPolicy } from './policy-targets.js';
import { EndpointResolver, type Selecting } from './resolution.js';
import { RenderMemory, type DispatchSide, type PodEndpoint, type PolicyChains } from './render-memory.js';
import { sharedAddressChains, sharedAddressProblems, type SharedAddresses } from './shared-addresses.js';
import { forwardChain, hostPassChain, inputChain, outputChain, type DnsWatch } from './static-chains.js';

export interface CompileResult {
  readonly desired: DesiredState;
  readonly problems: readonly Problem[];
  /** The node budget's use after admission; absent without a budget. */
  readonly budget?: BudgetUse;
}

/** The pure compiler: a fresh Compiler for every call. */
export function compile(snapshot: ClusterSnapshot, settings: NodeSettings): CompileResult {
  return new Compiler().compile(snapshot, settings);
}

export class Compiler {
  private readonly state: ClusterState;
  /** Everything rendered that the next compile may reuse, made from the settings (render-memory.ts). */
  private memory = new RenderMemory(undefined);
  /** The snapshot compiled last: the next one of the same source can say what changed since. */
  private lastSnapshot: ClusterSnapshot | undefined;
  private podsVersion = -1;
  private podProblems: readonly Problem[] = [];
  /** Which local pods each NetworkPolicy selects (policy-targets.ts). */
  private readonly targets: PolicyTargets;
  /** Which policies and CNPs select each local pod (resolution.ts). */
  private readonly resolver = new EndpointResolver();
  /** What the resolver was last given, made from the list of active policies it came from (the same while that is). */
  private selecting: { readonly from: readonly CheckedPolicy[] | undefined; readonly list: readonly Selecting<NetworkPolicy>[] } = {
    from: undefined,
    list: [],
  };
  /** ClusterNetworkPolicy tiers (cluster-policy.ts). */
  private readonly cnp = new ClusterPolicyCompiler();
  private lastNodes: ClusterSnapshot['nodes'] = [];
  private ipv6Wanted: { readonly memory: RenderMemory; readonly local: readonly Pod[]; readonly wanted: boolean } | undefined;
  private lastNodeName: string | undefined;

  /**
   * `everyNode`: the compiler is asked for each node of a cluster (or of two related clusters) in turn, and
   * keeps every selection it filled: a node compiled twice in a row (a diff's old and new cluster) would
   * otherwise forget those only the other nodes ask for, and the next node would fill them again.
   */
  constructor(private readonly everyNode = false) {
    this.state = new ClusterState({ labelIndex: everyNode });
    this.targets = new PolicyTargets(this.state);
  }

  compile(snapshot: ClusterSnapshot, settings: NodeSettings): CompileResult {
    if (!sameData(settings, this.memory.settings)) this.memory = this.memoryFor(settings);
    const delta = this.lastSnapshot ? snapshot.changes?.since(this.lastSnapshot) : undefined;
    this.lastSnapshot = snapshot;
    this.state.update(snapshot, settings.nodeName, delta);
    if (this.state.podsVersion !== this.podsVersion) {
      this.podsVersion = this.state.podsVersion;
      // After a delta, from the state: filtering the snapshot's pods would build its whole list (O(pods)) on
      // every pod change while any pod anywhere has a bad address. The store hands out pods in key order.
      this.podProblems = podProblems(delta ? this.state.badAddressesByKey() : badInSnapshotOrder(snapshot, this.state.badAddresses));
    }
    this.targets.update(snapshot, delta);
    const problems: Problem[] = [...this.podProblems, ...this.targets.problems()];
    const { policies, budget } = this.withinBudget(this.targets.active(), settings, problems);
    const shared = this.state.shared();
    for (const [ip, owners] of shared) problems.push(...sharedAddressProblems(ip, owners));
    problems.push(...this.cnp.update(snapshot.clusterPolicies, this.state));
    if (policies !== this.selecting.from)
      this.selecting = { from: policies, list: policies.map((cp) => ({ item: cp.policy, targets: cp.targets })) };
    this.resolver.update(this.selecting.list, this.cnp.selecting());
    this.lastNodes = snapshot.nodes;
    const learned: DnsLearnedSet[] = [];
    const v4 = this.compileFamily(4, policies, settings, shared, learned);
    const v6 = this.wantsIpv6(settings) ? this.compileFamily(6, policies, settings, shared, learned) : emptyFamilyState(6);
    this.memory.endpoints.rotate();
    this.memory.interned.rotate();
    // Selections no compile of this node asked for are forgotten; not when the node changed (a compiler asked
    // for each node of a cluster in turn): the next node asks for most of them again, and one filled anew
    // gets a new version, so its set would be resolved anew too.
    if (settings.nodeName === this.lastNodeName && !this.everyNode) this.state.sweep();
    this.lastNodeName = settings.nodeName;
    // The DNS agent's part (model/dns-egress.ts): present only while some rule learns names.
    const dns = learned.length > 0 ? { settings: settings.dnsEgress ?? defaultDnsLearningSettings, sets: learned } : undefined;
    return { desired: { v4, v6, ...(dns ? { dns } : {}) }, problems, ...(budget ? { budget } : {}) };
  }

  /**
   * New settings: nothing rendered before is reused, except what every node renders alike when only the node
   * changed. The last node's own memory is let go: a map compiles each node's two clusters one after the
   * other and never comes back to a node, and what one node kept (its pods' chains, their keys, its dispatch
   * trees) would otherwise stay alive, and be copied by the collector, through every node after it.
   */
  private memoryFor(settings: NodeSettings): RenderMemory {
    const last = this.memory;
    return new RenderMemory(settings, last.clusterWide.fits(settings) ? last.clusterWide : undefined);
  }

  /**
   * Validation ahead of compile(), one policy at a time, for a caller that must keep its event loop
   * answering (policy-targets.ts); says whether there was any work. The result is the same either way.
   */
  prepare(policy: NetworkPolicy): boolean {
    return this.targets.prepare(policy);
  }

  /**
   * The node budget (budget.ts) over the valid policies this node programs: those it cannot take fail
   * closed, as an invalid policy does, each with a Problem. Decided from the policies alone, so a delta
   * compile decides as a fresh one does.
   */
  private withinBudget(
    policies: readonly CheckedPolicy[],
    settings: NodeSettings,
    problems: Problem[],
  ): { policies: readonly CheckedPolicy[]; budget?: BudgetUse } {
    if (!settings.budget) return { policies };
    // Admission walks every policy: decided again only when the list of active policies moved.
    if (this.memory.admitted?.from !== policies) this.memory.admitted = { from: policies, ...this.admit(policies, settings.budget) };
    problems.push(...this.memory.admitted.problems);
    return { policies: this.memory.admitted.policies, budget: this.memory.admitted.budget };
  }

  private admit(
    policies: readonly CheckedPolicy[],
    budget: NonNullable<NodeSettings['budget']>,
  ): { policies: readonly CheckedPolicy[]; budget: BudgetUse; problems: readonly Problem[] } {
    const {
      refused,
      problems: over,
      used,
    } = admit(
      policies.filter((cp) => cp.valid).map((cp) => cp.policy),
      budget,
    );
    const use = { ...used, refused: refused.size };
    if (refused.size === 0) return { policies, budget: use, problems: over };
    return { policies: policies.map((cp) => (refused.has(cp.policy) ? { ...cp, valid: false } : cp)), budget: use, problems: over };
  }

  /** wantsFamily(6), decided again only when the settings or the local pods moved (it reads every local pod). */
  private wantsIpv6(settings: NodeSettings): boolean {
    const local = this.state.localPods;
    if (this.ipv6Wanted?.memory !== this.memory || this.ipv6Wanted.local !== local)
      this.ipv6Wanted = { memory: this.memory, local, wanted: this.wantsFamily(6, settings) };
    return this.ipv6Wanted.wanted;
  }

  private wantsFamily(family: IpFamily, settings: NodeSettings): boolean {
    return (
      settings.podCidrs.some((c) => {
        const parsed = parseCidr(c);
        return parsed.ok && parsed.cidr.family === family;
      }) || this.state.localPods.some((p) => ipsOfFamily(p, family).length > 0)
    );
  }

  private compileFamily(
    family: IpFamily,
    policies: readonly CheckedPolicy[],
    settings: NodeSettings,
    shared: SharedAddresses,
    learned: DnsLearnedSet[],
  ): FamilyState {
    const sets = new IpSetRegistry(settings.ipsetPrefix, family);
    const { chains: policyChains, targetsByPolicy } = this.policyChainsOf(family, policies, sets, settings);
    const cnp = this.cnp.active ? this.cnp.compileFamily(family, sets, this.memory.chains, settings) : undefined;
    const dns = this.dnsWatch(family, sets, settings, learned);
    // Pods → this node's own addresses (INPUT): only while some CNP exists. On IPv6 the chain first lets
    // the pod's neighbour discovery to the node through (static-chains.ts inputChain).
    const hostSide = cnp !== undefined;
    const pods = this.endpointsOf({ family, names: this.memory.names, settings, hostSide }, cnp, shared);
    const dispatch = [
      ...this.dispatchOf(family, 'from', pods.entries.from, settings),
      ...this.dispatchOf(family, 'to', pods.entries.to, settings),
    ];
    const forward = dns
      ? this.fixedChain('forward-dns', family, () => forwardChain(this.memory.names, settings, family, dns))
      : this.fixedChain('forward', family, () => forwardChain(this.memory.names, settings, family));
    const hostChains = hostSide ? this.toNodeChains(family, settings, pods, dns) : [];
    const output = dns ? [this.fixedChain('output-dns', family, () => outputChain(this.memory.names, dns))] : [];

    const ipsets = this.memory.setBuilder(family).build(
      sets,
      {
        state: this.state,
        family,
        targetsOf: (policy) => targetsByPolicy.get(policy) ?? NO_PODS,
        nodes: this.lastNodes,
        subjectsOf: this.cnp.subjectsOf,
      },
      settings.nodeName,
      this.everyNode,
    );

    return {
      family,
      ipsets,
      chains: [forward, ...dispatch, ...pods.workload, ...policyChains, ...(cnp?.chains ?? []), ...hostChains, ...output],
      hooks: dns ? this.memory.hooksWithDns : hostSide ? this.memory.hooksWithInput : this.memory.hooks,
    };
  }

  /**
   * The learned sets the CNP chains asked for (one per `domainNames` rule, subject pod and family), added to
   * `learned` for the DNS agent, and the set of those pods' addresses whose DNS the rules watch; undefined
   * when no rule learns names in this family.
   */
  private dnsWatch(family: IpFamily, sets: IpSetRegistry, settings: NodeSettings, learned: DnsLearnedSet[]): DnsWatch | undefined {
    const pods = new Set<string>();
    for (const [setName, req] of sets.entries()) {
      if (req.spec.kind !== 'learned') continue;
      learned.push({ setName, family, ...req.spec.learnedFor });
      pods.add(req.spec.learnedFor.podAddress);
    }
    if (pods.size === 0) return undefined;
    const key = 'pods with domainNames egress';
    sets.add([{ kind: 'q', key, description: key, spec: { kind: 'listed', members: sortMembers(pods) } }]);
    return { subjects: ipSetNameFor(settings.ipsetPrefix, family, 'q', key), settings: settings.dnsEgress ?? defaultDnsLearningSettings };
  }

  /** Every local pod of the family rendered from its resolved selection, and the dispatch entries to its chains. */
  private endpointsOf(context: EndpointRenderContext, cnp: CnpFamilyResult | undefined, shared: SharedAddresses): RenderedEndpoints {
    const { family, names, settings, hostSide } = context;
    const out: RenderedEndpoints = { workload: [], toNode: [], entries: { from: [], to: [], host: [] } };
    const lastOfPod = this.memory.podEndpoints[family];
    for (const pod of this.state.localPods) {
      const ips = ipsOfFamily(pod, family);
      if (ips.length === 0) continue;
      const selection = this.resolver.selectionOf(pod);
      // The pod as the last compile rendered it, when nothing its chains depend on moved: under churn nearly
      // every local pod, each of which otherwise costs a key, closures and entries on every compile.
      const last = lastOfPod.get(pod);
      if (
        last &&
        last.hostSide === hostSide &&
        last.policies === selection.policies &&
        last.clusterPolicies === selection.clusterPolicies &&
        !ips.some((a) => shared.has(a))
      ) {
        out.workload.push(last.chains.ingress, last.chains.egress);
        for (const chain of last.chains.verdictCopiesOf) cnp!.verdictOf(chain);
        if (last.chains.host) out.toNode.push(last.chains.host);
        out.entries.to.push(...last.to);
        out.entries.from.push(...last.from);
        if (hostSide) out.entries.host.push(...last.host);
        continue;
      }
      const ip = ips[0]!;
      // Interned when made (the memo keeps the interned objects) and again when used (then the same object
      // comes back at once): a pod re-rendered because an object selecting it was replaced keeps the chain
      // objects whose content stayed the same.
      const intern = (chain: Chain): Chain => this.memory.interned.intern(family, chain);
      const render = (): EndpointChains => {
        const made = endpointChains({ podKey: `${pod.namespace}/${pod.name}`, ip }, selection, context);
        return { ...made, ingress: intern(made.ingress), egress: intern(made.egress), ...(made.host ? { host: intern(made.host) } : {}) };
      };
      // Everything the chains depend on (the settings are fixed for this Compiler). A compiler asked for each
      // node in turn renders each pod once (its next compile of the node reuses the pod as rendered, above)
      // and never comes back to the node: it keeps no memo, which would cost a key and nested maps per pod.
      const chains = this.everyNode
        ? render()
        : this.memory.endpoints.get([family, hostSide, pod.namespace, pod.name, ip, selection.policies, selection.clusterPolicies], render);
      const used = { ...chains, ingress: intern(chains.ingress), egress: intern(chains.egress) };
      if (chains.host) used.host = intern(chains.host);
      out.workload.push(used.ingress, used.egress);
      for (const chain of chains.verdictCopiesOf) cnp!.verdictOf(chain);
      if (used.host) out.toNode.push(used.host);
      const made: PodEndpoint = { ...selection, hostSide, chains: used, to: [], from: [], host: [] };
      for (const address of ips) {
        if (shared.has(address)) continue;
        made.to.push({ ip: address, target: chains.ingress.name });
        made.from.push({ ip: address, target: chains.egress.name });
        if (hostSide) made.host.push({ ip: address, target: chains.host?.name ?? names.hostPass });
      }
      out.entries.to.push(...made.to);
      out.entries.from.push(...made.from);
      out.entries.host.push(...made.host);
      // Kept for reuse only when every address got its entries: one left out as shared must come back into
      // dispatch once a single pod holds it again, which a reused, entry-less record would never do.
      if (made.to.length === ips.length) lastOfPod.set(pod, made);
      else lastOfPod.delete(pod);
    }
    for (const [ip, owners] of shared) {
      // Dispatch concerns this node's pods only; the address is still left out of every peer set (ipsets.ts).
      if (owners.some((p) => p.nodeName === settings.nodeName) && ipsOfFamily(owners[0]!, family).includes(ip)) {
        for (const chain of sharedAddressChains(ip, owners, names)) {
          out.workload.push(this.memory.interned.intern(family, chain));
          const ingress = chain.role.kind === 'workload' && chain.role.direction === 'ingress';
          (ingress ? out.entries.to : out.entries.from).push({ ip, target: chain.name });
        }
      }
    }
    return out;
  }

  /**
   * INPUT's chains: an address of this node's pod CIDR that no programmed pod has is dropped here too
   * (fail-closed), as in FORWARD; an address shared by two pods likewise.
   */
  private toNodeChains(family: IpFamily, settings: NodeSettings, pods: RenderedEndpoints, dns: DnsWatch | undefined): Chain[] {
    const { hostPass } = this.memory.names;
    return [
      dns
        ? this.fixedChain('input-dns', family, () => inputChain(this.memory.names, settings, family, dns))
        : this.fixedChain('input', family, () => inputChain(this.memory.names, settings, family)),
      // Only while some local pod has no CNP egress tier (an unreferenced chain of ours reads as a leftover).
      ...(pods.entries.host.some((e) => e.target === hostPass) ? [(this.memory.hostPass ??= hostPassChain(this.memory.names))] : []),
      ...this.dispatchOf(family, 'host', pods.entries.host, settings),
      ...pods.toNode,
    ];
  }

  /** Only policies that select a local pod of this family are programmed (Felix: referenced chains only). */
  private policyChainsOf(family: IpFamily, policies: readonly CheckedPolicy[], sets: IpSetRegistry, settings: NodeSettings): PolicyChains {
    // The same policies as last time (policy-targets.ts hands over the same array): the same chains, and
    // their sets requested again in one pass, instead of a walk over every policy and direction.
    const last = this.memory.lastPolicyChains.get(family);
    if (last?.policies === policies) {
      for (const list of last.requests) sets.add(list);
      return last;
    }
    const chains: Chain[] = [];
    const targetsByPolicy = new Map<NetworkPolicy, readonly Pod[]>();
    const requests: (readonly SetRequest[])[] = [];
    const render = { names: this.memory.names, settings };
    // Targets are local pods: when every local pod has an address of the family, so has every target, and
    // no target need be looked at (a compiler asked for each node in turn does this for every policy).
    const allOfFamily = this.localPodsAllOf(family);
    for (const cp of policies) {
      const targets = allOfFamily ? cp.targets : targetsOfFamily(cp.targets, family);
      if (targets.length === 0) continue;
      targetsByPolicy.set(cp.policy, targets);
      for (const direction of ['ingress', 'egress'] as const) {
        if (!cp.types.includes(direction === 'ingress' ? 'Ingress' : 'Egress')) continue;
        const rendered = this.memory.chains.get(cp.policy, [direction, family, cp.valid, null], () =>
          policyChain({ policy: cp.policy, direction, family, valid: cp.valid }, render),
        );
        chains.push(rendered.chain);
        requests.push(rendered.sets);
        sets.add(rendered.sets);
      }
    }
    const made = { policies, chains, targetsByPolicy, requests };
    this.memory.lastPolicyChains.set(family, made);
    return made;
  }

  /** Whether every local pod has an address of the family; decided again only when the local pods moved. */
  private localPodsAllOf(family: IpFamily): boolean {
    const local = this.state.localPods;
    if (this.localFamilies?.local !== local)
      this.localFamilies = {
        local,
        4: local.every((p) => ipsOfFamily(p, 4).length > 0),
        6: local.every((p) => ipsOfFamily(p, 6).length > 0),
      };
    return this.localFamilies[family];
  }
  private localFamilies: { readonly local: readonly Pod[]; readonly 4: boolean; readonly 6: boolean } | undefined;

  /**
   * The dispatch tree of one side: rebuilt only when its entries changed; a pod coming or going changes one
   * branch of the tree, and the other chains come back as the same objects.
   */
  private dispatchOf(family: IpFamily, side: DispatchSide, entries: readonly DispatchEntry[], settings: NodeSettings): readonly Chain[] {
    const key = [family, side] as const;
    const last = this.memory.dispatch.get(key);
    if (last && sameEntries(last.entries, entries)) return last.chains.map((chain) => this.memory.interned.intern(family, chain));
    const chains = dispatchSideChains(side, family, entries, this.memory.names, settings).map((chain) =>
      this.memory.interned.intern(family, chain),
    );
    this.memory.dispatch.set(key, { entries, chains });
    return chains;
  }

  /** A chain that depends on the settings and the family only. */
  private fixedChain(kind: 'forward' | 'input' | 'forward-dns' | 'input-dns' | 'output-dns', family: IpFamily, make: () => Chain): Chain {
    let chain = this.memory.fixed.get([kind, family]);
    if (!chain) this.memory.fixed.set([kind, family], (chain = make()));
    return chain;
  }
}

const badInSnapshotOrder = (snapshot: ClusterSnapshot, bad: ReadonlySet<Pod>): readonly Pod[] =>
  bad.size === 0 ? [] : snapshot.pods.filter((pod) => bad.has(pod));

/** Problems of pods whose addresses do not parse (the state tracks which pods those are), in the given order. */
function podProblems(bad: readonly Pod[]): Problem[] {
  return bad.flatMap((pod) =>
    pod.ips.flatMap((ip) => {
      const why = podAddressProblem(ip);
      return why === undefined
        ? []
        : [
            {
              object: `Pod ${pod.namespace}/${pod.name}`,
              field: 'status.podIPs',
              message: `${why}; ignored`,
              severity: 'warning' as const,
            },
          ];
    }),
  );
}

const NO_PODS: readonly Pod[] = [];

// The same array while the policy's targets are the same: named-port sets built from it are reused. The
// targets themselves when all have an address of the family (single-stack clusters: every policy), found
// without a WeakMap entry per array: a compiler asked for each node in turn meets new arrays on every node.
const targetsByFamily = new WeakMap<readonly Pod[], { 4?: readonly Pod[]; 6?: readonly Pod[] }>();
function targetsOfFamily(targets: readonly Pod[], family: IpFamily): readonly Pod[] {
  if (targets.every((p) => ipsOfFamily(p, family).length > 0)) return targets;
  let split = targetsByFamily.get(targets);
  if (!split) targetsByFamily.set(targets, (split = {}));
  return (split[family] ??= targets.filter((p) => ipsOfFamily(p, family).length > 0));
}

interface RenderedEndpoints {
  /** Workload chains, two per pod (ingress, egress) in pod order, then those of shared addresses. */
  readonly workload: Chain[];
  /** Pods' chains to this node. */
  readonly toNode: Chain[];
  readonly entries: Record<DispatchSide, DispatchEntry[]>;
}

const sameEntries = (a: readonly DispatchEntry[], b: readonly DispatchEntry[]): boolean =>
  a.length === b.length && a.every((e, i) => e.ip === b[i]!.ip && e.target === b[i]!.target);
