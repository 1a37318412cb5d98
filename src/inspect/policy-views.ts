// One policy chain as `inspect` shows it: each NetworkPolicy rule's (peer, port) alternatives, or each
// ClusterNetworkPolicy rule with its action, and the ipsets they match, read back from our rule comments.

import { parseLearnedComment, type Match, type Rule } from '../model/index.js';
import { savedEntryOf, type SavedChain } from '../render/index.js';
import { readComment, type Direction, type IpSets } from '../trace/index.js';
import type { InspectProblem, LearnedAddress, LearnedView, PeerView, PolicyRuleView, PolicyView, SetView } from './report.js';

export function policyView(chain: SavedChain, direction: Direction, sets: (m: Extract<Match, { kind: 'set' }>) => SetView): PolicyView {
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
export function clusterPolicyView(
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

export function setViewer(ipsets: IpSets, sample: number, problems: InspectProblem[]): (m: Extract<Match, { kind: 'set' }>) => SetView {
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
