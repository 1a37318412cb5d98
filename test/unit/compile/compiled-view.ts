// Reads a compiled FamilyState back as plain facts (which policy chains a pod's workload chain runs, what each
// allow rule admits, with set names replaced by their members), so compiler tests assert on meaning rather
// than on rendered strings or hashed names. Anything it does not recognise throws.

import type { Chain, FamilyState, L4Protocol, Match, Rule } from '../../../src/model/index.js';

export interface AllowView {
  /** Members of the peer's address set (src for ingress, dst for egress); `any` when unrestricted. */
  readonly peer: 'any' | readonly string[];
  /** Members of the peer's negated set: an ipBlock's excepts, matched as "not in". */
  readonly except?: readonly string[];
  readonly proto?: L4Protocol;
  /** multiport list as `80,90:99`. */
  readonly ports?: string;
  /** Members of the `dst,dst` named-port set. */
  readonly namedPorts?: readonly string[];
}

/** `open`: not isolated. Otherwise the policies run (by `ns/name`) and every allow rule they hold, in order. */
export type DirectionView = 'open' | { readonly policies: readonly string[]; readonly allows: readonly AllowView[] };

export type Dir = 'ingress' | 'egress';

export const workloadChain = (state: FamilyState, pod: string, direction: Dir): Chain | undefined =>
  state.chains.find((c) => c.role.kind === 'workload' && c.role.pod === pod && c.role.direction === direction);

export function members(state: FamilyState, set: string): readonly string[] {
  const found = state.ipsets.find((s) => s.name === set);
  if (!found) throw new Error(`no set ${set}`);
  return found.members;
}

/** The pod's view in one direction; undefined when it has no workload chain (not a local target). */
export function viewPod(state: FamilyState, pod: string, direction: Dir): DirectionView | undefined {
  const chain = workloadChain(state, pod, direction);
  if (!chain) return undefined;
  const jumps = chain.rules.flatMap((r) => (r.action.kind === 'jump' ? [r.action.target] : []));
  const last = chain.rules[chain.rules.length - 1];
  const dropsAtEnd = last !== undefined && last.match.length === 0 && last.action.kind === 'drop';
  if (jumps.length === 0 && !dropsAtEnd) return 'open';
  if (jumps.length === 0 || !dropsAtEnd) throw new Error(`${chain.name}: jumps ${jumps.length} but final DROP ${dropsAtEnd}`);
  const chains = jumps.map((target) => {
    const c = state.chains.find((x) => x.name === target);
    if (!c || c.role.kind !== 'policy' || c.role.direction !== direction)
      throw new Error(`${chain.name} jumps to ${target}, not a ${direction} policy chain`);
    return { policy: c.role.policy, chain: c };
  });
  return { policies: chains.map((c) => c.policy), allows: chains.flatMap((c) => allowsOf(state, c.chain, direction)) };
}

/** What a policy chain admits: one AllowView per rule that sets the accept bit. */
export function allowsOf(state: FamilyState, chain: Chain, direction: Dir): AllowView[] {
  return chain.rules.filter((r) => r.action.kind === 'set-mark').map((r) => allowOf(state, r, direction));
}

function allowOf(state: FamilyState, rule: Rule, direction: Dir): AllowView {
  let peer: AllowView['peer'] = 'any';
  let proto: L4Protocol | undefined;
  let ports: string | undefined;
  let namedPorts: readonly string[] | undefined;
  let except: readonly string[] | undefined;
  const peerDir = direction === 'ingress' ? 'src' : 'dst';
  for (const m of rule.match as readonly Match[]) {
    if (m.kind === 'set' && !m.negate && m.direction === peerDir) peer = members(state, m.set);
    else if (m.kind === 'set' && m.negate && m.direction === peerDir) except = members(state, m.set);
    else if (m.kind === 'set' && !m.negate && m.direction === 'dst,dst') namedPorts = members(state, m.set);
    else if (m.kind === 'protocol' && m.protocol !== 'ipv6-icmp') proto = m.protocol;
    else if (m.kind === 'dports') ports = m.ports.map((r) => (r.from === r.to ? `${r.from}` : `${r.from}:${r.to}`)).join(',');
    else throw new Error(`unexpected match in an allow rule: ${JSON.stringify(m)}`);
  }
  return {
    peer,
    ...(except ? { except } : {}),
    ...(proto ? { proto } : {}),
    ...(ports ? { ports } : {}),
    ...(namedPorts ? { namedPorts } : {}),
  };
}
