// Per-ClusterNetworkPolicy chains nf-ci-<id> / nf-ce-<id>: one per CNP and direction, shared by every
// local pod it selects, rules in written order ("rules are evaluated in order; the first match wins"):
//   Deny   → <match> DROP             "Drops the selected traffic" — a silent DROP, never REJECT
//                                     (the upstream conformance prober counts REFUSED as a failure);
//                                     with flow logs on, a rate-limited NFLOG `nf:cnp:<chain>:<rule>` first.
//   Accept → <match> set accept bit, return if set.
//   Pass   → <match> set pass bit, return if set: "Skips all further ClusterNetworkPolicy rules in the
//            current tier", which the workload chain implements by jumping only while the bit is clear.
// A rule is an OR over (peer × protocol); each alternative is one iptables rule.
//
// Fail closed ("For 'Accept' rules, 'fail closed' means: 'treat the rule as matching no traffic'. For
// 'Deny' and 'Pass' rules … 'treat the rule as a Deny all rule'."): a rule with a peer or protocol we
// cannot use (unknown field, bad CIDR, bad port) is dropped when it accepts and becomes an unconditional
// DROP otherwise. An object with errors (cnp.problems) keeps its Denies, loses its Accepts, and its Passes
// deny what they match: none of its rules may open anything.

import type {
  Chain,
  ChainName,
  ChainRole,
  ClusterNetworkPolicy,
  CnpPeer,
  CnpProtocol,
  CnpRule,
  IpFamily,
  Match,
  NodeSettings,
  Pod,
  Rule,
} from '../model/index.js';
import { CHAIN_KIND_TAG, chainName, defaultDnsLearningSettings, ruleComment, taggedChainName } from '../model/index.js';
import { parseCidr, formatCidr, type Cidr } from '../model/address.js';
import { ipsOfFamily, peerKey } from './cluster-state.js';
import { SetNamer, type PodScope, type RenderedChain } from './ipsets.js';
import { flowLogRules, ruleId, type DropCode } from './flow-log.js';
import { hash32 } from './names.js';
import { cidrMember } from './peers-ports.js';
import type { Direction } from './policy-chains.js';
import { canonicalSelector } from './selectors.js';

interface CnpChainContext {
  readonly sets: SetNamer;
  readonly settings: NodeSettings;
  /** The CNP's local subject pods: a `domainNames` rule matches each one's own learned set. */
  readonly subjects: readonly Pod[];
  /** The alternatives of `domainNames` rules, with the pod and names their comments name. */
  readonly learnedOf: Map<readonly Match[], Learned>;
}

interface Learned {
  readonly pod: string;
  readonly names: readonly string[];
}

/** Chain of one CNP and direction: `<prefix>ci-<hash>` (ingress) or `<prefix>ce-<hash>` (egress). */
export function cnpChainName(prefix: string, cnpName: string, direction: Direction, verdictOnly = false): ChainName {
  const kind = verdictOnly
    ? direction === 'ingress'
      ? CHAIN_KIND_TAG.cnpIngressVerdict
      : CHAIN_KIND_TAG.cnpEgressVerdict
    : direction === 'ingress'
      ? CHAIN_KIND_TAG.cnpIngress
      : CHAIN_KIND_TAG.cnpEgress;
  return chainName(taggedChainName(prefix, kind, hash32(`${kind}|${cnpName}`, 16)));
}

/** Whether a CNP has an error (its Accepts are void, its Passes deny). Warnings do not count. */
export const cnpInvalid = (cnp: ClusterNetworkPolicy): boolean => (cnp.problems ?? []).some((p) => p.severity === 'error');

/**
 * `verdictOnly` (audit mode, docs/audit.md): each Deny sets the deny bit and returns instead of dropping,
 * so a workload chain can judge a packet twice and act once.
 */
export function cnpChain(
  cnp: ClusterNetworkPolicy,
  direction: Direction,
  family: IpFamily,
  settings: NodeSettings,
  verdictOnly = false,
  subjects: readonly Pod[] = NO_PODS,
): RenderedChain {
  const sets = new SetNamer(settings.ipsetPrefix, family);
  return {
    chain: renderCnpChain(cnp, direction, family, { sets, settings, subjects, learnedOf: new Map() }, verdictOnly),
    sets: sets.requests,
  };
}

const NO_PODS: readonly Pod[] = [];

/** Whether a CNP's chains depend on its subjects: a `domainNames` rule matches per subject pod. */
export const learnsNames = (cnp: ClusterNetworkPolicy): boolean => cnp.egress.some((r) => r.peers.some((p) => p.kind === 'domainNames'));

function renderCnpChain(
  cnp: ClusterNetworkPolicy,
  direction: Direction,
  family: IpFamily,
  ctx: CnpChainContext,
  verdictOnly: boolean,
): Chain {
  const { accept, pass } = ctx.settings.marks;
  const deny = denyBit(ctx.settings.marks);
  const name = cnpChainName(ctx.settings.chainPrefix, cnp.name, direction, verdictOnly);
  const role = roleOf(cnp, direction, verdictOnly);
  const rulesIn = direction === 'ingress' ? cnp.ingress : cnp.egress;
  const invalid = cnpInvalid(cnp);
  const rules: Rule[] = [];
  for (const [i, rule] of rulesIn.entries()) {
    const label = ruleComment.cnpRuleLabel(cnp.name, direction, i, rule.name);
    // An unreadable action reads as Deny; an invalid object's Pass denies (it may not skip the tier's Denies).
    const action = rule.action === undefined || (invalid && rule.action === 'Pass') ? 'Deny' : rule.action;
    const body = ruleMatches(cnp, i, rule, direction, family, ctx);
    // The Deny's flow-log prefix names the rule by index and content (compile/flow-log.ts).
    const logCode = (): DropCode => ({ kind: 'cluster-deny', chain: name, rule: i, ...(ctx.settings.flowLog ? { id: ruleId(rule) } : {}) });
    if (body === 'broken' || (invalid && action === 'Accept')) {
      if (action === 'Accept') continue;
      const failClosed = ruleComment.cnpFailClosed(label, action);
      if (!verdictOnly) rules.push(...flowLogRules(ctx.settings.flowLog, logCode()));
      rules.push({
        match: [],
        action: verdictOnly ? { kind: 'set-mark', value: deny, mask: deny } : { kind: 'drop' },
        comment: failClosed,
      });
      // Nothing after an unconditional DROP is reached.
      return { name, rules, role };
    }
    if (body.length === 0) continue;
    const comment = ruleComment.cnpRule(label, action);
    const commentOf = (match: readonly Match[]): string => {
      const learned = ctx.learnedOf.get(match);
      return learned ? ruleComment.cnpLearned(label, learned.pod, learned.names) : comment;
    };
    switch (action) {
      case 'Deny':
        if (!verdictOnly) {
          // "Drops the selected traffic", each alternative after its flow-log copy (none when flow logs are off).
          const code = logCode();
          for (const match of body)
            rules.push(...flowLogRules(ctx.settings.flowLog, code, match), {
              match,
              action: { kind: 'drop' },
              comment,
            });
          break;
        }
        rules.push(...body.map((match) => ({ match, action: { kind: 'set-mark', value: deny, mask: deny }, comment }) as const));
        rules.push({ match: [{ kind: 'mark', value: deny, mask: deny }], action: { kind: 'return' } });
        break;
      case 'Accept':
        rules.push(
          ...body.map(
            (match) => ({ match, action: { kind: 'set-mark', value: accept, mask: accept }, comment: commentOf(match) }) as const,
          ),
        );
        rules.push({ match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'return' } });
        break;
      case 'Pass':
        rules.push(...body.map((match) => ({ match, action: { kind: 'set-mark', value: pass, mask: pass }, comment }) as const));
        rules.push({ match: [{ kind: 'mark', value: pass, mask: pass }], action: { kind: 'return' } });
        break;
    }
  }
  if (rules.length === 0) rules.push({ match: [], action: { kind: 'return' }, comment: ruleComment.cnpNone(cnp.name, direction) });
  return { name, rules, role };
}

/** Audit mode's deny bit: the fourth of netfence's mark bits (after accept, pass and scratch0). */
export const denyBit = (marks: NodeSettings['marks']): number => marks.all - marks.accept - marks.pass - marks.scratch0;

const roleOf = (cnp: ClusterNetworkPolicy, direction: Direction, verdictOnly: boolean): ChainRole => ({
  kind: 'cluster-policy',
  direction,
  policy: cnp.name,
  tier: cnp.tier,
  priority: cnp.priority,
  ...(cnp.audit ? { audited: true as const } : {}),
  ...(verdictOnly ? { verdictOnly: true as const } : {}),
});

/** `match` is asked for only when used, so an egress named port does not create the peer's unused set. */
type PeerMatch =
  | { readonly kind: 'any' }
  | { readonly kind: 'set'; readonly match: () => Match[]; readonly scope: PodScope | undefined; readonly learned?: Learned }
  | { readonly kind: 'none' };

/** The match lists whose union is the rule in this family, or 'broken' when the rule must fail closed. */
function ruleMatches(
  cnp: ClusterNetworkPolicy,
  index: number,
  rule: CnpRule,
  direction: Direction,
  family: IpFamily,
  ctx: CnpChainContext,
): Match[][] | 'broken' {
  const peers: PeerMatch[] = [];
  for (const peer of rule.peers) {
    if (peer.kind === 'domainNames') {
      if (direction === 'ingress') return 'broken';
      peers.push(...learnedPeers(cnp, index, rule, peer.names, family, ctx));
      continue;
    }
    const m = peerMatch(peer, direction, family, ctx);
    if (m === 'broken') return 'broken';
    peers.push(m);
  }
  if ((rule.protocols ?? []).some((p) => p.kind === 'unknown')) return 'broken';
  const out: Match[][] = [];
  for (const peer of peers) {
    if (peer.kind === 'none') continue;
    const from = out.length;
    const peerMatches = (): Match[] => (peer.kind === 'set' ? peer.match() : []);
    const protocols = rule.protocols ?? [];
    // "If protocols is unset or empty, this rule matches all protocols and ports."
    if (protocols.length === 0) out.push(peerMatches());
    else for (const proto of protocols) out.push(...protocolMatches(proto, peer, peerMatches, cnp, direction, ctx));
    // A `domainNames` pod's alternatives name the pod and the names in their comments.
    if (peer.kind === 'set' && peer.learned) for (const alt of out.slice(from)) ctx.learnedOf.set(alt, peer.learned);
  }
  return out;
}

function peerMatch(peer: CnpPeer, direction: Direction, family: IpFamily, ctx: CnpChainContext): PeerMatch | 'broken' {
  const dir = direction === 'ingress' ? 'src' : 'dst';
  switch (peer.kind) {
    case 'unknown':
      return 'broken';
    case 'namespaces':
    case 'pods': {
      // The same selector peer as a NetworkPolicy's {namespaceSelector, podSelector}: the same ipset.
      // Host-networked pods are never in it ("host-networked pods are not included").
      const npPeer =
        peer.kind === 'namespaces'
          ? { namespaceSelector: peer.namespaceSelector }
          : { namespaceSelector: peer.namespaceSelector, podSelector: peer.podSelector };
      const key = peerKey(npPeer, '');
      const match = (): Match[] => [
        {
          kind: 'set',
          set: ctx.sets.request({ kind: 's', key, description: key, spec: { kind: 'selector', peer: npPeer, namespace: '' } }),
          direction: dir,
        },
      ];
      return { kind: 'set', match, scope: { kind: 'selector', peer: npPeer, namespace: '' } };
    }
    case 'networks': {
      if (direction === 'ingress') return 'broken';
      const cidrs: Cidr[] = [];
      for (const text of peer.cidrs) {
        const parsed = parseCidr(text);
        if (!parsed.ok) return 'broken';
        if (parsed.cidr.family === family) cidrs.push(parsed.cidr);
      }
      if (cidrs.length === 0) return { kind: 'none' };
      // hash:net refuses a /0; "0.0.0.0/0 … will allow or deny all IPv4 pod-to-pod traffic as well": no address match.
      if (cidrs.some((c) => c.prefix === 0)) return { kind: 'any' };
      const unique = [...new Map(cidrs.map((c) => [formatCidr(c), c])).values()];
      const key = unique.map(formatCidr).sort().join(',');
      const match = (): Match[] => [
        {
          kind: 'set',
          set: ctx.sets.request({
            kind: 'b',
            key,
            description: `networks ${key}`,
            spec: { kind: 'cidrs', members: unique.map(cidrMember) },
          }),
          direction: 'dst',
        },
      ];
      return { kind: 'set', match, scope: { kind: 'cidrs', cidrs: unique, excepts: [] } };
    }
    case 'nodes': {
      if (direction === 'ingress') return 'broken';
      const key = `nodes ${canonicalSelector(peer.nodeSelector)}`;
      const match = (): Match[] => [
        {
          kind: 'set',
          set: ctx.sets.request({ kind: 's', key, description: key, spec: { kind: 'node-ips', nodeSelector: peer.nodeSelector } }),
          direction: 'dst',
        },
      ];
      return { kind: 'set', match, scope: undefined };
    }
    case 'domainNames':
      // Expanded per subject pod by ruleMatches (learnedPeers); never reached.
      return 'broken';
  }
}

/**
 * A `domainNames` peer, one alternative per local subject pod of the family: from that pod, to an address in
 * the set its own DNS answers filled for this rule (docs/dns-egress-design.md, "Where learned addresses go").
 * One set per (rule, pod, family), named from the pod's address too, so a pod that leaves takes its set
 * along and a later pod given the same address starts empty. The names and the set options are in the
 * key as well: a rule naming other domains, or other bounds, starts a new set (the old one is destroyed
 * with its members) instead of keeping addresses learned for names it no longer lists.
 */
function learnedPeers(
  cnp: ClusterNetworkPolicy,
  index: number,
  rule: CnpRule,
  names: readonly string[],
  family: IpFamily,
  ctx: CnpChainContext,
): PeerMatch[] {
  const dns = ctx.settings.dnsEgress ?? defaultDnsLearningSettings;
  const options = { timeout: dns.minTtlSeconds, maxelem: dns.perSetMax };
  const sortedNames = [...names].sort();
  const out: PeerMatch[] = [];
  for (const pod of ctx.subjects) {
    const ip = ipsOfFamily(pod, family)[0];
    if (ip === undefined) continue;
    const podKey = `${pod.namespace}/${pod.name}`;
    const match = (): Match[] => [
      { kind: 'src-net', cidr: `${ip}/${family === 4 ? 32 : 128}` },
      {
        kind: 'set',
        set: ctx.sets.request({
          kind: 'd',
          key: [cnp.name, index, sortedNames.join(','), podKey, ip, options.timeout, options.maxelem].join('|'),
          description: `learned by ${podKey} for cnp ${cnp.name} egress:${index} (${sortedNames.join(', ')})`,
          spec: {
            kind: 'learned',
            options,
            learnedFor: {
              pod: podKey,
              podAddress: ip,
              policy: cnp.name,
              ruleIndex: index,
              ...(rule.name !== undefined ? { ruleName: rule.name } : {}),
              domainNames: names,
              ...(cnp.audit ? { audited: true as const } : {}),
            },
          },
        }),
        direction: 'dst',
      },
    ];
    out.push({ kind: 'set', match, scope: undefined, learned: { pod: podKey, names } });
  }
  return out;
}

const L4 = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' } as const;

function protocolMatches(
  proto: CnpProtocol,
  peer: PeerMatch,
  peerMatches: () => Match[],
  cnp: ClusterNetworkPolicy,
  direction: Direction,
  ctx: CnpChainContext,
): Match[][] {
  if (proto.kind === 'protocol') {
    const protocol = L4[proto.protocol];
    return [
      [{ kind: 'protocol', protocol }, ...peerMatches(), ...(proto.ports ? [{ kind: 'dports', ports: [proto.ports] } as const] : [])],
    ];
  }
  if (proto.kind !== 'named') return [];
  // "destinationNamedPort … the port name as defined on the destination pod": resolved per destination,
  // for each protocol its container ports may use. Node peers have no pods (the CRD forbids the mix).
  if (direction === 'egress' && peer.kind === 'set' && peer.scope === undefined) return [];
  const out: Match[][] = [];
  for (const protocol of ['tcp', 'udp', 'sctp'] as const) {
    const scope: PodScope | undefined = direction === 'egress' ? (peer.kind === 'set' ? peer.scope : { kind: 'all' }) : undefined;
    const who = direction === 'ingress' ? `subjects of cnp ${cnp.name}` : scopeText(scope!);
    const set = ctx.sets.request({
      kind: 'n',
      key: `${who} ${protocol}:${proto.name}`,
      description: `${who}, named port ${protocol}/${proto.name}`,
      spec:
        direction === 'ingress'
          ? { kind: 'named-subjects', cnp, protocol, name: proto.name }
          : { kind: 'named-pods', scope: scope!, protocol, name: proto.name },
    });
    out.push([
      { kind: 'protocol', protocol },
      ...(direction === 'ingress' ? peerMatches() : []),
      { kind: 'set', set, direction: 'dst,dst' },
    ]);
  }
  return out;
}

function scopeText(scope: PodScope): string {
  switch (scope.kind) {
    case 'all':
      return 'all pods';
    case 'selector':
      // The key NetworkPolicy named-port sets use for the same selector: the sets are shared.
      return peerKey(scope.peer, scope.namespace);
    case 'cidrs':
      return `pods in ${scope.cidrs.map(formatCidr).sort().join(',')}`;
  }
}
