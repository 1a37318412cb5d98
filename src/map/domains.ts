// ClusterNetworkPolicy `domainNames` peers on the map. Their addresses are learned at run time: each subject
// pod's own DNS answers fill a set of its own (model/dns-egress.ts), empty in the compiled rules. The map asks
// what the rules allow *after a lookup*: every node is compiled as prepare.ts compiles it, and each learned set
// of one list of names gets one stand-in answer, an address outside every CIDR the policies name (so only the
// learned set tells it apart from the rest of the world); that address, cut as a block of its own, is drawn
// as the outside group of those names. This is the map's input (the compiled rules it traces), not a second
// reading of the spec: the tracer decides, with the very rule the kernel holds.

import { Compiler } from '../compile/index.js';
import type { ClusterSnapshot, IpFamily, NodeSettings } from '../model/index.js';
import { compiledKey, nodeRulesOf, type CompiledRules, type NodeRules } from '../why/index.js';
import type { ConnectivityMap, MapGroup } from './model.js';
import { blockParts, blockText, outsideBlocks } from './outside.js';

/** One list of names, and the address that stands for what a lookup of them answered. */
export interface LookupPeer {
  readonly names: readonly string[];
  readonly address: string;
}

export interface Lookups {
  /** Every node's rules, learned sets holding their stand-in (hand to buildMap as its compiled rules). */
  readonly compiled: CompiledRules;
  readonly peers: readonly LookupPeer[];
  /** `address/32` (or /128) of each peer: cut as blocks of their own (buildMap's extraCidrs). */
  readonly cidrs: readonly string[];
}

/** No lookups: a fresh cache each time (buildMap fills it with this cluster's compiled nodes). */
const none = (): Lookups => ({ compiled: new Map(), peers: [], cidrs: [] });

export const hasDomainNames = (snapshot: ClusterSnapshot): boolean =>
  (snapshot.clusterPolicies ?? []).some((p) => p.egress.some((r) => r.peers.some((peer) => peer.kind === 'domainNames')));

export function withLookups(snapshot: ClusterSnapshot, settingsFor: (node: string) => NodeSettings, family: IpFamily): Lookups {
  if (!hasDomainNames(snapshot)) return none();
  const compiler = new Compiler();
  const nodes = [...new Set(snapshot.pods.map((p) => p.nodeName))].filter((n) => n !== '').sort();
  const rulesOf = new Map<string, NodeRules>();
  const learned = new Map<string, string>(); // set name → its names' key
  const namesOf = new Map<string, readonly string[]>();
  for (const node of nodes) {
    const settings = settingsFor(node);
    const desired = compiler.compile(snapshot, settings).desired;
    rulesOf.set(node, nodeRulesOf(snapshot, settings, node, family === 6 ? desired.v6 : desired.v4));
    for (const set of desired.dns?.sets ?? []) {
      if (set.family !== family) continue;
      const names = [...new Set(set.domainNames)].sort();
      const key = names.join(' ');
      learned.set(set.setName, key);
      namesOf.set(key, names);
    }
  }
  if (namesOf.size === 0) return none();
  // Stand-ins outside every CIDR the policies name: the first free address of the whole address space, each
  // one then cut away so the next is another.
  const named = [
    ...new Set([...rulesOf.values()].flatMap((r) => [...r.ipsets.values()].filter((s) => s.type === 'hash:net').flatMap((s) => s.members))),
  ];
  const whole = family === 6 ? '::/0' : '0.0.0.0/0';
  const cidrs: string[] = [];
  const addressOf = new Map<string, string>();
  for (const key of [...namesOf.keys()].sort()) {
    const widest = outsideBlocks(snapshot, family, [...named, ...cidrs]).find((b) => b.text.split(' ')[0] === whole);
    if (!widest) continue; // the policies name the whole space in pieces: no address stands for "elsewhere"
    addressOf.set(key, widest.ip);
    cidrs.push(`${widest.ip}/${family === 6 ? 128 : 32}`);
  }
  const compiled: CompiledRules = new Map();
  for (const [node, rules] of rulesOf) {
    const ipsets = new Map(rules.ipsets);
    for (const [name, set] of rules.ipsets) {
      const address = addressOf.get(learned.get(name) ?? '');
      if (address !== undefined) ipsets.set(name, { ...set, members: [...set.members, address] });
    }
    compiled.set(compiledKey(family, node), { ...rules, ipsets });
  }
  const peers = [...addressOf.entries()].map(([key, address]) => ({ names: namesOf.get(key)!, address }));
  return { compiled, peers, cidrs };
}

/**
 * The map with each stand-in's group named by its names (`domainNames` on the group, `dns:N` for its id), and
 * the stand-ins left out of the other blocks' "except" lists (they are not CIDRs any policy names).
 */
export function nameLookups(map: ConnectivityMap, lookups: Lookups): ConnectivityMap {
  if (lookups.peers.length === 0) return map;
  const byCidr = new Map(lookups.peers.map((p, i) => [lookups.cidrs[i]!, { ...p, id: `dns:${i}` }]));
  const ids = new Map<string, string>();
  const groups = map.groups.map((g): MapGroup => {
    const cidrs = g.cidrs ?? [];
    const peer = cidrs.length === 1 ? byCidr.get(cidrs[0]!) : undefined;
    if (peer) {
      ids.set(g.id, peer.id);
      return { ...g, id: peer.id, workload: `${peer.names.join(', ')} (after a lookup)`, domainNames: peer.names, cidrs: [] };
    }
    return g.cidrs ? { ...g, cidrs: cidrs.map((c) => withoutStandIns(c, byCidr)) } : g;
  });
  const id = (x: string): string => ids.get(x) ?? x;
  return { ...map, groups, edges: map.edges.map((e) => ({ ...e, from: id(e.from), to: id(e.to) })) };
}

function withoutStandIns(text: string, standIns: ReadonlyMap<string, unknown>): string {
  const { base, except } = blockParts(text);
  return blockText(
    base,
    except.filter((c) => !standIns.has(c)),
  );
}
