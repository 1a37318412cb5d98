// The compiler: (cluster snapshot, node settings) → the desired dataplane state. No I/O, no clock, no
// logging; a bad object becomes a Problem and everything else still compiles.
//
// `compile()` is the pure function. A `Compiler` instance gives the same answer for the same inputs but
// remembers its previous work, so the daemon's next compile redoes only what the change touched: policy
// chains are cached per policy object, workload and dispatch chains per content, set members per selector
// version. Unchanged chains and sets come back as the same objects, which the renderer and planner exploit.

import type {
  Chain,
  ChainName,
  ClusterSnapshot,
  DesiredState,
  FamilyState,
  Hook,
  IpFamily,
  IpSetName,
  NetworkPolicy,
  NodeSettings,
  Pod,
  PolicyType,
  Problem,
  Rule,
} from '../model/index.js';
import { emptyFamilyState } from '../model/index.js';
import { familyBits, formatCidr, parseCidr, podAddressProblem } from '../model/address.js';
import { admit, type BudgetUse } from './budget.js';
import { ClusterPolicyCompiler } from './cluster-policy.js';
import { ClusterState, ipsOfFamily } from './cluster-state.js';
import { dispatchChains } from './dispatch.js';
import { flowLogRules } from './flow-log.js';
import { IpSetBuilder, IpSetRegistry, type SetRequest } from './ipsets.js';
import { chainNames, type ChainNames } from './names.js';
import { policyChain, type Direction } from './policy-chains.js';
import { byNamespaceKey, PolicyIndex } from './policy-index.js';
import { selectorMatches } from './selectors.js';
import { sharedAddressChains, sharedAddressProblems, type SharedAddresses } from './shared-addresses.js';
import { hostWorkloadChain } from './cluster-policy-host.js';
import { forwardChain, forwardHook, hostPassChain, inputChain, inputHook } from './static-chains.js';
import { validatePolicy } from './validate.js';
import { workloadChain } from './workload-chains.js';

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

interface CheckedPolicy {
  readonly policy: NetworkPolicy;
  readonly key: string;
  readonly valid: boolean;
  readonly types: readonly PolicyType[];
  /** Local pods it selects. */
  readonly targets: readonly Pod[];
}

interface CachedPolicyChain {
  readonly chain: Chain;
  readonly requests: readonly SetRequest[];
}

/** Results reused while the inputs they came from are the same objects (or the same content). */
class Memo<V> {
  private previous = new Map<string, V>();
  private current = new Map<string, V>();
  get(key: string, make: () => V): V {
    let v = this.current.get(key) ?? this.previous.get(key);
    if (v === undefined) v = make();
    this.current.set(key, v);
    return v;
  }
  /** Drop what the last compile did not use. */
  rotate(): void {
    this.previous = this.current;
    this.current = new Map();
  }
}

export class Compiler {
  private readonly state = new ClusterState();
  private settingsKey = '';
  private names: ChainNames = chainNames('nf-');
  private hooks: readonly Hook[] = [];
  /** With ClusterNetworkPolicies: FORWARD and INPUT (pods to this node). */
  private hooksWithInput: readonly Hook[] = [];
  /** The snapshot compiled last: the next one of the same source can say what changed since. */
  private lastSnapshot: ClusterSnapshot | undefined;
  private podsVersion = -1;
  private podProblems: readonly Problem[] = [];
  private readonly index = new PolicyIndex();
  /** Validation problems per namespace (only namespaces with some), and all of them in policy key order. */
  private readonly problemsByNamespace = new Map<string, readonly Problem[]>();
  private policyProblems: readonly Problem[] = [];
  /** Per namespace with local pods: its policies that select one, while its policies and local pods are the same arrays. */
  private readonly activeByNamespace = new Map<
    string,
    { readonly policies: readonly NetworkPolicy[]; readonly local: readonly Pod[]; readonly active: readonly CheckedPolicy[] }
  >();
  private localNamespaces: { readonly local: readonly Pod[]; readonly sorted: readonly string[] } = { local: [], sorted: [] };
  private validations = new WeakMap<NetworkPolicy, readonly Problem[]>();
  private checked = new WeakMap<NetworkPolicy, { readonly local: readonly Pod[]; readonly checked: CheckedPolicy }>();
  private policyChains = new WeakMap<NetworkPolicy, Map<string, CachedPolicyChain>>();
  private chains = new Memo<Chain | Chain[]>();
  private readonly setBuilders = new Map<IpFamily, IpSetBuilder>();
  /** ClusterNetworkPolicy tiers (cluster-policy.ts). */
  private readonly cnp = new ClusterPolicyCompiler();
  private lastNodes: ClusterSnapshot['nodes'] = [];

  compile(snapshot: ClusterSnapshot, settings: NodeSettings): CompileResult {
    const settingsKey = JSON.stringify(settings);
    if (settingsKey !== this.settingsKey) this.reset(settingsKey, settings);
    const delta = this.lastSnapshot ? snapshot.changes?.since(this.lastSnapshot) : undefined;
    this.lastSnapshot = snapshot;
    this.state.update(snapshot, settings.nodeName, delta);
    if (this.state.podsVersion !== this.podsVersion) {
      this.podsVersion = this.state.podsVersion;
      // After a delta, from the state: filtering the snapshot's pods would build its whole list (O(pods)) on
      // every pod change while any pod anywhere has a bad address. The store hands out pods in key order.
      this.podProblems = podProblems(delta ? this.state.badAddressesByKey() : badInSnapshotOrder(snapshot, this.state.badAddresses));
    }
    this.index.update(snapshot, delta);
    const problems: Problem[] = [...this.podProblems, ...this.updatePolicyProblems()];
    const { policies, budget } = this.withinBudget(this.activePolicies(), settings, problems);
    const shared = this.state.shared();
    for (const [ip, owners] of shared) problems.push(...sharedAddressProblems(ip, owners));
    problems.push(...this.cnp.update(snapshot.clusterPolicies, this.state));
    this.lastNodes = snapshot.nodes;
    const v4 = this.compileFamily(4, policies, settings, shared);
    const v6 = this.wantsFamily(6, settings) ? this.compileFamily(6, policies, settings, shared) : emptyFamilyState(6);
    this.chains.rotate();
    this.state.sweep();
    return { desired: { v4, v6 }, problems, ...(budget ? { budget } : {}) };
  }

  private reset(settingsKey: string, settings: NodeSettings): void {
    this.settingsKey = settingsKey;
    this.names = chainNames(settings.chainPrefix);
    this.hooks = [forwardHook(this.names)];
    this.hooksWithInput = [forwardHook(this.names), inputHook(this.names)];
    this.policyChains = new WeakMap();
    this.cnp.reset();
    this.chains = new Memo();
    this.setBuilders.clear();
  }

  /**
   * Does ahead of compile() the per-policy work it would do first (validation, which reads every ipBlock's
   * cidr and excepts once per policy object), and says whether there was any. A caller that must keep its
   * event loop answering can prepare new policies one at a time and yield between them; compile() then finds
   * the work done. The result is the same either way.
   */
  prepare(policy: NetworkPolicy): boolean {
    if (this.validations.has(policy)) return false;
    this.validationOf(policy);
    return true;
  }

  private validationOf(policy: NetworkPolicy): readonly Problem[] {
    let found = this.validations.get(policy);
    if (!found) this.validations.set(policy, (found = validatePolicy(policy)));
    return found;
  }

  /** Every policy's validation problems in policy key order; only namespaces whose policies changed are looked at. */
  private updatePolicyProblems(): readonly Problem[] {
    let moved = false;
    for (const ns of this.index.takeChanged()) {
      const found = this.index.policiesIn(ns).flatMap((p) => this.validationOf(p));
      if (found.length > 0) this.problemsByNamespace.set(ns, found);
      else if (!this.problemsByNamespace.delete(ns)) continue;
      moved = true;
    }
    if (moved)
      this.policyProblems = [...this.problemsByNamespace.keys()].sort(byNamespaceKey).flatMap((ns) => this.problemsByNamespace.get(ns)!);
    return this.policyProblems;
  }

  /** Policies that select a local pod, in policy key order: only namespaces with local pods are looked at. */
  private activePolicies(): CheckedPolicy[] {
    const local = this.state.localPods;
    if (local !== this.localNamespaces.local) {
      const sorted = [...new Set(local.map((p) => p.namespace))].sort(byNamespaceKey);
      this.localNamespaces = { local, sorted };
      const keep = new Set(sorted);
      for (const ns of this.activeByNamespace.keys()) if (!keep.has(ns)) this.activeByNamespace.delete(ns);
    }
    const out: CheckedPolicy[] = [];
    for (const ns of this.localNamespaces.sorted) {
      const policies = this.index.policiesIn(ns);
      const localIn = this.state.localPodsIn(ns);
      let entry = this.activeByNamespace.get(ns);
      if (entry?.policies !== policies || entry.local !== localIn) {
        const active = policies.map((p) => this.checkPolicy(p)).filter((cp) => cp.targets.length > 0);
        this.activeByNamespace.set(ns, (entry = { policies, local: localIn, active }));
      }
      out.push(...entry.active);
    }
    return out;
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
    const {
      refused,
      problems: over,
      used,
    } = admit(
      policies.filter((cp) => cp.valid).map((cp) => cp.policy),
      settings.budget,
    );
    problems.push(...over);
    const budget = { ...used, refused: refused.size };
    if (refused.size === 0) return { policies, budget };
    return { policies: policies.map((cp) => (refused.has(cp.policy) ? { ...cp, valid: false } : cp)), budget };
  }

  private checkPolicy(policy: NetworkPolicy): CheckedPolicy {
    const found = this.validationOf(policy);
    // Targets depend on the policy and its namespace's local pods only: reuse them while neither changed.
    const local = this.state.localPodsIn(policy.namespace);
    const cached = this.checked.get(policy);
    if (cached && cached.local === local) return cached.checked;
    const checked = this.checkTargets(policy, found, local);
    this.checked.set(policy, { local, checked });
    return checked;
  }

  /** `local`: the local pods of the policy's namespace. */
  private checkTargets(policy: NetworkPolicy, found: readonly Problem[], local: readonly Pod[]): CheckedPolicy {
    const errors = found.filter((p) => p.severity === 'error');
    // An invalid podSelector cannot say which pods it meant; failing closed means isolating the namespace.
    const badSelector = errors.some((p) => p.field.startsWith('spec.podSelector'));
    const targets = badSelector ? local : local.filter((p) => selectorMatches(policy.podSelector, p.labels));
    // Any loading problem (wrong types, unknown values) invalidates the policy; semantic warnings do not.
    const valid = errors.length === 0 && (policy.problems?.length ?? 0) === 0;
    return { policy, key: `${policy.namespace}/${policy.name}`, valid, types: policyTypes(policy), targets };
  }

  private wantsFamily(family: IpFamily, settings: NodeSettings): boolean {
    return (
      settings.podCidrs.some((c) => {
        const parsed = parseCidr(c);
        return parsed.ok && parsed.cidr.family === family;
      }) || this.state.localPods.some((p) => ipsOfFamily(p, family).length > 0)
    );
  }

  /** A policy chain depends only on the policy, direction, family and validity: cached per policy object. */
  private policyChain(cp: CheckedPolicy, direction: Direction, family: IpFamily, sets: IpSetRegistry, settings: NodeSettings): Chain {
    let perPolicy = this.policyChains.get(cp.policy);
    if (!perPolicy) this.policyChains.set(cp.policy, (perPolicy = new Map<string, CachedPolicyChain>()));
    const key = `${direction}|${family}|${cp.valid}`;
    let cached = perPolicy.get(key);
    if (!cached) {
      const requests: SetRequest[] = [];
      const recorder = { request: (req: SetRequest): IpSetName => (requests.push(req), sets.request(req)) };
      const chain = policyChain(
        { policy: cp.policy, direction, family, valid: cp.valid },
        { state: this.state, sets: recorder, names: this.names, settings },
      );
      perPolicy.set(key, (cached = { chain, requests }));
    } else {
      for (const req of cached.requests) sets.request(req);
    }
    return cached.chain;
  }

  private compileFamily(
    family: IpFamily,
    policies: readonly CheckedPolicy[],
    settings: NodeSettings,
    shared: SharedAddresses,
  ): FamilyState {
    const names = this.names;
    const sets = new IpSetRegistry(settings.ipsetPrefix, family);
    const policyChainsOut: Chain[] = [];
    const workloadChainsOut: Chain[] = [];
    const fromEntries: { ip: string; target: ChainName }[] = [];
    const hostEntries: { ip: string; target: ChainName }[] = [];
    const hostChainsOut: Chain[] = [];
    const toEntries: { ip: string; target: ChainName }[] = [];
    const targetsByPolicy = new Map<string, readonly Pod[]>();

    // Only policies that select a local pod of this family are programmed (Felix: referenced chains only).
    const byPod = new Map<Pod, Record<Direction, ChainName[]>>();
    // Chains of audited policies (docs/audit.md): judged beside the others, never enforced.
    const auditedChains = new Set<ChainName>();
    for (const cp of policies) {
      const targets = targetsOfFamily(cp.targets, family);
      if (targets.length === 0) continue;
      targetsByPolicy.set(cp.key, targets);
      for (const direction of ['ingress', 'egress'] as const) {
        if (!cp.types.includes(direction === 'ingress' ? 'Ingress' : 'Egress')) continue;
        const chain = this.policyChain(cp, direction, family, sets, settings);
        policyChainsOut.push(chain);
        if (cp.policy.audit) auditedChains.add(chain.name);
        for (const pod of targets) {
          const entry = byPod.get(pod) ?? { ingress: [], egress: [] };
          entry[direction].push(chain.name);
          byPod.set(pod, entry);
        }
      }
    }

    const cnp = this.cnp.active ? this.cnp.compileFamily(family, sets, this.state, settings) : undefined;
    // Pods → this node's own addresses (INPUT): only while some CNP exists. On IPv6 the chain first lets
    // the pod's neighbour discovery to the node through (static-chains.ts inputChain).
    const hostSide = cnp !== undefined;

    for (const pod of this.state.localPods) {
      const ips = ipsOfFamily(pod, family);
      if (ips.length === 0) continue;
      const key = `${pod.namespace}/${pod.name}`;
      const selected = byPod.get(pod) ?? { ingress: [], egress: [] };
      const tiers = cnp?.byPod.get(pod);
      for (const direction of ['ingress', 'egress'] as const) {
        const cnpTiers = tiers?.[direction];
        const tierChains = cnpTiers ? [...cnpTiers.admin, ...cnpTiers.baseline] : [];
        const audited = [...selected[direction].filter((c) => auditedChains.has(c)), ...tierChains.filter((c) => cnp!.audited.has(c))];
        // Verdict-only copies of the CNP chains, only for a pod judged twice (audit mode).
        const verdictChains =
          audited.length > 0 && tierChains.length > 0 ? new Map(tierChains.map((c) => [c, cnp!.verdictOf(c)])) : undefined;
        const input = {
          podKey: key,
          ip: ips[0]!,
          hostBits: familyBits(family),
          name: direction === 'ingress' ? names.toWorkload(key) : names.fromWorkload(key),
          direction,
          policyChains: selected[direction],
          ...(tiers ? { tiers: tiers[direction] } : {}),
          ...(audited.length > 0 ? { audited } : {}),
          ...(verdictChains ? { verdictChains } : {}),
        };
        // Everything the chain depends on, as a key (the settings are fixed for this Compiler).
        const tierKey = tiers ? `|a:${tiers[direction].admin.join(',')}|b:${tiers[direction].baseline.join(',')}` : '';
        const auditKey = audited.length > 0 ? `|aud:${audited.join(',')}` : '';
        const chainKey = `w|${input.name}|${input.podKey}|${input.ip}/${input.hostBits}|${input.direction}|${input.policyChains.join(',')}${tierKey}${auditKey}`;
        workloadChainsOut.push(this.chains.get(chainKey, () => workloadChain(input, settings)) as Chain);
      }
      let hostTarget = names.hostPass;
      // Only the CNP chains that can match a node address (cluster-policy.ts reachesNodes); the others would return.
      const reaching = (chains: readonly ChainName[]) => chains.filter((c) => cnp!.nodeReaching.has(c) && !cnp!.audited.has(c));
      const hostTiers = hostSide && tiers ? { admin: reaching(tiers.egress.admin), baseline: reaching(tiers.egress.baseline) } : undefined;
      if (hostTiers && (hostTiers.admin.length > 0 || hostTiers.baseline.length > 0)) {
        const input = {
          name: names.toHost(key),
          podKey: key,
          ip: ips[0]!,
          tiers: hostTiers,
          npEgress: selected.egress.some((c) => !auditedChains.has(c)),
        };
        const chainKey = `h|${input.name}|${key}|${input.ip}|${input.npEgress}|a:${input.tiers.admin.join(',')}|b:${input.tiers.baseline.join(',')}`;
        hostChainsOut.push(this.chains.get(chainKey, () => hostWorkloadChain(input, settings)) as Chain);
        hostTarget = input.name;
      }
      for (const ip of ips) {
        if (shared.has(ip)) continue;
        toEntries.push({ ip, target: names.toWorkload(key) });
        fromEntries.push({ ip, target: names.fromWorkload(key) });
        if (hostSide) hostEntries.push({ ip, target: hostTarget });
      }
    }
    for (const [ip, owners] of shared) {
      // Dispatch concerns this node's pods only; the address is still left out of every peer set (ipsets.ts).
      if (owners.some((p) => p.nodeName === settings.nodeName) && ipsOfFamily(owners[0]!, family).includes(ip)) {
        for (const chain of sharedAddressChains(ip, owners, names)) {
          workloadChainsOut.push(this.chains.get(`x|${contentKey(chain)}`, () => chain) as Chain);
          (chain.role.kind === 'workload' && chain.role.direction === 'ingress' ? toEntries : fromEntries).push({ ip, target: chain.name });
        }
      }
    }

    const podCidrs = settings.podCidrs.flatMap((c) => {
      const parsed = parseCidr(c);
      return parsed.ok && parsed.cidr.family === family ? [formatCidr(parsed.cidr)] : [];
    });
    const endRules = (direction: 'from' | 'to'): Rule[] =>
      settings.unknownPods === 'fail-open'
        ? []
        : podCidrs.flatMap((cidr): Rule[] => {
            const match: Rule['match'] = [direction === 'from' ? { kind: 'src-net', cidr } : { kind: 'dst-net', cidr }];
            return [
              ...flowLogRules(settings.flowLog, { kind: 'unknown-pod', direction }, match),
              { match, action: { kind: 'drop' }, comment: 'unknown local pod, fail-closed' },
            ];
          });
    const dispatch = (['from', 'to'] as const).flatMap((direction) => {
      const entries = direction === 'from' ? fromEntries : toEntries;
      return (
        this.chains.get(
          `d|${family}|${direction}|${JSON.stringify(entries)}`,
          () =>
            dispatchChains({
              root: direction === 'from' ? names.fromDispatch : names.toDispatch,
              direction,
              family,
              entries,
              childName: direction === 'from' ? names.fromDispatchChild : names.toDispatchChild,
              endRules: endRules(direction),
            }),
          // A pod coming or going changes one branch of the tree: the other chains stay the same objects.
        ) as Chain[]
      ).map((chain) => this.chains.get(`dc|${contentKey(chain)}`, () => chain) as Chain);
    });
    const forward = this.chains.get(`forward|${family}`, () => forwardChain(names, settings, family)) as Chain;
    // An address of this node's pod CIDR that no programmed pod has is dropped here too (fail-closed), as
    // in FORWARD; an address shared by two pods likewise.
    const hostChains = hostSide
      ? [
          this.chains.get(`input|${family}`, () => inputChain(names, settings, family)) as Chain,
          // Only while some local pod has no CNP egress tier (an unreferenced chain of ours reads as a leftover).
          ...(hostEntries.some((e) => e.target === names.hostPass)
            ? [this.chains.get('host-pass', () => hostPassChain(names)) as Chain]
            : []),
          ...(
            this.chains.get(`hd|${family}|${JSON.stringify(hostEntries)}`, () =>
              dispatchChains({
                root: names.hostDispatch,
                direction: 'from',
                family,
                entries: hostEntries,
                childName: names.hostDispatchChild,
                endRules: endRules('from'),
              }).map((chain): Chain => ({ ...chain, role: { kind: 'host-dispatch' } })),
            ) as Chain[]
          ).map((chain) => this.chains.get(`hdc|${contentKey(chain)}`, () => chain) as Chain),
          ...hostChainsOut,
        ]
      : [];

    let builder = this.setBuilders.get(family);
    if (!builder) this.setBuilders.set(family, (builder = new IpSetBuilder()));
    const ipsets = builder.build(sets, {
      state: this.state,
      family,
      targetsOf: (policy) => targetsByPolicy.get(`${policy.namespace}/${policy.name}`) ?? NO_PODS,
      nodes: this.lastNodes,
      subjectsOf: this.cnp.subjectsOf,
    });

    return {
      family,
      ipsets,
      chains: [forward, ...dispatch, ...workloadChainsOut, ...policyChainsOut, ...(cnp?.chains ?? []), ...hostChains],
      hooks: hostSide ? this.hooksWithInput : this.hooks,
    };
  }
}

// "If this field is not specified, it will default based on the existence of ingress or egress rules;
// policies that contain an egress section are assumed to affect egress, and all policies (whether or not
// they contain an ingress section) are assumed to affect ingress."
export function policyTypes(policy: NetworkPolicy): readonly PolicyType[] {
  if (policy.policyTypes && policy.policyTypes.length > 0) return policy.policyTypes;
  return policy.egress && policy.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
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

// The same array while the policy's targets are the same: named-port sets built from it are reused.
const targetsByFamily = new WeakMap<readonly Pod[], { 4?: readonly Pod[]; 6?: readonly Pod[] }>();
function targetsOfFamily(targets: readonly Pod[], family: IpFamily): readonly Pod[] {
  let split = targetsByFamily.get(targets);
  if (!split) targetsByFamily.set(targets, (split = {}));
  return (split[family] ??= targets.filter((p) => ipsOfFamily(p, family).length > 0));
}

const contentKeys = new WeakMap<Chain, string>();
function contentKey(chain: Chain): string {
  let key = contentKeys.get(chain);
  if (key === undefined) contentKeys.set(chain, (key = JSON.stringify(chain)));
  return key;
}
