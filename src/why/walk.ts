// One connection across the cluster: which nodes judge it, and what each one's desired ruleset says.
// In a flannel cluster a packet between pods on two nodes crosses FORWARD twice — the sender's node
// judges its egress (bridge → uplink), the receiver's node its ingress (uplink → bridge) — and a
// same-node pair is bridged through FORWARD once, where both directions are judged. A pod's packet to
// its own node's address is delivered through INPUT instead; host-originated traffic to a local pod
// leaves through OUTPUT, which netfence never polices. Each node's ruleset is compiled here, from the
// snapshot, exactly as that node's daemon would compile it; nothing is read from a kernel.

import { compile } from '../compile/index.js';
import type { Chain, ClusterSnapshot, FamilyState, IpFamily, L4Protocol, NodeSettings } from '../model/index.js';
import {
  packetFor,
  rulesetOfDesired,
  type SavedForms,
  tracePacket,
  type IpSets,
  type NodeLayout,
  type Packet,
  type Ruleset,
  type TraceResult,
} from '../trace/index.js';
import type { Endpoint } from './endpoints.js';

export interface Connection {
  readonly src: Endpoint;
  readonly dst: Endpoint;
  readonly family: IpFamily;
  readonly proto: L4Protocol;
  readonly port: number;
}

/** One pass of the packet through one node's filter table. */
export interface Hop {
  readonly node: string;
  /** The built-in chain the packet enters on that node. */
  readonly chain: 'FORWARD' | 'INPUT';
  /** What this pass judges: the sender's egress, the receiver's ingress, or both (same node). */
  readonly judges: readonly ('egress' | 'ingress')[];
  readonly packet: Packet;
  readonly trace: TraceResult;
}

/** A pass netfence has no part in (host-originated traffic, a node's INPUT with no netfence hook). */
export interface Unpoliced {
  readonly node: string;
  readonly direction: 'egress' | 'ingress';
  readonly why: string;
}

export interface Walk {
  readonly hops: readonly Hop[];
  readonly unpoliced: readonly Unpoliced[];
  /** The nodes whose rulesets this walk consulted (each compiled once). */
  readonly compiled: readonly string[];
}

/** A node's desired ruleset as the tracer reads it, compiled on first use. */
export interface NodeRules {
  readonly ruleset: Ruleset;
  readonly ipsets: IpSets;
  readonly layout: NodeLayout;
  /** The compiled chains the ruleset was made from, with their roles (which pod, which policy). */
  readonly chains: readonly Chain[];
}

/** Where flannel sends what leaves a node for another node or the outside; only the bridge is named by our rules. */
const UPLINK = 'eth0';

/**
 * Nodes' compiled rulesets, by family and node. One question compiles each node once; a caller asking many
 * questions of the same snapshot and settings (a whole reachability matrix) can pass one cache to all of them.
 */
export type CompiledRules = Map<string, NodeRules>;

/** The cache key of a node's rules of one family. */
export const compiledKey = (family: IpFamily, node: string): string => `${family}/${node}`;

/** A node's compiled family state as the tracer reads it, laid out as flannel places that node's pods. */
export function nodeRulesOf(
  snapshot: ClusterSnapshot,
  settings: NodeSettings,
  node: string,
  state: FamilyState,
  forms?: SavedForms,
): NodeRules {
  const { ruleset, ipsets } = rulesetOfDesired(state, forms);
  const layout = { bridge: settings.bridge, uplink: UPLINK, podCidrs: settings.podCidrs, localIps: localIps(snapshot, node) };
  return { ruleset, ipsets, layout, chains: state.chains };
}

export function walkConnection(
  snapshot: ClusterSnapshot,
  settingsFor: (node: string) => NodeSettings,
  c: Connection,
  cache: CompiledRules = new Map(),
): Walk {
  const consulted = new Set<string>();
  const rulesOf = (node: string): NodeRules => {
    consulted.add(node);
    const key = compiledKey(c.family, node);
    let rules = cache.get(key);
    if (!rules) {
      const settings = settingsFor(node);
      const desired = compile(snapshot, settings).desired;
      rules = nodeRulesOf(snapshot, settings, node, c.family === 6 ? desired.v6 : desired.v4);
      cache.set(key, rules);
    }
    return rules;
  };
  const hops: Hop[] = [];
  const unpoliced: Unpoliced[] = [];
  const flow = { src: c.src.ip, dst: c.dst.ip, proto: c.proto, dport: c.port };
  const forward = (node: string, judges: Hop['judges']): void => {
    const { ruleset, ipsets, layout } = rulesOf(node);
    const packet = packetFor(flow, layout);
    hops.push({
      node,
      chain: 'FORWARD',
      judges,
      packet,
      trace: tracePacket(ruleset, ipsets, packet, { chainPrefix: settingsFor(node).chainPrefix }),
    });
  };
  const input = (node: string, judges: Hop['judges'], fromBridge: boolean): void => {
    const { ruleset, ipsets, layout } = rulesOf(node);
    if (!ruleset.chains.has('INPUT')) {
      unpoliced.push({
        node,
        direction: judges[0]!,
        why: fromBridge
          ? 'a pod to its own node: no ClusterNetworkPolicy egress hooks INPUT here, and NetworkPolicy always allows a pod its own node'
          : "traffic to a node's own address: netfence polices pods, not nodes",
      });
      return;
    }
    const packet: Packet = { ...flow, inIface: fromBridge ? layout.bridge : layout.uplink, outIface: '', ctstate: 'NEW' };
    hops.push({
      node,
      chain: 'INPUT',
      judges,
      packet,
      trace: tracePacket(ruleset, ipsets, packet, { chainPrefix: settingsFor(node).chainPrefix, startChain: 'INPUT' }),
    });
  };

  const { src, dst } = c;
  // An address of a node's pod CIDR that no pod owns leaves through that node's bridge too (and fails closed there).
  const srcNode = src.kind === 'pod' || src.kind === 'unknown-pod' ? src.node : undefined;
  const dstNode = dst.kind === 'pod' || dst.kind === 'unknown-pod' ? dst.node : undefined;
  if (srcNode !== undefined && dstNode === srcNode) forward(srcNode, ['egress', 'ingress']);
  else if (srcNode !== undefined && dst.kind === 'node' && dst.node === srcNode) input(srcNode, ['egress'], true);
  else {
    if (srcNode !== undefined) forward(srcNode, ['egress']);
    if (dstNode !== undefined) {
      // A node's own processes reach its pods through OUTPUT, never FORWARD.
      if (src.kind === 'node' && src.node === dstNode)
        unpoliced.push({
          node: dstNode,
          direction: 'ingress',
          why: 'host-originated traffic to a local pod leaves through OUTPUT, which netfence does not police',
        });
      else forward(dstNode, ['ingress']);
    } else if (dst.kind === 'node') input(dst.node, ['ingress'], false);
  }
  return { hops, unpoliced, compiled: [...consulted] };
}

/** Each node's pod addresses, by pod list: a map asks for every node of one list (one walk, not one per node). */
const localIpsByList = new WeakMap<ClusterSnapshot['pods'], Map<string, string[]>>();
function localIps(snapshot: ClusterSnapshot, node: string): string[] {
  let byNode = localIpsByList.get(snapshot.pods);
  if (!byNode) {
    byNode = new Map();
    for (const p of snapshot.pods) {
      if (p.hostNetwork) continue;
      const list = byNode.get(p.nodeName);
      if (list) list.push(...p.ips);
      else byNode.set(p.nodeName, [...p.ips]);
    }
    localIpsByList.set(snapshot.pods, byNode);
  }
  return [...(byNode.get(node) ?? [])];
}
