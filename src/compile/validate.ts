// Semantic checks of a NetworkPolicy the API server would make. Any error makes the policy invalid,
// and an invalid policy fails closed (see compile.ts); warnings are reported and compiled around.

import type { NetworkPolicy, PolicyPeer, PolicyPort, PolicyRule, Problem } from '../model/index.js';
import { contains, parseCidr } from '../model/address.js';
import { blockMembers, ipBlockAlts } from './peers-ports.js';
import { selectorErrors } from './selectors.js';

// IANA_SVC_NAME: at most 15 characters, [a-z0-9-], at least one letter, no leading/trailing or double hyphen.
const SERVICE_NAME_RE = /^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-))*$/;

export function validatePolicy(policy: NetworkPolicy): Problem[] {
  const object = `NetworkPolicy ${policy.namespace}/${policy.name}`;
  const problems: Problem[] = [...(policy.problems ?? [])];
  const error = (field: string, message: string) => problems.push({ object, field, message, severity: 'error' });
  const warn = (field: string, message: string) => problems.push({ object, field, message, severity: 'warning' });

  for (const e of selectorErrors(policy.podSelector)) error(`spec.podSelector.${e.field}`, e.message);
  policy.ingress?.forEach((rule, i) => checkRule(rule, `spec.ingress[${i}]`, 'from', error, warn));
  policy.egress?.forEach((rule, i) => checkRule(rule, `spec.egress[${i}]`, 'to', error, warn));
  // Size is checked only once the policy is otherwise valid: an invalid one compiles to a single RETURN anyway.
  if (!problems.some((p) => p.severity === 'error')) checkSize(policy, error);
  return problems;
}

/**
 * Limits on what one policy may cost, past which it fails closed like any invalid policy. Compile cost is
 * near-linear in these counts, so bounding them bounds the time one policy can hold the sync loop; and a
 * set past ipset's practical size, or a chain of tens of thousands of rules, would hurt every packet the
 * node forwards. The API server has no such limit (only the object size), so these are netfence's own.
 */
export const POLICY_LIMITS = {
  /** CIDRs and excepts all ipBlocks of one policy write (set members). */
  blockCidrs: 65_536,
  /** iptables rules one policy's chains would hold (peers × ports per rule, summed). */
  rules: 10_000,
} as const;

function checkSize(policy: NetworkPolicy, error: Report): void {
  let cidrs = 0;
  let rules = 0;
  for (const [dir, list] of [
    ['ingress', policy.ingress],
    ['egress', policy.egress],
  ] as const) {
    for (const rule of list ?? []) {
      const selectorPeers = rule.peers?.filter((p) => !p.ipBlock).length ?? 0;
      const blockAlternatives = ipBlockAlts(rule.peers ?? [], 4).length + ipBlockAlts(rule.peers ?? [], 6).length;
      rules += Math.max(1, selectorPeers + blockAlternatives) * Math.max(1, rule.ports?.length ?? 0);
      for (const peer of rule.peers ?? []) {
        if (peer.ipBlock) cidrs += blockMembers(peer.ipBlock);
      }
      if (cidrs > POLICY_LIMITS.blockCidrs) {
        return error(
          `spec.${dir}`,
          `ipBlocks write more than ${POLICY_LIMITS.blockCidrs} CIDRs and excepts (netfence's per-policy limit); merge or shorten the excepts`,
        );
      }
    }
  }
  if (rules > POLICY_LIMITS.rules) {
    error(
      'spec',
      `the policy would need ${rules} iptables rules (peers × ports), more than netfence's per-policy limit of ${POLICY_LIMITS.rules}`,
    );
  }
}

type Report = (field: string, message: string) => void;

function checkRule(rule: PolicyRule, at: string, peersField: 'from' | 'to', error: Report, warn: Report): void {
  rule.peers?.forEach((peer, i) => checkPeer(peer, `${at}.${peersField}[${i}]`, error, warn));
  rule.ports?.forEach((port, i) => checkPort(port, `${at}.ports[${i}]`, error));
}

function checkPeer(peer: PolicyPeer, at: string, error: Report, warn: Report): void {
  const selectors = peer.podSelector !== undefined || peer.namespaceSelector !== undefined;
  if (!selectors && !peer.ipBlock) error(at, 'a peer must set podSelector, namespaceSelector or ipBlock');
  // "If this field is set then neither of the other fields can be." (NetworkPolicyPeer.ipBlock)
  if (selectors && peer.ipBlock) error(`${at}.ipBlock`, 'ipBlock cannot be combined with podSelector or namespaceSelector');
  for (const [name, sel] of [
    ['podSelector', peer.podSelector],
    ['namespaceSelector', peer.namespaceSelector],
  ] as const) {
    if (sel) for (const e of selectorErrors(sel)) error(`${at}.${name}.${e.field}`, e.message);
  }
  if (!peer.ipBlock) return;
  const cidr = parseCidr(peer.ipBlock.cidr);
  if (!cidr.ok) return error(`${at}.ipBlock.cidr`, cidr.message);
  if (cidr.hadHostBits) warn(`${at}.ipBlock.cidr`, `"${peer.ipBlock.cidr}" has host bits set; using its network address`);
  peer.ipBlock.except.forEach((text, j) => {
    const ex = parseCidr(text);
    const field = `${at}.ipBlock.except[${j}]`;
    if (!ex.ok) return error(field, ex.message);
    // "Except is a slice of CIDRs that should not be included within an IPBlock ... Except values will
    // be rejected if they are outside the cidr range"
    if (!contains(cidr.cidr, ex.cidr)) error(field, `"${text}" is not inside cidr "${peer.ipBlock!.cidr}"`);
  });
}

function checkPort(port: PolicyPort, at: string, error: Report): void {
  if (typeof port.port === 'number') {
    if (!Number.isInteger(port.port) || port.port < 1 || port.port > 65535) error(`${at}.port`, `port ${port.port} is not in 1-65535`);
  } else if (typeof port.port === 'string') {
    if (port.port.length > 15 || !SERVICE_NAME_RE.test(port.port)) {
      error(`${at}.port`, `"${port.port}" is not a valid named port (IANA_SVC_NAME: ≤15 of [a-z0-9-], with a letter)`);
    }
  }
  if (port.endPort === undefined) return;
  // "endPort ... must be equal or greater than port ... cannot be defined if the port field is not
  // defined or if the port field is defined as a named (string) port."
  if (typeof port.port !== 'number') error(`${at}.endPort`, 'endPort needs a numeric port');
  else if (!Number.isInteger(port.endPort) || port.endPort < port.port || port.endPort > 65535) {
    error(`${at}.endPort`, `endPort ${port.endPort} must be in ${port.port}-65535`);
  }
}
