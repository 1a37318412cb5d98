// What the compiled rules can tell apart about a pod when they judge its own traffic: its workload chain
// of one direction and every chain that chain jumps to, read as structs. Two pods whose chains say the same
// (their own address and name aside) are judged the same way in that direction, by construction; the
// profile's key is that content, and it also lists what the chains look at in the peer: the ipsets they
// match (so a peer's address only matters through its membership of those) and the ports they cut.

import { hash as digest } from 'node:crypto';
import type { Chain, L4Protocol, Match, Rule } from '../model/index.js';
import type { IpSets } from '../trace/index.js';
import { CutBuilder, type PortCuts } from './ports.js';

export interface Profile {
  /** Equal keys: equal rules, so equal verdicts for every packet the pod sends (egress) or receives (ingress). */
  readonly key: string;
  /** The ipsets these chains match. */
  readonly sets: ReadonlySet<string>;
  /** The port cuts of their `--dport` matches (named-port sets add theirs where the sets are known). */
  readonly cuts: PortCuts;
  /** The policies judging (from the policy chains' roles). */
  readonly policies: readonly string[];
  /** No chain to jump to: nothing but "not isolated" decides (every packet allowed). */
  readonly open: boolean;
}

interface Subtree {
  readonly key: string;
  readonly sets: ReadonlySet<string>;
  readonly cuts: PortCuts;
  readonly policies: readonly string[];
}

// One call, no Hash object: a map reads some 20,000 chains.
const hash = (text: string): string => digest('sha1', text, 'base64url').slice(0, 22);

/**
 * Subtrees by chain object, kept across the nodes of a cluster and the two clusters of a diff: the compiler
 * hands every node the same object for a policy's chain, and a diff's new cluster the same object for what
 * did not change, so each is read once. A subtree holds for a node whose chains of those names (the jumps it
 * followed) and named-port sets are the same objects. (A pod's own chain names its pod: its placeholders
 * come from the chain itself.)
 */
export class SubtreeCache {
  readonly byChain = new WeakMap<Chain, { readonly tree: Subtree; readonly uses: Uses; readonly own: boolean }>();
}

/** What a subtree read of its node besides the chain itself: the chains it jumped to and the named-port sets. */
interface Uses {
  readonly chains: Map<string, Chain | undefined>;
  readonly portSets: Map<string, IpSets extends ReadonlyMap<string, infer S> ? S | undefined : never>;
}

/** Profiles of one node's workload chains; policy chains are read once per cluster (SubtreeCache). */
export class NodeProfiles {
  private readonly byName: ReadonlyMap<string, Chain>;

  constructor(
    chains: readonly Chain[],
    private readonly ipsets: IpSets,
    private readonly cache: SubtreeCache = new SubtreeCache(),
  ) {
    this.byName = new Map(chains.map((c) => [c.name, c]));
  }

  /** The profile of a workload chain (role `workload`: its own pod and address are written as placeholders). */
  profileOf(chain: Chain): Profile {
    const self = chain.role.kind === 'workload' ? chain.role : undefined;
    const tree = this.subtree(chain, self ? { chain: chain.name, pod: self.pod, ip: self.ip } : undefined);
    const open = !chain.rules.some((r) => r.action.kind === 'jump' || r.action.kind === 'goto');
    return { key: tree.key, sets: tree.sets, cuts: tree.cuts, policies: tree.policies, open };
  }

  private subtree(chain: Chain, self: { chain: string; pod: string; ip: string } | undefined): Subtree {
    const known = this.cache.byChain.get(chain);
    if (known && known.own === (self !== undefined) && this.stillHolds(known.uses)) return known.tree;
    const sets = new Set<string>();
    const cuts = new CutBuilder();
    const policies: string[] = [];
    const uses: Uses = { chains: new Map(), portSets: new Map() };
    if (chain.role.kind === 'policy' || chain.role.kind === 'cluster-policy')
      policies.push(chain.role.kind === 'policy' ? chain.role.policy : `ClusterNetworkPolicy ${chain.role.policy}`);
    const parts = chain.rules.map((rule) => {
      for (const m of rule.match) this.note(m, rule, sets, cuts, uses);
      const action = rule.action;
      if (action.kind === 'jump' || action.kind === 'goto') {
        const target = this.byName.get(action.target);
        uses.chains.set(action.target, target);
        if (!target) return ruleText(rule, `missing:${action.target}`);
        const sub = this.subtree(target, undefined);
        for (const s of sub.sets) sets.add(s);
        cuts.merge(sub.cuts);
        for (const p of sub.policies) if (!policies.includes(p)) policies.push(p);
        return ruleText(rule, sub.key);
      }
      return ruleText(rule);
    });
    // The pod's own chain, name and address as placeholders, in the whole text at once (none holds a newline).
    const text = self ? withPlaceholders(parts.join('\n'), self) : parts.join('\n');
    const tree = { key: hash(text), sets, cuts: cuts.build(), policies };
    this.cache.byChain.set(chain, { tree, uses, own: self !== undefined });
    return tree;
  }

  private stillHolds(uses: Uses): boolean {
    for (const [name, chain] of uses.chains) if (this.byName.get(name) !== chain) return false;
    for (const [name, set] of uses.portSets) if (this.ipsets.get(name) !== set) return false;
    return true;
  }

  /** What a match looks at: a set (a named-port set's ports cut too), or destination ports. */
  private note(m: Match, rule: Rule, sets: Set<string>, cuts: CutBuilder, uses: Uses): void {
    if (m.kind === 'set') {
      sets.add(m.set);
      const set = this.ipsets.get(m.set);
      // A named-port set holds each node's own targets: what it cuts is this node's.
      if (set?.type !== 'hash:ip' && set?.type !== 'hash:net') uses.portSets.set(m.set, set);
      if (set?.type === 'hash:ip,port')
        for (const member of set.members) {
          const port = /,(tcp|udp|sctp):(\d+)(?:-(\d+))?/.exec(member);
          if (port) cuts.add(port[1] as L4Protocol, Number(port[2]), Number(port[3] ?? port[2]));
        }
    }
    if (m.kind === 'dports') {
      const proto = rule.match.find((x) => x.kind === 'protocol');
      if (proto?.kind === 'protocol' && proto.protocol !== 'ipv6-icmp') for (const r of m.ports) cuts.add(proto.protocol, r.from, r.to);
    }
  }
}

/** A rule as data (a jump's target replaced by the target's key). */
function ruleText(rule: Rule, target?: string): string {
  const action =
    target !== undefined && (rule.action.kind === 'jump' || rule.action.kind === 'goto') ? { ...rule.action, target } : rule.action;
  return JSON.stringify([rule.match, action, rule.comment ?? '']);
}

/** Rules' text with the pod's own chain, name and address replaced by placeholders. */
const withPlaceholders = (text: string, self: { chain: string; pod: string; ip: string }): string =>
  text.replaceAll(self.chain, '<chain>').replaceAll(self.pod, '<pod>').replaceAll(`"${self.ip}/`, '"<self>/');
