// What the compiled rules can tell apart about a pod when they judge its own traffic: its workload chain
// of one direction and every chain that chain jumps to, read as structs. Two pods whose chains say the same
// (their own address and name aside) are judged the same way in that direction, by construction; the
// profile's key is that content, and it also lists what the chains look at in the peer: the ipsets they
// match (so a peer's address only matters through its membership of those) and the ports they cut.

import type { Action, Chain, ChainRole, L4Protocol, Match, Rule } from '../model/index.js';
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

/**
 * A chain as read: its content's id, what it and the chains it jumps to look at (gathered when first asked:
 * most pods' profiles are only compared by key, a group reads one pod's, the judge one per key), and what it
 * read of its node. A workload chain's is its pod's profile of that direction.
 */
class Subtree implements Profile {
  private gathered: { readonly sets: ReadonlySet<string>; readonly cuts: PortCuts; readonly policies: readonly string[] } | undefined;

  constructor(
    /** The chain read. */
    readonly chain: Chain,
    /** The content's id among every chain read with this cache (Contents): equal content, equal id. */
    readonly id: number,
    /** The id written out. */
    readonly key: string,
    /** No jump or goto in the chain itself. */
    readonly open: boolean,
    /** Read as a pod's own chain: its own chain, pod and address as placeholders. */
    readonly own: boolean,
    /** The chain's own set names and the subtrees it jumps to, in rule order. */
    private readonly parts: readonly (string | Subtree)[],
    /** The cuts of the chain's own matches. */
    private readonly ownCuts: CutBuilder | undefined,
    /** The policy whose chain this is. */
    private readonly policy: string | undefined,
    /** What it read of its node besides the chain itself: the names it jumped to and what it read there, in pairs. */
    readonly jumped: readonly (string | Subtree | undefined)[],
    /** The named-port sets it matched (and sets of no known type) and what they were, in pairs. */
    readonly portSets: readonly (string | SavedIpSet | undefined)[] | undefined,
  ) {}

  get sets(): ReadonlySet<string> {
    return this.gather().sets;
  }

  get cuts(): PortCuts {
    return this.gather().cuts;
  }

  get policies(): readonly string[] {
    return this.gather().policies;
  }

  private gather(): NonNullable<Subtree['gathered']> {
    if (this.gathered) return this.gathered;
    const sets = new Set<string>();
    const cuts = new CutBuilder();
    if (this.ownCuts) cuts.merge(this.ownCuts.build());
    const policies = this.policy === undefined ? [] : [this.policy];
    for (let i = 0; i < this.parts.length; i++) {
      const part = this.parts[i]!;
      if (typeof part === 'string') {
        sets.add(part);
        continue;
      }
      part.sets.forEach((s) => sets.add(s));
      cuts.merge(part.cuts);
      const more = part.policies;
      for (let j = 0; j < more.length; j++) if (!policies.includes(more[j]!)) policies.push(more[j]!);
    }
    return (this.gathered = { sets, cuts: cuts.build(), policies });
  }
}

type SavedIpSet = IpSets extends ReadonlyMap<string, infer S> ? S : never;

/** A pod's own chain of one direction. */
type OwnChain = Chain & { readonly role: Extract<ChainRole, { kind: 'workload' }> };

/**
 * Subtrees by chain object, kept across the nodes of a cluster and the two clusters of a diff: the compiler
 * hands every node the same object for a policy's chain, and a diff's new cluster the same object for what
 * did not change, so each is read once. A subtree holds for a node whose named-port sets it matched are the
 * same objects and where each name it jumped to leads to the very subtree it read there, itself holding: so
 * a chain met again unchanged is read again when a chain anywhere below it, or a set one of those matched,
 * differs on this node (a policy chain's named-port set on a node of a diff's new cluster). (A pod's own
 * chain names its pod: its placeholders come from the chain itself.) With the content ids, so that both
 * clusters of a diff number alike.
 */
export class SubtreeCache {
  // A Map, not a WeakMap: the chains live as long as the map's compiled rules hold them anyway.
  readonly byChain = new Map<Chain, Subtree>();
  readonly contents = new Contents();
}

/**
 * Small ids for rules and chains by their content, through paths of plain values (Path): a rule is the path
 * of its parts (matchPath, actionPath), a chain the path of its rules' ids, a jump in it its target's id. A
 * path's end is one exact sequence of values, and a rule's sequence is written one-to-one, so equal ids mean
 * equal content.
 */
class Contents {
  readonly rules = new Path();
  readonly chains = new Path();
  private ruleCount = 0;
  private chainCount = 0;

  ruleId(end: Path): number {
    if (end.id < 0) end.id = this.ruleCount++;
    return end.id;
  }

  /** The end of a chain's path: its id and key (its id written out, once). */
  chain(end: Path): Path & { readonly key: string } {
    if (end.id < 0) {
      end.id = this.chainCount++;
      end.key = `${end.id}`;
    }
    return end as Path & { readonly key: string };
  }
}

type Part = string | number | boolean | undefined;

/**
 * One sequence of plain values (strings, numbers, booleans, undefined; compared as a Map compares keys):
 * the node reached from the root by them, one Map step each. Nothing is written out or hashed whole; the
 * strings the compiler shares come with their hash already known.
 */
class Path {
  private next: Map<Part, Path> | undefined;
  id = -1;
  key: string | undefined;

  to(part: Part): Path {
    const next = (this.next ??= new Map<Part, Path>());
    let at = next.get(part);
    if (at === undefined) next.set(part, (at = new Path()));
    return at;
  }
}

/** Profiles of one node's workload chains; policy chains are read once per cluster (SubtreeCache). */
export class NodeProfiles {
  private readonly byName = new Map<string, Chain>();
  /** The chains jumped to by name, read or found still holding on this node: every pod of the node asks again. */
  private readonly targets = new Map<string, Subtree>();

  constructor(
    chains: readonly Chain[],
    private readonly ipsets: IpSets,
    private readonly cache: SubtreeCache = new SubtreeCache(),
  ) {
    for (let i = 0; i < chains.length; i++) this.byName.set(chains[i]!.name, chains[i]!);
  }

  /** The profile of a workload chain (role `workload`: its own pod and address are written as placeholders). */
  profileOf(chain: Chain): Profile {
    return this.subtree(chain, chain.role.kind === 'workload' ? (chain as OwnChain) : undefined);
  }

  private subtree(chain: Chain, own: OwnChain | undefined): Subtree {
    const known = this.cache.byChain.get(chain);
    if (known && known.own === (own !== undefined) && this.stillHolds(known)) return known;
    const parts: (string | Subtree)[] = [];
    let cuts: CutBuilder | undefined;
    const jumped: (string | Subtree | undefined)[] = [];
    const portSets: (string | SavedIpSet | undefined)[] = [];
    const contents = this.cache.contents;
    let content = contents.chains;
    // Indexed loops: a map reads some 20,000 chains unoptimized (cli/main.ts), where `for…of` makes an iterator each time.
    const rules = chain.rules;
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r]!;
      const match = rule.match;
      let at = contents.rules;
      for (let i = 0; i < match.length; i++) {
        const m = match[i]!;
        at = matchPath(at, m, own);
        if (m.kind === 'set') this.noteSet(m.set, parts, (cuts ??= new CutBuilder()), portSets);
        else if (m.kind === 'dports') notePorts(m.ports, rule, (cuts ??= new CutBuilder()));
      }
      const action = rule.action;
      at = at.to(action.kind);
      if (action.kind === 'jump' || action.kind === 'goto') {
        const tree = this.target(action.target);
        jumped.push(action.target, tree);
        if (!tree) at = at.to(textOf(action.target, own));
        else {
          parts.push(tree);
          at = at.to(tree.id);
        }
      } else at = actionPath(at, action, own);
      // No comment and an empty one alike, and no step: the action's values end the rule.
      if (rule.comment) at = at.to(textOf(rule.comment, own));
      content = content.to(contents.ruleId(at));
    }
    const role = chain.role;
    const policy =
      role.kind === 'policy' ? role.policy : role.kind === 'cluster-policy' ? `ClusterNetworkPolicy ${role.policy}` : undefined;
    const end = contents.chain(content);
    const open = jumped.length === 0;
    const tree = new Subtree(
      chain,
      end.id,
      end.key,
      open,
      own !== undefined,
      parts,
      cuts,
      policy,
      jumped,
      portSets.length > 0 ? portSets : undefined,
    );
    this.cache.byChain.set(chain, tree);
    return tree;
  }

  /** The subtree of this node's chain of that name; none for a name no chain has. */
  private target(name: string): Subtree | undefined {
    let tree = this.targets.get(name);
    if (tree) return tree;
    const chain = this.byName.get(name);
    if (chain) this.targets.set(name, (tree = this.subtree(chain, undefined)));
    return tree;
  }

  private stillHolds(tree: Subtree): boolean {
    const jumped = tree.jumped;
    // Through target: what a name leads to is read, or found still holding, once a node.
    for (let i = 0; i < jumped.length; i += 2) if (this.target(jumped[i] as string) !== jumped[i + 1]) return false;
    const sets = tree.portSets ?? [];
    for (let i = 0; i < sets.length; i += 2) if (this.ipsets.get(sets[i] as string) !== sets[i + 1]) return false;
    return true;
  }

  /** A set matched: looked at in the peer (a named-port set's ports cut too, this node's). */
  private noteSet(name: string, parts: (string | Subtree)[], cuts: CutBuilder, portSets: (string | SavedIpSet | undefined)[]): void {
    parts.push(name);
    const set = this.ipsets.get(name);
    // A named-port set holds each node's own targets: what it cuts is this node's.
    if (set?.type !== 'hash:ip' && set?.type !== 'hash:net') portSets.push(name, set);
    if (set?.type === 'hash:ip,port')
      for (const member of set.members) {
        const port = /,(tcp|udp|sctp):(\d+)(?:-(\d+))?/.exec(member);
        if (port) cuts.add(port[1] as L4Protocol, Number(port[2]), Number(port[3] ?? port[2]));
      }
  }
}

/** Destination ports matched: they cut their protocol's ports. */
function notePorts(ports: readonly { from: number; to: number }[], rule: Rule, cuts: CutBuilder): void {
  const proto = rule.match.find((x) => x.kind === 'protocol');
  if (proto?.kind === 'protocol' && proto.protocol !== 'ipv6-icmp') for (const r of ports) cuts.add(proto.protocol, r.from, r.to);
}

/*
 * A rule's path: each match's kind (after `!` when negated) and its fields in a fixed order (a list's length
 * before its items), the action's kind and fields (a jump's target as the target's content id, a number, or
 * the name of a missing chain, a string), then the comment if it has one. Each kind says how many values
 * follow it, and no match kind is an action kind (_kindsApart), so the sequence reads back as exactly one
 * rule. What iptables is given alike is written alike: an absent `negate` and `false`, an absent
 * `isBridged` and `false`, no comment and an empty one. Texts go through textOf: the placeholders of the pod's own
 * chain. The kinds the chains hold most come first: the switches are read some 300,000 times a map.
 */

/** Does not compile once a match kind is named like an action kind, or a kind starts with `!`. */
const _kindsApart: [Extract<Match['kind'], Action['kind']>, Extract<Match['kind'] | Action['kind'], `!${string}`>] extends [never, never]
  ? true
  : never = true;

function matchPath(at: Path, m: Match, own: OwnChain | undefined): Path {
  switch (m.kind) {
    case 'mark':
      return at
        .to(m.negate === true ? '!mark' : 'mark')
        .to(m.value)
        .to(m.mask);
    case 'ctstate':
      at = at.to('ctstate').to(m.states.length);
      for (let i = 0; i < m.states.length; i++) at = at.to(m.states[i]);
      return at;
    case 'src-net':
      return at.to(m.negate === true ? '!src-net' : 'src-net').to(textOf(m.cidr, own));
    case 'dst-net':
      return at.to(m.negate === true ? '!dst-net' : 'dst-net').to(textOf(m.cidr, own));
    case 'set':
      return at
        .to(m.negate === true ? '!set' : 'set')
        .to(textOf(m.set, own))
        .to(m.direction);
    case 'protocol':
      return at.to('protocol').to(m.protocol);
    case 'dports':
    case 'sports':
      at = at.to(m.kind).to(m.ports.length);
      for (let i = 0; i < m.ports.length; i++) at = at.to(m.ports[i]!.from).to(m.ports[i]!.to);
      return at;
    case 'limit':
      return at.to('limit').to(m.perSecond).to(m.burst);
    case 'in-iface':
      return at.to(m.negate === true ? '!in-iface' : 'in-iface').to(textOf(m.name, own));
    case 'out-iface':
      return at.to(m.negate === true ? '!out-iface' : 'out-iface').to(textOf(m.name, own));
    case 'icmpv6-type':
      return at.to('icmpv6-type').to(m.type);
    case 'hop-limit':
      return at.to('hop-limit').to(m.value);
    case 'ctdir':
      return at.to('ctdir').to(m.direction);
    case 'physdev':
      return (
        at
          .to('physdev')
          // An absent interface is any (no option written); an empty one is written, `--physdev-in ''`, and
          // matches none (trace/match.ts): not alike.
          .to(m.in === undefined ? undefined : textOf(m.in, own))
          .to(m.out === undefined ? undefined : textOf(m.out, own))
          .to(m.isBridged === true)
      );
    case 'connmark':
      return at
        .to(m.negate === true ? '!connmark' : 'connmark')
        .to(m.value)
        .to(m.mask);
    default:
      return unwritten(m);
  }
}

/** Any action's values but a jump's (its kind is already on the path). */
function actionPath(at: Path, a: Action, own: OwnChain | undefined): Path {
  switch (a.kind) {
    case 'return':
    case 'accept':
    case 'drop':
    case 'reject':
      return at;
    case 'set-mark':
      return at.to(a.value).to(a.mask);
    case 'nflog':
      return at.to(a.group).to(textOf(a.prefix, own)).to(a.threshold);
    case 'nfqueue':
      return at.to(a.queue);
    case 'jump':
    case 'goto':
      throw new Error('map: a jump is read by its target');
    default:
      return unwritten(a);
  }
}

/** A kind not written above does not compile; read at run time anyway, it fails rather than pass unread. */
function unwritten(x: never): never {
  throw new Error(`map: no profile code for ${JSON.stringify(x)}`);
}

/**
 * A text of a chain as its path holds it: `<` doubled, so that no text poses as a placeholder; in a pod's own
 * chain, its chain's name, its pod's and a CIDR of its own address as placeholders.
 */
function textOf(s: string, own: OwnChain | undefined): string {
  if (s.includes('<')) s = s.replaceAll('<', '<<');
  if (!own) return s;
  if (s.includes(own.name)) s = s.replaceAll(own.name, '<chain>');
  if (s.includes(own.role.pod)) s = s.replaceAll(own.role.pod, '<pod>');
  const ip = own.role.ip;
  return s.startsWith(ip) && s.charCodeAt(ip.length) === SLASH ? `<self>${s.slice(ip.length)}` : s;
}

const SLASH = 0x2f;
