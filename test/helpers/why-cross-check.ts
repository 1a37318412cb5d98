// `netfence why` held against real packets and the live kernels, inside the conformance runs: for every
// probed cell, the cluster-wide answer (each node compiled in-process) must equal what the probe saw, and
// each node pass why walked must end as the same packet traced (`netfence trace`'s tracer) through that
// node's live ruleset (iptables-save + ipset save in the node's namespace) ends. In-process and cheap: no
// extra sandbox time beyond one save per node per check.

import { run } from '../../src/dataplane/exec.js';
import type { ClusterSnapshot, IpFamily, NodeSettings, Protocol } from '../../src/model/index.js';
import { parseIpsetSave } from '../../src/render/index.js';
import { loadRuleset, tracePacket, type IpSets, type Ruleset } from '../../src/trace/index.js';
import { whyConnection, type CompiledRules } from '../../src/why/index.js';

export interface ProbedCell {
  readonly from: string;
  readonly to: string;
  readonly protocol: Protocol;
  readonly port: number;
  /** What the probe observed (or the expectation the same step's probes confirmed). */
  readonly reachable: boolean;
}

export interface WhyCheckOptions {
  readonly family: IpFamily;
  /**
   * The sandbox's nodes, their network namespaces, and the Node objects an API server would list for them
   * (a manifest run has none: netfence apply takes --pod-cidr instead; `why` needs them to know a node's
   * addresses and pod CIDRs, as it has them from the API in a real cluster).
   */
  readonly nodes: readonly {
    readonly name: string;
    readonly netns: string;
    readonly addresses?: readonly string[];
    readonly podCidrs?: readonly string[];
  }[];
  readonly settingsFor: (node: string) => NodeSettings;
}

interface LiveRules {
  readonly ruleset: Ruleset;
  readonly ipsets: IpSets;
}

/** One line per cell where why disagrees with the probe, or a node pass with the live kernel. */
export async function whyDisagreements(given: ClusterSnapshot, cells: readonly ProbedCell[], o: WhyCheckOptions): Promise<string[]> {
  const snapshot: ClusterSnapshot =
    given.nodes.length > 0
      ? given
      : { ...given, nodes: o.nodes.map((n) => ({ name: n.name, addresses: n.addresses ?? [], podCidrs: n.podCidrs ?? [] })) };
  const live = new Map<string, Promise<LiveRules>>();
  const liveOf = (node: string): Promise<LiveRules> => {
    let rules = live.get(node);
    if (!rules) {
      const netns = o.nodes.find((n) => n.name === node)?.netns;
      if (netns === undefined) throw new Error(`no sandbox node ${node}`);
      rules = readLive(netns, o.family);
      live.set(node, rules);
    }
    return rules;
  };
  const ref = (endpoint: string): string => {
    if (!endpoint.startsWith('node:')) return endpoint;
    const node = snapshot.nodes.find((n) => n.name === endpoint.slice('node:'.length));
    const ip = node?.addresses.find((a) => a.includes(':') === (o.family === 6));
    if (ip === undefined) throw new Error(`no IPv${o.family} address for ${endpoint} in the snapshot`);
    return ip;
  };
  // One snapshot and one settingsFor for every cell: each node is compiled once per matrix, not once per cell.
  const compiled: CompiledRules = new Map();
  const out: string[] = [];
  for (const cell of cells) {
    // Node to node: no pod, nothing netfence judges (why refuses the question).
    if (cell.from === cell.to || (cell.from.startsWith('node:') && cell.to.startsWith('node:'))) continue;
    const proto = cell.protocol.toLowerCase() as 'tcp' | 'udp' | 'sctp';
    const what = `${cell.protocol}/${cell.port} ${cell.from} -> ${cell.to}`;
    const answer = whyConnection(
      snapshot,
      o.settingsFor,
      {
        src: ref(cell.from),
        dst: ref(cell.to),
        proto,
        port: cell.port,
        family: o.family,
      },
      compiled,
    );
    if ((answer.verdict === 'allowed') !== cell.reachable)
      out.push(
        `  ${what}: the probe saw ${cell.reachable ? 'reachable' : 'blocked'}, why says ${answer.verdict}${answer.droppedAt ? ` at ${answer.droppedAt}` : ''}: ${answer.sides.map((s) => `${s.node} ${s.direction} ${s.verdict}: ${s.because}`).join('; ')}`,
      );
    for (const hop of answer.hops) {
      const { ruleset, ipsets } = await liveOf(hop.node);
      const packet = {
        src: answer.connection.src.ip,
        dst: answer.connection.dst.ip,
        proto,
        dport: cell.port,
        inIface: hop.inIface,
        outIface: hop.outIface,
        ctstate: 'NEW' as const,
      };
      const t = tracePacket(ruleset, ipsets, packet, { startChain: hop.chain });
      const verdict = t.verdict === 'NO-VERDICT' ? (t.after?.verdict ?? 'ACCEPT') : t.verdict;
      if (verdict !== hop.verdict)
        out.push(`  ${what}: on ${hop.node} (${hop.chain}) why's compiled ruleset says ${hop.verdict}, the live kernel's trace ${verdict}`);
    }
  }
  return out;
}

async function readLive(netns: string, family: IpFamily): Promise<LiveRules> {
  const save = family === 6 ? 'ip6tables-save' : 'iptables-save';
  const text = (await run(save, ['-t', 'filter'], { netns })).stdout;
  const sets = (await run('ipset', ['save'], { netns })).stdout;
  return { ruleset: loadRuleset(text), ipsets: parseIpsetSave(sets) };
}
