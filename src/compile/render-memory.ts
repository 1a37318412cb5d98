// What the Compiler remembers of its rendering from one compile to the next. Everything here is decided by
// the node settings as well as by the cluster, so it lives in one object made from the settings: new
// settings get a new object (compile.ts), and nothing has to be cleared field by field.

import type { Chain, Hook, IpFamily, NetworkPolicy, NodeSettings, Pod, Problem } from '../model/index.js';
import type { BudgetUse } from './budget.js';
import { ChainCache } from './chain-cache.js';
import type { DispatchEntry } from './dispatch.js';
import type { EndpointChains } from './endpoint-chains.js';
import { IpSetBuilder, type SetRequest } from './ipsets.js';
import { ChainInterner, Memo, sameData, TupleMap } from './memo.js';
import { chainNames, type ChainNames } from './names.js';
import type { CheckedPolicy } from './policy-targets.js';
import type { ClusterPolicyRef, PolicyRef } from './resolution.js';
import { forwardHook, inputHook, outputHook } from './static-chains.js';

export type DispatchSide = 'from' | 'to' | 'host';

/** The policy chains made from one list of active policies, for one family. */
export interface PolicyChains {
  readonly policies: readonly CheckedPolicy[];
  readonly chains: readonly Chain[];
  readonly targetsByPolicy: ReadonlyMap<NetworkPolicy, readonly Pod[]>;
  /** Every set the chains use, in the order they asked for them: each chain's requests as it returned them. */
  readonly requests: readonly (readonly SetRequest[])[];
}

/** The node budget's decision on one list of active policies. */
export interface Admitted {
  readonly from: readonly CheckedPolicy[];
  readonly policies: readonly CheckedPolicy[];
  readonly budget: BudgetUse;
  readonly problems: readonly Problem[];
}

/** One local pod's chains and dispatch entries in one family, with what they were made from. */
export interface PodEndpoint {
  readonly policies: readonly PolicyRef[];
  readonly clusterPolicies: readonly ClusterPolicyRef[];
  readonly hostSide: boolean;
  /** As interned when made: the objects the planner knows as programmed. */
  readonly chains: EndpointChains;
  readonly to: DispatchEntry[];
  readonly from: DispatchEntry[];
  readonly host: DispatchEntry[];
}

/**
 * What is rendered from the cluster and the settings every node shares: policy chains (a policy renders the
 * same chain on every node) and resolved sets (a set's name stands for its content cluster-wide). A compiler
 * asked for several nodes in turn (`netfence map`, `why`) keeps it across them; a node's own settings (its
 * name, its pod CIDRs) only decide the dispatch and fixed chains, which stay in RenderMemory.
 */
export class ClusterWideMemory {
  /** Policy chains, NetworkPolicy and CNP, by the object and what else they were rendered from. */
  readonly chains = new ChainCache();
  readonly setBuilders = new Map<IpFamily, IpSetBuilder>();

  constructor(readonly settings: NodeSettings | undefined) {}

  /** Whether `settings` differ from the ones this was made from at most in what is each node's own. */
  fits(settings: NodeSettings): boolean {
    return this.settings !== undefined && sameData(clusterWide(settings), clusterWide(this.settings));
  }
}

const clusterWide = (settings: NodeSettings): NodeSettings => ({ ...settings, nodeName: '', podCidrs: [] });

export class RenderMemory {
  readonly names: ChainNames;
  readonly hooks: readonly Hook[];
  /** With ClusterNetworkPolicies: FORWARD and INPUT (pods to this node). */
  readonly hooksWithInput: readonly Hook[];
  /** With `domainNames` rules: also OUTPUT (answers of node-local resolvers). */
  readonly hooksWithDns: readonly Hook[];
  /** Policy chains, NetworkPolicy and CNP (ClusterWideMemory's). */
  readonly chains: ChainCache;
  /** Each local pod's chains, per family, by what they were rendered from. */
  readonly endpoints = new Memo<
    readonly [IpFamily, boolean, string, string, string, readonly PolicyRef[], readonly ClusterPolicyRef[]],
    EndpointChains
  >();
  readonly interned = new ChainInterner<Chain>();
  /** Per family, each local pod object as the last compile that rendered it left it (compile.ts endpointsOf). */
  readonly podEndpoints: Readonly<Record<IpFamily, WeakMap<Pod, PodEndpoint>>> = { 4: new WeakMap(), 6: new WeakMap() };
  /** Each dispatch tree with the entries it was built from. */
  readonly dispatch = new TupleMap<
    readonly [IpFamily, DispatchSide],
    { readonly entries: readonly DispatchEntry[]; readonly chains: readonly Chain[] }
  >();
  /** Chains that depend on the settings and the family only. */
  readonly fixed = new TupleMap<readonly ['forward' | 'input' | 'forward-dns' | 'input-dns' | 'output-dns', IpFamily], Chain>();
  hostPass: Chain | undefined;
  /** Per family, the policy chains made from the last list of active policies. */
  readonly lastPolicyChains = new Map<IpFamily, PolicyChains>();
  /** The node budget's decision on the last list of active policies. */
  admitted: Admitted | undefined;

  /**
   * `settings` undefined: nothing compiled yet (the default chain prefix, no hooks). `clusterWide`: the last
   * node's, when its settings differ from these only in what is each node's own.
   */
  constructor(
    readonly settings: NodeSettings | undefined,
    readonly clusterWide: ClusterWideMemory = new ClusterWideMemory(settings),
  ) {
    this.chains = clusterWide.chains;
    this.names = chainNames(settings?.chainPrefix ?? 'nf-');
    this.hooks = settings ? [forwardHook(this.names)] : [];
    this.hooksWithInput = settings ? [forwardHook(this.names), inputHook(this.names)] : [];
    this.hooksWithDns = settings ? [...this.hooksWithInput, outputHook(this.names)] : [];
  }

  setBuilder(family: IpFamily): IpSetBuilder {
    const builders = this.clusterWide.setBuilders;
    let builder = builders.get(family);
    if (!builder) builders.set(family, (builder = new IpSetBuilder()));
    return builder;
  }
}
