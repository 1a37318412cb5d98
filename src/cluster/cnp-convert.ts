// ClusterNetworkPolicy JSON (policy.networking.k8s.io/v1alpha2) → the model (src/model/cluster-policy.ts).
//
// Like NetworkPolicies, a CNP with a name is never dropped: dropping one would remove an admin Deny.
// What does not fit is read the closed way and reported:
// - "For 'Accept' rules, 'fail closed' means: 'treat the rule as matching no traffic'. For 'Deny' and
//   'Pass' rules … 'treat the rule as a Deny all rule'." A peer or protocol we cannot read becomes
//   `unknown`, which the compiler applies that way.
// - an unreadable tier reads as Admin, an unreadable priority as 0 (first), an unreadable subject as
//   every namespace, an unreadable action as Deny; the compiler then treats the whole object as invalid.

import { domainNameProblem } from '../model/domain-name.js';
import type {
  ClusterNetworkPolicy,
  CnpAction,
  CnpPeer,
  CnpProtocol,
  CnpRule,
  CnpSubject,
  LabelSelector,
  Problem,
  Protocol,
} from '../model/index.js';
import { record } from './read-fields.js';

type Json = Record<string, unknown>;
type Report = (field: string, message: string, severity?: Problem['severity']) => void;

const EVERYTHING: LabelSelector = { matchLabels: {}, matchExpressions: [] };

export function readClusterPolicy(
  obj: Json,
  meta: Json,
  readSelector: (v: unknown) => LabelSelector,
  report: Report,
): ClusterNetworkPolicy {
  const spec = record(obj['spec']) ?? {};
  const tier = spec['tier'] === 'Baseline' ? 'Baseline' : 'Admin';
  const priority =
    Number.isInteger(spec['priority']) && (spec['priority'] as number) >= 0 && (spec['priority'] as number) <= 1000
      ? (spec['priority'] as number)
      : 0;
  return {
    name: meta['name'] as string,
    tier,
    priority,
    subject: readSubject(spec['subject'], readSelector, report),
    ingress: readRules(spec['ingress'], 'ingress', readSelector, report),
    egress: readRules(spec['egress'], 'egress', readSelector, report).map((rule, i) => domainRuleChecked(rule, i, tier, report)),
  };
}

function readSubject(v: unknown, readSelector: (v: unknown) => LabelSelector, report: Report): CnpSubject {
  const subject = record(v);
  const namespaces = record(subject?.['namespaces']);
  const pods = record(subject?.['pods']);
  // "Exactly one of the selector pointers must be set."
  if (namespaces && !pods) return { kind: 'namespaces', namespaceSelector: readSelector(namespaces) };
  if (pods && !namespaces) {
    return { kind: 'pods', namespaceSelector: readSelector(pods['namespaceSelector']), podSelector: readSelector(pods['podSelector']) };
  }
  report('spec.subject', 'must set exactly one of namespaces, pods; read as every namespace (fail closed)');
  return { kind: 'namespaces', namespaceSelector: EVERYTHING };
}

function readRules(v: unknown, direction: 'ingress' | 'egress', readSelector: (v: unknown) => LabelSelector, report: Report): CnpRule[] {
  if (v === undefined || v === null) return [];
  // A rule list we cannot read stands for rules we cannot read: one deny-all rule.
  if (!Array.isArray(v)) return [{ peers: [{ kind: 'unknown', what: `unreadable spec.${direction}` }] }];
  const peersField = direction === 'ingress' ? 'from' : 'to';
  return v.map((r, i): CnpRule => {
    const at = `spec.${direction}[${i}]`;
    const rule = record(r) ?? {};
    const action = rule['action'];
    const name = rule['name'];
    const peersIn = rule[peersField];
    const peers: CnpPeer[] = Array.isArray(peersIn)
      ? peersIn.map((p, j) => readPeer(p, direction, `${at}.${peersField}[${j}]`, readSelector, report))
      : [{ kind: 'unknown', what: `${at}.${peersField} missing` }];
    const protocolsIn = rule['protocols'];
    const protocols = Array.isArray(protocolsIn) ? protocolsIn.map((p, j) => readProtocol(p, `${at}.protocols[${j}]`, report)) : undefined;
    return {
      ...(typeof name === 'string' && name !== '' ? { name } : {}),
      ...(isAction(action) ? { action } : {}),
      peers,
      ...(protocols && protocols.length > 0 ? { protocols } : {}),
    };
  });
}

function readPeer(
  v: unknown,
  direction: 'ingress' | 'egress',
  at: string,
  readSelector: (v: unknown) => LabelSelector,
  report: Report,
): CnpPeer {
  const peer = record(v);
  if (!peer) return { kind: 'unknown', what: `${at} unreadable` };
  const set = Object.keys(peer).filter((k) => peer[k] !== undefined && peer[k] !== null);
  const known = direction === 'ingress' ? ['namespaces', 'pods'] : ['namespaces', 'pods', 'networks', 'nodes', 'domainNames'];
  const ours = set.filter((k) => known.includes(k));
  if (ours.length !== 1 || set.length !== 1) {
    // "If a peer has no known field set, the CRD is newer than the implementation": not an error of the
    // object (domainNames is a real, experimental peer), but the rule must fail closed.
    const what = set.length === 0 ? 'no peer field set' : set.join('+');
    const invalid =
      set.length !== 1 ||
      !['namespaces', 'pods', 'networks', 'nodes', 'domainNames'].includes(set[0]!) ||
      (direction === 'ingress' && set[0] !== 'namespaces' && set[0] !== 'pods');
    report(at, `peer ${what} is not supported${invalid ? '' : ' by netfence'}; the rule fails closed`, invalid ? 'error' : 'warning');
    return { kind: 'unknown', what };
  }
  switch (ours[0]) {
    case 'namespaces':
      return { kind: 'namespaces', namespaceSelector: readSelector(peer['namespaces']) };
    case 'pods': {
      const pods = record(peer['pods']) ?? {};
      return { kind: 'pods', namespaceSelector: readSelector(pods['namespaceSelector']), podSelector: readSelector(pods['podSelector']) };
    }
    case 'networks': {
      const cidrs = Array.isArray(peer['networks']) ? peer['networks'].filter((c): c is string => typeof c === 'string') : [];
      return { kind: 'networks', cidrs };
    }
    case 'domainNames':
      return readDomainNames(peer['domainNames'], `${at}.domainNames`, report);
    default:
      return { kind: 'nodes', nodeSelector: readSelector(peer['nodes']) };
  }
}

/** "DomainNames can have up to 25 domain names specified in one rule" (MinItems=1, MaxItems=25), each a DomainName. */
function readDomainNames(v: unknown, at: string, report: Report): CnpPeer {
  if (!Array.isArray(v) || v.length === 0 || v.length > 25) {
    report(at, 'must list 1 to 25 domain names; the rule fails closed');
    return { kind: 'unknown', what: 'domainNames' };
  }
  for (const [k, name] of v.entries()) {
    const problem = typeof name === 'string' ? domainNameProblem(name) : 'not a string';
    if (problem === undefined) continue;
    report(`${at}[${k}]`, `${problem}; the rule fails closed`);
    return { kind: 'unknown', what: 'domainNames' };
  }
  return { kind: 'domainNames', names: [...new Set(v as string[])] };
}

/**
 * "DomainNames is only supported for Accept rules": on a Deny or Pass rule the peer is an error and the rule
 * fails closed (a Deny-all). In the Baseline tier netfence does not learn names (the API offers name-based
 * egress to cluster admins, NPEP-133): a warning, and the rule matches nothing.
 */
function domainRuleChecked(rule: CnpRule, i: number, tier: ClusterNetworkPolicy['tier'], report: Report): CnpRule {
  if (!rule.peers.some((p) => p.kind === 'domainNames')) return rule;
  const refuse = (j: number, message: string, severity?: Problem['severity']): CnpPeer => {
    report(`spec.egress[${i}].to[${j}].domainNames`, `${message}; the rule fails closed`, severity);
    return { kind: 'unknown', what: 'domainNames' };
  };
  const peers = rule.peers.map((p, j): CnpPeer => {
    if (p.kind !== 'domainNames') return p;
    if (rule.action !== 'Accept') return refuse(j, 'domainNames is only supported for Accept rules');
    if (tier !== 'Admin') return refuse(j, 'domainNames is supported by netfence in the Admin tier only', 'warning');
    return p;
  });
  return { ...rule, peers };
}

const L4: Readonly<Record<string, Protocol>> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };

function readProtocol(v: unknown, at: string, report: Report): CnpProtocol {
  const p = record(v);
  const set = p ? Object.keys(p).filter((k) => p[k] !== undefined && p[k] !== null) : [];
  if (!p || set.length !== 1) {
    report(at, 'must set exactly one of tcp, udp, sctp, destinationNamedPort; the rule fails closed');
    return { kind: 'unknown', what: set.join('+') || 'empty' };
  }
  const key = set[0]!;
  if (key === 'destinationNamedPort') {
    const name = p[key];
    if (typeof name === 'string' && name !== '') return { kind: 'named', name };
    report(`${at}.destinationNamedPort`, 'must be a non-empty port name; the rule fails closed');
    return { kind: 'unknown', what: 'destinationNamedPort' };
  }
  const protocol = L4[key];
  if (!protocol) {
    report(at, `protocol ${key} is not supported; the rule fails closed`, 'warning');
    return { kind: 'unknown', what: key };
  }
  const port = record(record(p[key])?.['destinationPort']);
  // "If not specified, this matches all ports."
  if (!port) return { kind: 'protocol', protocol };
  const number = port['number'];
  const range = record(port['range']);
  if (Number.isInteger(number) && !range) {
    if ((number as number) >= 1 && (number as number) <= 65535)
      return { kind: 'protocol', protocol, ports: { from: number as number, to: number as number } };
  } else if (range && (number === undefined || number === null)) {
    const start = range['start'];
    const end = range['end'];
    // CEL: "self.start < self.end"; both 1–65535.
    if (
      Number.isInteger(start) &&
      Number.isInteger(end) &&
      (start as number) >= 1 &&
      (end as number) <= 65535 &&
      (start as number) < (end as number)
    ) {
      return { kind: 'protocol', protocol, ports: { from: start as number, to: end as number } };
    }
  }
  report(`${at}.${key}.destinationPort`, 'must be one of number (1-65535) or range (start < end, 1-65535); the rule fails closed');
  return { kind: 'unknown', what: `${key} port` };
}

const isAction = (v: unknown): v is CnpAction => v === 'Accept' || v === 'Deny' || v === 'Pass';
