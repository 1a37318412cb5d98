// What the compiled rules can tell apart about a pod when they judge its own traffic: its workload chain
// of one direction and every chain that chain jumps to, read as structs. Two pods whose chains say the same
// (their own address and name aside) are judged the same way in that direction, by construction; the
// profile's key is that content, and it also lists what the chains look at in the peer: the ipsets they
// match (so a peer's address only matters through its membership of those) and the ports they cut.

import { createHash } from 'node:crypto';
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
  readonly cuts: CutBuilder;
  readonly policies: readonly string[];
}

const hash = (text: string): string => createHash('sha1').update(text).digest('base64url').slice(0, 22);

/** Profiles of one node's workload chains; policy chains are read once per node. */
export class NodeProfiles {
  private readonly byName: ReadonlyMap<string, Chain>;
  private readonly subtrees = new Map<Chain, Subtree>();

  constructor(
    chains: readonly Chain[],
    private readonly ipsets: IpSets,
  ) {
    this.byName = new Map(chains.map((c) => [c.name, c]));
  }

  /** The profile of a workload chain (role `workload`: its own pod and address are written as placeholders). */
  profileOf(chain: Chain): Profile {
    const self = chain.role.kind === 'workload' ? chain.role : undefined;
    const tree = this.subtree(chain, self ? { chain: chain.name, pod: self.pod, ip: self.ip } : undefined);
    const open = !chain.rules.some((r) => r.action.kind === 'jump' || r.action.kind === 'goto');
    return { key: tree.key, sets: tree.sets, cuts: tree.cuts.build(), policies: tree.policies, open };
  }

  private subtree(chain: Chain, self: { chain: string; pod: string; ip: string } | undefined): Subtree {
    const known = self ? undefined : this.subtrees.get(chain);
    if (known) return known;
    const sets = new Set<string>();
    const cuts = new CutBuilder();
    const policies: string[] = [];
    if (chain.role.kind === 'policy' || chain.role.kind === 'cluster-policy')
      policies.push(chain.role.kind === 'policy' ? chain.role.policy : `ClusterNetworkPolicy ${chain.role.policy}`);
    const parts = chain.rules.map((rule) => {
      for (const m of rule.match) this.note(m, rule, sets, cuts);
      const action = rule.action;
      if (action.kind === 'jump' || action.kind === 'goto') {
        const target = this.byName.get(action.target);
        if (!target) return ruleText(rule, self, `missing:${action.target}`);
        const sub = this.subtree(target, undefined);
        for (const s of sub.sets) sets.add(s);
        cuts.merge(sub.cuts.build());
        for (const p of sub.policies) if (!policies.includes(p)) policies.push(p);
        return ruleText(rule, self, sub.key);
      }
      return ruleText(rule, self);
    });
    const tree = { key: hash(parts.join('\n')), sets, cuts, policies };
    if (!self) this.subtrees.set(chain, tree);
    return tree;
  }

  /** What a match looks at: a set (a named-port set's ports cut too), or destination ports. */
  private note(m: Match, rule: Rule, sets: Set<string>, cuts: CutBuilder): void {
    if (m.kind === 'set') {
      sets.add(m.set);
      const set = this.ipsets.get(m.set);
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

/** A rule as data, with the pod's own chain, name and address (and a jump's target) replaced by placeholders. */
function ruleText(rule: Rule, self: { chain: string; pod: string; ip: string } | undefined, target?: string): string {
  const action =
    target !== undefined && (rule.action.kind === 'jump' || rule.action.kind === 'goto') ? { ...rule.action, target } : rule.action;
  let text = JSON.stringify([rule.match, action, rule.comment ?? '']);
  if (self) text = text.split(self.chain).join('<chain>').split(self.pod).join('<pod>').split(`"${self.ip}/`).join('"<self>/');
  return text;
}
