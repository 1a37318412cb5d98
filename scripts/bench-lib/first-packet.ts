// A static upper bound on how many rules the first packet of a connection is checked against.
//
// The worst packet is pod-to-pod on this node: bridged, it runs both the sender's egress side and the
// receiver's ingress side in one FORWARD pass. Per side we count, for the local pod with the longest path:
//   dispatch: every rule of each dispatch chain up to and including the goto that matches its IP,
//   workload chain: all of its rules (nothing accepted until the final DROP),
//   policy chains: all rules of every policy chain it jumps to (none sets the accept bit).
// Plus the nf-FORWARD rules. Rules behind a matching conntrack ESTABLISHED accept never see a new flow,
// but they are still checked, so they count. This is a bound, not a trace: real packets usually stop early.

import { containsIp, parseCidr, parseIp } from '../../src/model/address.js';
import type { Chain, ChainName, FamilyState, Rule } from '../../src/model/index.js';

export interface SidePath {
  readonly pod: string;
  readonly dispatch: number;
  readonly dispatchDepth: number;
  readonly workload: number;
  readonly policies: number;
  readonly policyChains: number;
  readonly setMatches: number;
  readonly total: number;
}

export interface FirstPacketBound {
  readonly forward: number;
  readonly egress: SidePath | undefined;
  readonly ingress: SidePath | undefined;
  readonly total: number;
  readonly setMatches: number;
}

const hasSet = (r: Rule): boolean => r.match.some((m) => m.kind === 'set');

export function firstPacketBound(state: FamilyState): FirstPacketBound {
  const chains = new Map<string, Chain>(state.chains.map((c) => [c.name, c]));
  const forward = state.chains.find((c) => c.role.kind === 'static');
  const roots = state.chains.filter(
    (c) =>
      c.role.kind === 'dispatch' && !state.chains.some((o) => o.rules.some((r) => r.action.kind === 'goto' && r.action.target === c.name)),
  );
  const rootFor = (direction: 'from' | 'to') => roots.find((c) => c.role.kind === 'dispatch' && c.role.direction === direction);
  const side = (direction: 'ingress' | 'egress'): SidePath | undefined => {
    const root = rootFor(direction === 'egress' ? 'from' : 'to');
    let worst: SidePath | undefined;
    for (const wl of state.chains) {
      if (wl.role.kind !== 'workload' || wl.role.direction !== direction) continue;
      const path = sidePath(wl, root, chains);
      if (!worst || path.total > worst.total) worst = path;
    }
    return worst;
  };
  const egress = side('egress');
  const ingress = side('ingress');
  const fwd = forward?.rules.length ?? 0;
  return {
    forward: fwd,
    egress,
    ingress,
    total: fwd + (egress?.total ?? 0) + (ingress?.total ?? 0),
    setMatches: (egress?.setMatches ?? 0) + (ingress?.setMatches ?? 0),
  };
}

function sidePath(wl: Chain, root: Chain | undefined, chains: ReadonlyMap<string, Chain>): SidePath {
  if (wl.role.kind !== 'workload') throw new Error(`${wl.name} is not a workload chain`);
  const walk = root ? dispatchScan(root, wl.role.ip, wl.name, chains) : { scanned: 0, depth: 0 };
  let policies = 0;
  let policyChains = 0;
  let setMatches = wl.rules.filter(hasSet).length;
  for (const rule of wl.rules) {
    if (rule.action.kind !== 'jump') continue;
    const target = chains.get(rule.action.target);
    if (!target) continue;
    policyChains++;
    policies += target.rules.length;
    setMatches += target.rules.filter(hasSet).length;
  }
  const total = walk.scanned + wl.rules.length + policies;
  return {
    pod: wl.role.pod,
    dispatch: walk.scanned,
    dispatchDepth: walk.depth,
    workload: wl.rules.length,
    policies,
    policyChains,
    setMatches,
    total,
  };
}

/** Rules checked from the dispatch root to the goto into `target`, following the matching address prefix. */
function dispatchScan(root: Chain, ip: string, target: ChainName, chains: ReadonlyMap<string, Chain>): { scanned: number; depth: number } {
  const addr = parseIp(ip);
  let scanned = 0;
  let depth = 0;
  let chain: Chain | undefined = root;
  while (chain && addr) {
    depth++;
    let next: Chain | undefined;
    for (const rule of chain.rules) {
      scanned++;
      const net = rule.match.find((m) => m.kind === 'src-net' || m.kind === 'dst-net');
      if (rule.action.kind !== 'goto' || !net || (net.kind !== 'src-net' && net.kind !== 'dst-net')) continue;
      const cidr = parseCidr(net.cidr);
      if (!cidr.ok || !containsIp(cidr.cidr, addr.family, addr.value)) continue;
      if (rule.action.target === target) return { scanned, depth };
      next = chains.get(rule.action.target);
      break;
    }
    chain = next;
  }
  return { scanned, depth };
}
