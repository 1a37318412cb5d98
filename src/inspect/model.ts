// What the saved (or live) ruleset says netfence is doing, per local pod: dispatch rules → workload
// chains → policy chains → rules, mapped back to `namespace/name` through our rule comments. Pure: the
// parsed filter table and ipsets come in, a plain JSON-able report comes out.

import { parseLearnedComment, type Match, type Rule } from '../model/index.js';
import { savedEntryOf, targetOf, type SavedChain, type SavedRule } from '../render/index.js';
import { chainKind, readComment, type Direction, type IpSets, type Ruleset } from '../trace/index.js';

export interface RuleRef {
  readonly chain: string;
  /** 1-based, as `iptables -L --line-numbers` counts. */
  readonly ruleIndex: number;
  readonly text: string;
}

export interface SetView {
  readonly set: string;
  /** `src`, `dst`, `dst,dst`. */
  readonly direction: string;
  /** Absent when the set is not in the ipset dump. */
  readonly type?: string;
  readonly members: number;
  /** The first few members, as ipset prints them. */
  readonly sample: readonly string[];
}

export type PeerView =
  | { readonly kind: 'any' }
  | ({ readonly kind: 'set' } & SetView)
  | { readonly kind: 'cidr'; readonly cidr: string; readonly negate: boolean }
  /** An ipBlock with excepts: in `cidrs` (absent: the whole family) and not in `excepts`. */
  | { readonly kind: 'block'; readonly cidrs?: SetView; readonly excepts: SetView };

/** One iptables rule of a policy chain: one (peer, port) alternative of a NetworkPolicy rule. */
export interface PolicyRuleView {
  /** `ingress:0` (from the comment), or `?` when the comment does not say. */
  readonly rule: string;
  readonly ruleIndex: number;
  readonly protocol: 'tcp' | 'udp' | 'sctp' | 'any';
  /** `6379`, `443,8000-8100`, `any`, or `named` (see namedPorts). */
  readonly ports: string;
  readonly peer: PeerView;
  /** A named port: the hash:ip,port set of (pod IP, protocol:number) it resolved to. */
  readonly namedPorts?: SetView;
  /** Packets this rule allowed (`iptables-save -c`), when the ruleset was read with counters. */
  readonly packets?: number;
  /** A ClusterNetworkPolicy `domainNames` Accept: the pod whose lookups fill its set, the names, what it learned. */
  readonly learned?: LearnedView;
}

export interface LearnedView {
  readonly pod: string;
  readonly names: readonly string[];
  readonly addresses: readonly LearnedAddress[];
}

/** One member the DNS agent learned, with its provenance comment and remaining timeout as the kernel holds them. */
export interface LearnedAddress {
  readonly address: string;
  readonly name?: string;
  /** Seconds since the epoch. */
  readonly learnedAt?: number;
  readonly remainingSeconds?: number;
}

export interface PolicyView {
  readonly policy: string;
  readonly direction: Direction;
  readonly chain: string;
  readonly rules: readonly PolicyRuleView[];
  /** Why the chain allows nothing (invalid policy, no rule can match). */
  readonly note?: string;
  /** Local pods whose workload chains jump here. */
  readonly usedBy: readonly string[];
  /** With counters: packets its rules allowed, and packets dropped at the pods it isolates (shared with their other policies). */
  readonly allowedPackets?: number;
  readonly deniedPackets?: number;
}

export interface WorkloadView {
  readonly chain: string;
  /** A final DROP is present: only what a policy allows passes. */
  readonly isolated: boolean;
  readonly policies: readonly string[];
  readonly policyChains: readonly string[];
  /** With counters: new connections' packets the chain's final drop dropped. */
  readonly droppedPackets?: number;
}

export interface PodView {
  /** `namespace/name` from the workload chains' comments; absent when they do not say. */
  readonly pod?: string;
  readonly ip: string;
  readonly dispatch: { readonly egress: readonly RuleRef[]; readonly ingress: readonly RuleRef[] };
  readonly egress?: WorkloadView;
  readonly ingress?: WorkloadView;
  /** Traffic to this node's own addresses (INPUT): the pod's ClusterNetworkPolicy egress tiers, when any select it. */
  readonly toNode?: WorkloadView;
}

export type ProblemKind =
  'owned-unexpected' | 'foreign-above-hook' | 'missing-hook' | 'unreferenced-chain' | 'missing-set' | 'missing-chain';

export interface InspectProblem {
  readonly kind: ProblemKind;
  readonly message: string;
  readonly chain?: string;
  readonly ruleIndex?: number;
  readonly text?: string;
}

export interface InspectReport {
  readonly chainPrefix: string;
  readonly forwardPolicy: string;
  /** Our jump in FORWARD, 1-based; absent when missing. */
  readonly hookPosition?: number;
  /** Address ranges whose unknown addresses are dropped (fail-closed), from the dispatch chains. */
  readonly failClosedCidrs: readonly string[];
  readonly pods: readonly PodView[];
  readonly policies: readonly PolicyView[];
  readonly problems: readonly InspectProblem[];
}

export interface InspectOptions {
  readonly chainPrefix: string;
  /** How many members of each set to show. */
  readonly sampleSize?: number;
}

const SAMPLE = 3;

export function inspectRuleset(ruleset: Ruleset, ipsets: IpSets, opts: InspectOptions): InspectReport {
  const prefix = opts.chainPrefix;
  const problems: InspectProblem[] = [];
  const sets = setViewer(ipsets, opts.sampleSize ?? SAMPLE, problems);
  const chain = (name: string): SavedChain | undefined => ruleset.chains.get(name);
  const forward = chain('FORWARD');
  const hookIndex = forward?.rules.findIndex((r) => targetIsOurs(r, prefix)) ?? -1;
  if (hookIndex < 0)
    problems.push({
      kind: 'missing-hook',
      chain: 'FORWARD',
      message: `no rule in FORWARD jumps to ${prefix}FORWARD: netfence's chains are never reached`,
    });
  forward?.rules.slice(0, Math.max(0, hookIndex)).forEach((r, i) =>
    problems.push({
      kind: 'foreign-above-hook',
      chain: 'FORWARD',
      ruleIndex: i + 1,
      text: r.text,
      message: 'runs before netfence: it can accept or drop pod traffic before any policy is checked',
    }),
  );
  problems.push(...inputHookProblems(ruleset, prefix));
  problems.push(...unexpectedOwnedRules(ruleset, prefix), ...unreferencedChains(ruleset, prefix));

  const failClosed: string[] = [];
  const pods = new Map<string, { egress: RuleRef[]; ingress: RuleRef[]; egressChain?: string; ingressChain?: string }>();
  for (const [root, dir] of [
    [`${prefix}from-wl-dispatch`, 'egress'],
    [`${prefix}to-wl-dispatch`, 'ingress'],
  ] as const) {
    if (!chain(root)) {
      problems.push({ kind: 'missing-chain', chain: root, message: `${root} is missing: local pods cannot be found for ${dir}` });
      continue;
    }
    walkDispatch(
      ruleset,
      root,
      prefix,
      [],
      new Set(),
      (ip, path, target) => {
        const entry = pods.get(ip) ?? { egress: [], ingress: [] };
        entry[dir] = path;
        entry[dir === 'egress' ? 'egressChain' : 'ingressChain'] = target;
        pods.set(ip, entry);
      },
      (cidr) => failClosed.includes(cidr) || failClosed.push(cidr),
    );
  }

  // Local pods → this node (INPUT), present only while ClusterNetworkPolicies exist.
  const toNode = new Map<string, string>();
  if (chain(`${prefix}to-host-dispatch`))
    walkDispatch(
      ruleset,
      `${prefix}to-host-dispatch`,
      prefix,
      [],
      new Set(),
      (ip, _path, target) => toNode.set(ip, target),
      () => undefined,
    );

  const policyViews = new Map<string, PolicyView & { usedBy: string[] }>();
  for (const c of ruleset.chains.values()) {
    const kind = chainKind(c.name, prefix);
    if (kind === 'policy-ingress' || kind === 'policy-egress')
      policyViews.set(c.name, { ...policyView(c, kind === 'policy-ingress' ? 'ingress' : 'egress', sets), usedBy: [] });
    // ClusterNetworkPolicy chains: a workload chain jumps to them in tier order (Admin, NetworkPolicy, Baseline).
    if (kind === 'cluster-policy-ingress' || kind === 'cluster-policy-egress') {
      policyViews.set(c.name, {
        ...clusterPolicyView(c, kind === 'cluster-policy-ingress' ? 'ingress' : 'egress', sets, ipsets),
        usedBy: [],
      });
    }
  }

  const podViews: PodView[] = [];
  for (const [ip, entry] of pods) {
    const egress = entry.egressChain ? workloadView(chain(entry.egressChain), policyViews) : undefined;
    const ingress = entry.ingressChain ? workloadView(chain(entry.ingressChain), policyViews) : undefined;
    const hostChain = toNode.get(ip);
    const host = hostChain ? workloadView(chain(hostChain), policyViews) : undefined;
    const pod = podName(chain(entry.egressChain ?? '')) ?? podName(chain(entry.ingressChain ?? ''));
    for (const w of [egress, ingress, host]) for (const pc of w?.policyChains ?? []) policyViews.get(pc)?.usedBy.push(pod ?? ip);
    podViews.push({
      ...(pod !== undefined ? { pod } : {}),
      ip,
      dispatch: { egress: entry.egress, ingress: entry.ingress },
      ...(egress ? { egress } : {}),
      ...(ingress ? { ingress } : {}),
      ...(host ? { toNode: host } : {}),
    });
  }
  podViews.sort((a, b) => cmp(a.pod ?? a.ip, b.pod ?? b.ip));
  // The drops of an isolated pod belong to every policy that selects it: none of them allowed the packet.
  const denied = new Map<string, number>();
  for (const p of podViews)
    for (const w of [p.egress, p.ingress]) {
      if (w?.droppedPackets === undefined) continue;
      for (const pc of w.policyChains) denied.set(pc, (denied.get(pc) ?? 0) + w.droppedPackets);
    }
  const withDenied = [...policyViews.values()].map((p) =>
    p.allowedPackets !== undefined ? { ...p, deniedPackets: denied.get(p.chain) ?? 0 } : p,
  );
  const policies = withDenied.sort((a, b) => cmp(`${a.policy} ${a.direction}`, `${b.policy} ${b.direction}`));
  return {
    chainPrefix: prefix,
    forwardPolicy: forward?.policy ?? 'unknown',
    ...(hookIndex >= 0 ? { hookPosition: hookIndex + 1 } : {}),
    failClosedCidrs: failClosed,
    pods: podViews,
    policies: policies.map((p) => ({ ...p, usedBy: [...new Set(p.usedBy)].sort() })),
    problems,
  };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const refOf = (chain: string, i: number, r: SavedRule): RuleRef => ({ chain, ruleIndex: i + 1, text: r.text });

function targetIsOurs(r: SavedRule, prefix: string): boolean {
  const t = targetOf(r.args);
  return t !== undefined && t.target.startsWith(prefix);
}

/** Follows the dispatch tree: `-s IP/32 -g nf-fw-…` is a pod; `-s NET -g nf-fd-…` a subtree; `-s NET -j DROP` fail-closed. */
function walkDispatch(
  ruleset: Ruleset,
  name: string,
  prefix: string,
  path: readonly RuleRef[],
  seen: Set<string>,
  onPod: (ip: string, path: RuleRef[], target: string) => void,
  onFailClosed: (cidr: string) => void,
): void {
  if (seen.has(name)) return;
  seen.add(name);
  ruleset.chains.get(name)?.rules.forEach((r, i) => {
    const rule = r.rule;
    const net = rule?.match.find((m): m is Extract<Match, { kind: 'src-net' | 'dst-net' }> => m.kind === 'src-net' || m.kind === 'dst-net');
    if (!rule || !net) return;
    const here = [...path, refOf(name, i, r)];
    const action = rule.action;
    if (action.kind === 'drop' || action.kind === 'reject') onFailClosed(net.cidr);
    if (action.kind !== 'goto' && action.kind !== 'jump') return;
    const kind = chainKind(action.target, prefix);
    if (kind === 'dispatch-from' || kind === 'dispatch-to' || kind === 'dispatch-host')
      walkDispatch(ruleset, action.target, prefix, here, seen, onPod, onFailClosed);
    else if (kind === 'workload-egress' || kind === 'workload-ingress' || kind === 'workload-host')
      onPod(net.cidr.replace(/\/(32|128)$/, ''), here, action.target);
  });
}

function podName(chain: SavedChain | undefined): string | undefined {
  for (const r of chain?.rules ?? []) {
    const m = r.comment !== undefined ? readComment(r.comment) : undefined;
    if (m?.kind === 'workload') return m.pod;
  }
  return undefined;
}

function workloadView(chain: SavedChain | undefined, policies: ReadonlyMap<string, PolicyView>): WorkloadView | undefined {
  if (!chain) return undefined;
  const policyChains = chain.rules.flatMap((r) =>
    r.rule?.action.kind === 'jump' && policies.has(r.rule.action.target) ? [r.rule.action.target] : [],
  );
  const lastSaved = chain.rules.at(-1);
  const last = lastSaved?.rule;
  const isolated = last !== undefined && last.action.kind === 'drop' && last.match.length === 0;
  const dropped = isolated && lastSaved?.counters ? { droppedPackets: lastSaved.counters.packets } : {};
  return { chain: chain.name, isolated, policies: policyChains.map((c) => policies.get(c)?.policy ?? c), policyChains, ...dropped };
}

function policyView(chain: SavedChain, direction: Direction, sets: (m: Extract<Match, { kind: 'set' }>) => SetView): PolicyView {
  let policy: string | undefined;
  let note: string | undefined;
  const rules: PolicyRuleView[] = [];
  chain.rules.forEach((r, i) => {
    const meaning = r.comment !== undefined ? readComment(r.comment) : undefined;
    if (meaning?.kind === 'policy-empty') {
      policy ??= meaning.policy;
      note = meaning.why;
    }
    if (meaning?.kind === 'policy-rule') policy ??= meaning.policy;
    if (r.rule?.action.kind === 'set-mark') {
      const view = ruleView(r.rule, i + 1, meaning?.kind === 'policy-rule' ? meaning.rule : '?', direction, sets);
      rules.push(r.counters ? { ...view, packets: r.counters.packets } : view);
    }
  });
  const counted = chain.rules.some((r) => r.counters !== undefined);
  const allowed = counted ? { allowedPackets: rules.reduce((n, r) => n + (r.packets ?? 0), 0) } : {};
  return {
    policy: policy ?? `? (${chain.name})`,
    direction,
    chain: chain.name,
    rules,
    ...(note !== undefined ? { note } : {}),
    usedBy: [],
    ...allowed,
  };
}

/** A ClusterNetworkPolicy chain: every Accept/Pass (set-mark) and Deny (DROP) rule, labelled `ingress:0 name Deny`. */
function clusterPolicyView(
  chain: SavedChain,
  direction: Direction,
  sets: (m: Extract<Match, { kind: 'set' }>) => SetView,
  ipsets: IpSets,
): PolicyView {
  let policy: string | undefined;
  let note: string | undefined;
  const rules: PolicyRuleView[] = [];
  chain.rules.forEach((r, i) => {
    const meaning = r.comment !== undefined ? readComment(r.comment) : undefined;
    if (meaning?.kind === 'cluster-policy-empty') {
      policy ??= meaning.policy;
      note = `no ${direction} rule can match`;
    }
    if (meaning?.kind !== 'cluster-policy-rule') return;
    policy ??= meaning.policy;
    if (r.rule?.action.kind === 'set-mark' || r.rule?.action.kind === 'drop') {
      const view = ruleView(r.rule, i + 1, `${meaning.rule} ${meaning.action}`, direction, sets);
      rules.push(meaning.learned ? { ...view, learned: learnedView(r.rule, meaning.learned, ipsets) } : view);
    }
  });
  return {
    policy: policy ?? `? (${chain.name})`,
    direction,
    chain: chain.name,
    rules,
    ...(note !== undefined ? { note } : {}),
    usedBy: [],
  };
}

function ruleView(
  rule: Rule,
  ruleIndex: number,
  label: string,
  direction: Direction,
  sets: (m: Extract<Match, { kind: 'set' }>) => SetView,
): PolicyRuleView {
  const peerDir = direction === 'ingress' ? 'src' : 'dst';
  let protocol: PolicyRuleView['protocol'] = 'any';
  let ports = 'any';
  let peer: PeerView = { kind: 'any' };
  let namedPorts: SetView | undefined;
  for (const m of rule.match) {
    if (m.kind === 'protocol' && m.protocol !== 'ipv6-icmp') protocol = m.protocol;
    else if (m.kind === 'dports') ports = m.ports.map((p) => (p.from === p.to ? `${p.from}` : `${p.from}-${p.to}`)).join(',');
    else if (m.kind === 'set' && m.direction === 'dst,dst') {
      namedPorts = sets(m);
      ports = 'named';
    } else if (m.kind === 'set' && m.direction === peerDir && m.negate) {
      // The except set of an ipBlock follows its cidr set (absent for a /0) in the same rule.
      const before = peer as PeerView;
      const cidrs: SetView | undefined =
        before.kind === 'set'
          ? {
              set: before.set,
              direction: before.direction,
              members: before.members,
              sample: before.sample,
              ...(before.type !== undefined ? { type: before.type } : {}),
            }
          : undefined;
      peer = { kind: 'block', ...(cidrs ? { cidrs } : {}), excepts: sets(m) };
    } else if (m.kind === 'set' && m.direction === peerDir) peer = { kind: 'set', ...sets(m) };
    else if ((m.kind === 'src-net' && peerDir === 'src') || (m.kind === 'dst-net' && peerDir === 'dst'))
      peer = { kind: 'cidr', cidr: m.cidr, negate: m.negate === true };
  }
  return { rule: label, ruleIndex, protocol, ports, peer, ...(namedPorts ? { namedPorts } : {}) };
}

function setViewer(ipsets: IpSets, sample: number, problems: InspectProblem[]): (m: Extract<Match, { kind: 'set' }>) => SetView {
  const reported = new Set<string>();
  return (m) => {
    const set = ipsets.get(m.set);
    if (!set) {
      if (!reported.has(m.set))
        problems.push({ kind: 'missing-set', message: `ipset ${m.set} is used by a rule but is not in the ipset dump` });
      reported.add(m.set);
      return { set: m.set, direction: m.direction, members: 0, sample: [] };
    }
    return { set: m.set, direction: m.direction, type: set.type, members: set.members.length, sample: set.members.slice(0, sample) };
  };
}

/** When our INPUT chain exists (ClusterNetworkPolicies), INPUT must jump to it before any foreign rule. */
function inputHookProblems(ruleset: Ruleset, prefix: string): InspectProblem[] {
  if (!ruleset.chains.get(`${prefix}INPUT`)) return [];
  const input = ruleset.chains.get('INPUT');
  const at = input?.rules.findIndex((r) => targetOf(r.args)?.target === `${prefix}INPUT`) ?? -1;
  if (at < 0)
    return [
      {
        kind: 'missing-hook',
        chain: 'INPUT',
        message: `no rule in INPUT jumps to ${prefix}INPUT: ClusterNetworkPolicy egress to this node is not enforced`,
      },
    ];
  return (input?.rules.slice(0, at) ?? []).map((r, i) => ({
    kind: 'foreign-above-hook' as const,
    chain: 'INPUT',
    ruleIndex: i + 1,
    text: r.text,
    message: 'runs before netfence: it can accept pod traffic to this node before ClusterNetworkPolicy is checked',
  }));
}

/** Rules in our chains that netfence did not write as they are (no hash comment, or parts it never emits). */
function unexpectedOwnedRules(ruleset: Ruleset, prefix: string): InspectProblem[] {
  const out: InspectProblem[] = [];
  for (const c of ruleset.chains.values()) {
    if (!c.name.startsWith(prefix)) continue;
    c.rules.forEach((r, i) => {
      if (r.hash !== undefined && r.rule) return;
      const message =
        r.hash === undefined
          ? 'owned chain holds a rule without a netfence hash comment (added by hand?)'
          : 'owned but unexpected: netfence cannot parse this rule';
      out.push({ kind: 'owned-unexpected', chain: c.name, ruleIndex: i + 1, text: r.text, message });
    });
  }
  return out;
}

/** Owned chains nothing jumps to: left over from an interrupted apply, or cut loose by a hand edit. */
function unreferencedChains(ruleset: Ruleset, prefix: string): InspectProblem[] {
  const referenced = new Set<string>();
  for (const c of ruleset.chains.values())
    for (const r of c.rules) {
      const t = targetOf(r.args);
      if (t) referenced.add(t.target);
    }
  return [...ruleset.chains.keys()]
    .filter((name) => name.startsWith(prefix) && !referenced.has(name))
    .map((name) => ({ kind: 'unreferenced-chain' as const, chain: name, message: 'owned chain that no rule jumps to' }));
}

/** Keeps the pods (by `ns/name` or IP) and policies asked for; undefined filters keep everything. */
export function filterReport(report: InspectReport, filter: { readonly pod?: string; readonly policy?: string }): InspectReport {
  let pods = report.pods;
  let policies = report.policies;
  if (filter.pod !== undefined) {
    pods = pods.filter((p) => p.pod === filter.pod || p.ip === filter.pod);
    const wanted = new Set(
      pods.flatMap((p) => [...(p.egress?.policyChains ?? []), ...(p.ingress?.policyChains ?? []), ...(p.toNode?.policyChains ?? [])]),
    );
    policies = policies.filter((p) => wanted.has(p.chain));
  }
  if (filter.policy !== undefined) {
    policies = policies.filter((p) => p.policy === filter.policy);
    const chains = new Set(policies.map((p) => p.chain));
    pods = pods.filter((p) => [...(p.egress?.policyChains ?? []), ...(p.ingress?.policyChains ?? [])].some((c) => chains.has(c)));
  }
  return { ...report, pods, policies };
}

/** What a `domainNames` rule's set holds: each learned address, the name it was learned for, its time left. */
function learnedView(rule: Rule, learned: { readonly pod: string; readonly names: readonly string[] }, ipsets: IpSets): LearnedView {
  const set = rule.match.find((m): m is Extract<Match, { kind: 'set' }> => m.kind === 'set' && m.direction === 'dst');
  const addresses = (set ? (ipsets.get(set.set)?.members ?? []) : []).map((member): LearnedAddress => {
    const entry = savedEntryOf(member);
    const provenance = entry.comment !== undefined ? parseLearnedComment(entry.comment) : undefined;
    return {
      address: entry.element,
      ...(provenance ? { name: provenance.name, learnedAt: provenance.learnedAt } : {}),
      ...(entry.timeout !== undefined ? { remainingSeconds: entry.timeout } : {}),
    };
  });
  return { pod: learned.pod, names: learned.names, addresses };
}
