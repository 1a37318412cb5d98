// Fixed wiring as typed data: the hook into FORWARD and the nf-FORWARD chain that fans out to dispatch.
// These go through the same renderer, hasher and tracer as every generated chain.

import type { Chain, DnsLearningSettings, Hook, IpFamily, IpSetName, Match, NodeSettings, Rule } from '../model/index.js';
import { hostLinkIcmpv6Rules, linkIcmpv6Rules } from './icmpv6.js';
import type { ChainNames } from './names.js';

export function forwardHook(names: ChainNames): Hook {
  return {
    chain: 'FORWARD',
    position: 'insert',
    rule: { match: [], action: { kind: 'jump', target: names.forward }, comment: 'netfence policy' },
  };
}

/**
 * nf-FORWARD: clear our mark bits, run the sender's egress chain (traffic entering from the pod bridge),
 * then the receiver's ingress chain (traffic leaving through it), and accept once if the bit survived.
 * Same-node pod-to-pod traffic is bridged and crosses FORWARD once (br_netfilter), so both run in one pass.
 * Traffic that involves no local pod leaves with no bit set and no verdict: the rest of FORWARD decides.
 * The RELATED half of the conntrack accepts also carries ICMP(v6) errors about an allowed flow (packet
 * too big, destination unreachable, time exceeded), so path MTU discovery works through any policy.
 */
export function forwardChain(names: ChainNames, settings: NodeSettings, family: IpFamily, dns?: DnsWatch): Chain {
  const { accept, all } = settings.marks;
  const bridge = settings.bridge;
  return {
    name: names.forward,
    role: { kind: 'static' },
    rules: [
      ...revokedFlowRules(settings),
      // Above the ESTABLISHED accepts: a DNS answer is established traffic and would never reach the queue.
      ...(dns ? [...dnsQueryRules(dns), ...dnsAnswerRules(dns)] : []),
      // "Connections are judged on their first packet": later packets of a flow to or from a local pod
      // pass here, before the dispatch trees, so only a connection's first packet walks the policy.
      ...(['in-iface', 'out-iface'] as const).map((kind) => ({
        match: [
          { kind, name: bridge },
          { kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] },
        ] as const,
        action: { kind: 'accept' } as const,
        comment: 'established pod flow',
      })),
      // IPv6 only: neighbour discovery and MLD are untracked and must pass before any policy (icmpv6.ts).
      ...(family === 6 ? linkIcmpv6Rules(bridge) : []),
      { match: [], action: { kind: 'set-mark', value: 0, mask: all } },
      {
        match: [{ kind: 'in-iface', name: bridge }],
        action: { kind: 'jump', target: names.fromDispatch },
        comment: 'egress of local pods',
      },
      {
        match: [{ kind: 'out-iface', name: bridge }],
        action: { kind: 'jump', target: names.toDispatch },
        comment: 'ingress of local pods',
      },
      // Accepting here rather than at the end of FORWARD keeps allowed pod traffic flowing when someone
      // sets `-P FORWARD DROP` or appends a catch-all DROP below us.
      { match: [{ kind: 'mark', value: accept, mask: accept }], action: { kind: 'accept' }, comment: 'policy accepted packet' },
    ],
  };
}

/**
 * Strict mode: a flow whose conntrack entry carries the revoke bit is dropped in both directions, above
 * the ESTABLISHED accepts. Marking (rather than deleting) the entry matters: with the default
 * nf_conntrack_tcp_loose=1 a deleted TCP or UDP flow is picked up again from whichever side speaks
 * next, as a new flow in the reverse direction that policy allows (research upstream-behaviour §2.4).
 */
function revokedFlowRules(settings: NodeSettings): Rule[] {
  const bit = settings.revokeMark;
  if (bit === undefined) return [];
  return [
    {
      match: [{ kind: 'connmark', value: bit, mask: bit }],
      action: { kind: 'drop' },
      comment: 'flow revoked by a policy change (strict mode)',
    },
  ];
}

// ---- INPUT: local pods → this node itself (ClusterNetworkPolicy egress only) -------------------------

/** Only while some ClusterNetworkPolicy exists (a cluster without them keeps exactly the FORWARD hook). */
export function inputHook(names: ChainNames): Hook {
  return {
    chain: 'INPUT',
    position: 'insert',
    rule: { match: [], action: { kind: 'jump', target: names.input }, comment: 'netfence cluster policy to this node' },
  };
}

/**
 * nf-INPUT: a local pod's packets to one of this node's own addresses are delivered through INPUT, never
 * FORWARD. ClusterNetworkPolicy `nodes` peers select "the nodeIPs … in the node.Status.Addresses field",
 * and `networks` "will be checked against the rule as well", so the pod's CNP egress tiers run here too.
 * NetworkPolicy does not: "traffic to and from the node where a Pod is running is always allowed,
 * regardless of the IP address of the Pod or the node" (Kubernetes docs), so it stays out of INPUT.
 * This chain never accepts: it only drops what a CNP denies, and the rest of INPUT (the host's own
 * firewall) still decides everything else.
 */
export function inputChain(names: ChainNames, settings: NodeSettings, family: IpFamily, dns?: DnsWatch): Chain {
  const bridge = settings.bridge;
  return {
    name: names.input,
    role: { kind: 'static' },
    rules: [
      // Queries to a node-local resolver (NodeLocal DNSCache, a host-network CoreDNS) arrive here.
      ...(dns ? dnsQueryRules(dns) : []),
      // Judged on the first packet, as in FORWARD; later packets and replies to host-opened flows pass.
      {
        match: [
          { kind: 'in-iface', name: bridge },
          { kind: 'ctstate', states: ['RELATED', 'ESTABLISHED'] },
        ],
        action: { kind: 'return' },
        comment: 'established pod flow',
      },
      // ND/MLD to the node is untracked and nobody's egress: a pod denied `::/0` keeps its gateway (icmpv6.ts).
      ...(family === 6 ? hostLinkIcmpv6Rules(bridge) : []),
      { match: [{ kind: 'in-iface', name: bridge }], action: { kind: 'set-mark', value: 0, mask: settings.marks.all } },
      {
        match: [{ kind: 'in-iface', name: bridge }],
        action: { kind: 'jump', target: names.hostDispatch },
        comment: 'local pods to this node',
      },
    ],
  };
}

/** Where a local pod goes whose CNP egress cannot match a node address (or that has none): back to INPUT, no verdict. */
export function hostPassChain(names: ChainNames): Chain {
  return {
    name: names.hostPass,
    role: { kind: 'static' },
    rules: [{ match: [], action: { kind: 'return' }, comment: 'no ClusterNetworkPolicy egress rule of this pod can match a node address' }],
  };
}

// ---- DNS of pods with `domainNames` egress (docs/dns-egress-design.md, "Which packets are queued") -------

/** What the DNS rules need: the set of the pods whose DNS is watched, and the queue and log group the agent binds. */
export interface DnsWatch {
  readonly subjects: IpSetName;
  readonly settings: Pick<DnsLearningSettings, 'queueNum' | 'nflogGroup'>;
}

const DNS_PROTOCOLS = ['udp', 'tcp'] as const;
const DNS_PORT = [{ from: 53, to: 53 }];

/**
 * A watched pod's query, copied (not held) to the agent's NFLOG group as it leaves: the answer is matched
 * to it (same transaction, same question). Threshold 1: each query is sent at once, so it reaches the
 * agent's socket before its answer can be queued.
 */
function dnsQueryRules(dns: DnsWatch): Rule[] {
  return DNS_PROTOCOLS.map((protocol) => ({
    match: [
      { kind: 'protocol', protocol },
      { kind: 'dports', ports: DNS_PORT },
      { kind: 'set', set: dns.subjects, direction: 'src' },
      { kind: 'ctdir', direction: 'ORIGINAL' },
    ] satisfies Match[],
    action: { kind: 'nflog', group: dns.settings.nflogGroup, prefix: 'dns-query', threshold: 1 },
    comment: 'dns query of a pod with domainNames egress',
  }));
}

/**
 * An answer to a watched pod, held on the agent's queue until what it grants is programmed. Only the reply
 * direction of a flow the pod opened: an unsolicited datagram from port 53 is NEW and never queued.
 * `--queue-bypass`: with no agent bound the answer passes unchanged and grants nothing.
 */
function dnsAnswerRules(dns: DnsWatch): Rule[] {
  return DNS_PROTOCOLS.map((protocol) => ({
    match: [
      { kind: 'protocol', protocol },
      { kind: 'sports', ports: DNS_PORT },
      { kind: 'set', set: dns.subjects, direction: 'dst' },
      { kind: 'ctstate', states: ['ESTABLISHED'] },
      { kind: 'ctdir', direction: 'REPLY' },
    ] satisfies Match[],
    action: { kind: 'nfqueue', queue: dns.settings.queueNum },
    comment: 'dns answer to a pod with domainNames egress',
  }));
}

/** Only while some pod has `domainNames` egress: answers of node-local resolvers leave through OUTPUT. */
export function outputHook(names: ChainNames): Hook {
  return {
    chain: 'OUTPUT',
    position: 'insert',
    rule: { match: [], action: { kind: 'jump', target: names.output }, comment: 'netfence dns answers from this node' },
  };
}

/** nf-OUTPUT: answers of a resolver on this node to watched pods, held like those crossing FORWARD. */
export function outputChain(names: ChainNames, dns: DnsWatch): Chain {
  return { name: names.output, role: { kind: 'static' }, rules: dnsAnswerRules(dns) };
}
