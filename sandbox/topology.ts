// A flannel-like cluster built of network namespaces: one underlay bridge, one namespace per node
// (cni0 bridge, host-gw routes, flanneld's iptables rules), one namespace per pod on a veth, and a
// probe agent in every pod and node. Nothing touches the root namespace; everything created is
// recorded in the exit/signal registry at once, so even a half-built sandbox is removed.

import { removeCniResult, writeCniResult, type CachedPod } from './cni-cache.js';
import type { Logger } from '../src/log.js';
import { run } from '../src/dataplane/exec.js';
import { DEFAULT_PORTS, startAgent, type Agent, type ProbeRequest, type ProbeResult } from './agent.js';
import {
  NODE_SYSCTLS,
  NODE_SYSCTLS_V6,
  POD_SYSCTLS_V6,
  flannelRestore,
  flannelSubnetEnv,
  flannelSubnetEnvV6Only,
  nodeBatch,
  podBatch,
  podHostBatch,
  underlayBridgeBatch,
  underlayPortBatch,
  type NodePlan,
  type PodAddress,
} from './commands.js';
import {
  DEFAULT_CLUSTER_CIDR6,
  DEFAULT_UNDERLAY_CIDR6,
  externalIpv6,
  planNodeIpv6,
  podIpv6,
  type Ipv6Plan,
  type NodeIpv6,
} from './ipv6.js';
import {
  cidrSize,
  cidrsOverlap,
  cidrContains,
  formatIpv4,
  gatewayOf,
  isAssignable,
  nextFreeIp,
  parseIpv4,
  parseIpv4Cidr,
  type Ipv4Cidr,
} from './ipv4.js';
import { checkName, checkNamespace, nodeKey, podKey, randomRunId, randomVethName, sandboxNames, type SandboxNames } from './names.js';
import { guard, removeSync, type OwnedResources } from './registry.js';

export interface SandboxSpec {
  /** Run id (1–8 of [0-9a-z]); random 4 hex digits when absent. Names start with `nfs<id>-`. */
  readonly id?: string;
  readonly nodes: readonly { readonly name: string; readonly podCidr: string }[];
  /** Default 10.244.0.0/16: flannel's default Network; every pod CIDR must lie inside it. */
  readonly clusterCidr?: string;
  /** Default 10.99.0.0/24: node addresses, one per node in order (.1, .2, …). */
  readonly underlayCidr?: string;
  /**
   * Dual-stack, as flannel's EnableIPv6 builds it: node i gets the (i+1)th /64 of `clusterCidr`
   * (default fd00:10:244::/56) with ::1 on cni0 beside the IPv4 gateway, an underlay address
   * ::(i+1) of `underlayCidr` (default fd00:99::/64), and routes to every other node's /64.
   * Absent: IPv4 only, exactly as before.
   * `only: true`: IPv6-only nodes (flannel with EnableIPv4 false): no IPv4 address or route on any link,
   * no flannel iptables rules, pods IPv6-only, and the node's `podCidr`/`gatewayIp`/`underlayIp` are its
   * IPv6 ones. Each node's `podCidr` in the spec then only numbers its pods (10.244.1.5 ↔ …:1::5).
   */
  readonly ipv6?: Partial<Ipv6Plan> & { readonly only?: boolean };
}

export type SandboxFamily = 4 | 6;

export interface SandboxOptions {
  /** Ports every agent serves on TCP, UDP and SCTP. Default 80, 81. */
  readonly ports?: readonly number[];
  /**
   * Which iptables backend flannel's rules go into (`iptables` = whatever /usr/sbin/iptables is, nft
   * here). Backend detection counts rules per backend, as kube-proxy's iptables-wrappers do, so the
   * foreign rules decide which backend a node "uses". Default `iptables`.
   */
  readonly iptables?: 'iptables' | 'nft' | 'legacy';
  /** Sandbox events at debug level (created, pods added, agent stderr). */
  readonly logger?: Logger;
  /**
   * Write a libcni-style result cache per pod under `<cniCacheDir>/<node>/results/` (see cni-cache.ts),
   * as a containerd or CRI-O node would, so netfence can bind pod ports to addresses. Off by default.
   */
  readonly cniCacheDir?: string;
}

export interface SandboxNode {
  readonly name: string;
  /** `node:<name>`, the node's key as a probe source or target. */
  readonly key: string;
  readonly netns: string;
  readonly podCidr: string;
  /** cni0's address, the pods' default gateway. */
  readonly gatewayIp: string;
  readonly underlayIp: string;
  /**
   * What flanneld would write to /run/flannel/subnet.env on this node. The sandbox writes no files:
   * its nodes share one filesystem, so whoever needs the file writes it under a per-node path.
   */
  readonly subnetEnv: string;
  /** A dual-stack sandbox's IPv6 side of the node. */
  readonly ipv6?: NodeIpv6;
}

export interface PodSpec {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  /** A fixed address in the node's pod CIDR (IP-reuse tests); the next free one when absent. */
  readonly ip?: string;
  /** Ports the pod's agent serves; the sandbox's ports when absent. */
  readonly ports?: readonly number[];
  /**
   * The pod's address families in podIPs order (`[6, 4]`: IPv6 first). Default: every family the
   * sandbox has, IPv4 first. `ip` still fixes the IPv4 slot; the IPv6 address follows it (ipv6.ts).
   */
  readonly families?: readonly SandboxFamily[];
}

export interface SandboxPod {
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`. */
  readonly key: string;
  readonly node: string;
  /** The pod's first address (Kubernetes `status.podIP`): IPv4 unless the pod lists IPv6 first. */
  readonly ip: string;
  /** Every address in podIPs order. */
  readonly ips: readonly string[];
  readonly ipv4?: string;
  readonly ipv6?: string;
  readonly netns: string;
  /** Host end of the pod's veth, in the node's namespace (`vethXXXXXXXX`). */
  readonly hostVeth: string;
  readonly ports: readonly number[];
}

export type PodRef = string | { readonly namespace: string; readonly name: string };

/** A host outside the cluster on the node underlay (a NodePort client): `ext:<name>` as a probe source. */
export interface SandboxExternal {
  readonly name: string;
  /** `ext:<name>`. */
  readonly key: string;
  readonly netns: string;
  readonly ip: string;
  /** Its IPv6 address on the underlay, in a dual-stack sandbox (counted down from the top of the IPv6 underlay). */
  readonly ipv6?: string;
}

export interface Sandbox {
  readonly id: string;
  /** `nfs<id>-`: the prefix of every namespace this sandbox owns. */
  readonly prefix: string;
  readonly clusterCidr: string;
  /** The IPv6 cluster prefix of a dual-stack or IPv6-only sandbox (flannel's IPv6Network). */
  readonly clusterCidr6?: string;
  nodes(): readonly SandboxNode[];
  pods(): readonly SandboxPod[];
  addPod(spec: PodSpec): Promise<SandboxPod>;
  /** Plugs a client namespace into the underlay, outside every node (the next free underlay address from the top). */
  addExternal(name: string): Promise<SandboxExternal>;
  removePod(pod: PodRef): Promise<void>;
  nodeNetns(node: string): string;
  podNetns(pod: PodRef): string;
  /**
   * The address a probe to this endpoint (pod key or `node:<name>`) targets: pod IP or node underlay IP;
   * with `family`, that family's (an error if the endpoint has none).
   */
  addressOf(endpoint: string, family?: SandboxFamily): string;
  /** Runs one probe from inside an endpoint's namespace. */
  probe(from: string, req: ProbeRequest): Promise<ProbeResult>;
  /** Every namespace this sandbox currently owns (underlay, nodes, pods). */
  namespaces(): readonly string[];
  destroy(): Promise<void>;
}

export type { ProbeRequest, ProbeResult };

interface NodeState extends SandboxNode {
  readonly cidr: Ipv4Cidr;
  readonly taken: Set<number>;
  agent?: Agent;
}

interface PodState extends SandboxPod {
  /** The reserved IPv4 host number (IPv6-only pods reserve one too: their IPv6 address follows it). */
  readonly slot: number;
  agent?: Agent;
}

interface ExternalState extends SandboxExternal {
  agent?: Agent;
}

const RESTORE = { iptables: 'iptables-restore', nft: 'iptables-nft-restore', legacy: 'iptables-legacy-restore' } as const;

const ipBatch = (netns: string, lines: readonly string[]): Promise<unknown> =>
  run('ip', ['-n', netns, '-batch', '-'], { input: `${lines.join('\n')}\n` });

const keyOf = (pod: PodRef): string => (typeof pod === 'string' ? pod : podKey(pod.namespace, pod.name));

export async function createSandbox(spec: SandboxSpec, opts: SandboxOptions = {}): Promise<Sandbox> {
  const clusterCidrText = spec.clusterCidr ?? '10.244.0.0/16';
  const clusterCidr = parseIpv4Cidr(clusterCidrText);
  const underlay = parseIpv4Cidr(spec.underlayCidr ?? '10.99.0.0/24');
  const ports = opts.ports ?? DEFAULT_PORTS;
  const log = opts.logger?.child({ component: 'sandbox' });
  const nodePlans = planNodes(spec, clusterCidr, underlay);
  const v6Plan: Ipv6Plan | undefined = spec.ipv6
    ? { clusterCidr: spec.ipv6.clusterCidr ?? DEFAULT_CLUSTER_CIDR6, underlayCidr: spec.ipv6.underlayCidr ?? DEFAULT_UNDERLAY_CIDR6 }
    : undefined;
  const nodeV6 = nodePlans.map((_, i) => (v6Plan ? planNodeIpv6(v6Plan, i) : undefined));
  const v6Only = spec.ipv6?.only === true;
  const names = await chooseNames(spec.id);
  const id = names.prefix.slice(3, -1);

  const owned: OwnedResources = { pids: new Set(), netns: [] };
  const unguard = guard(owned);
  const nodes = new Map<string, NodeState>();
  const pods = new Map<string, PodState>();
  const externals = new Map<string, ExternalState>();
  let destroyed = false;

  const addNetns = async (name: string): Promise<void> => {
    owned.netns.push(name); // recorded first: a failure after the kernel created it still removes it
    await run('ip', ['netns', 'add', name]);
  };
  const dropNetns = async (name: string): Promise<void> => {
    await run('ip', ['netns', 'del', name]).catch(() => undefined);
    const i = owned.netns.indexOf(name);
    if (i >= 0) owned.netns.splice(i, 1);
  };
  const launch = async (netns: string, name: string, agentPorts: readonly number[], announce?: string): Promise<Agent> => {
    if (destroyed) throw new Error(`sandbox ${id} was destroyed`);
    // The name carries the run prefix, so a leaked agent is findable by its command line.
    const agent = await startAgent({
      netns,
      ports: agentPorts,
      name: `${names.prefix}${name}`,
      ...(announce ? { announce } : {}),
      onStderr: (line) => log?.debug('agent stderr', { agent: name, line }),
    });
    owned.pids.add(agent.pid);
    if (destroyed) {
      // destroy() ran while this agent was starting: it must not outlive the sandbox.
      await stopAgent(agent);
      throw new Error(`sandbox ${id} was destroyed`);
    }
    return agent;
  };
  const stopAgent = async (agent: Agent | undefined): Promise<void> => {
    if (!agent) return;
    await agent.stop();
    owned.pids.delete(agent.pid);
  };
  const nodeOf = (name: string): NodeState => {
    const node = nodes.get(name);
    if (!node) throw new Error(`sandbox ${id} has no node "${name}"`);
    return node;
  };
  const podOf = (ref: PodRef): PodState => {
    const pod = pods.get(keyOf(ref));
    if (!pod) throw new Error(`sandbox ${id} has no pod "${keyOf(ref)}"`);
    return pod;
  };

  const destroy = async (): Promise<void> => {
    destroyed = true;
    await Promise.all([...pods.values(), ...nodes.values(), ...externals.values()].map((s) => stopAgent(s.agent).catch(() => undefined)));
    if (owned.netns.length > 0) {
      await run('ip', ['-force', '-batch', '-'], {
        input: [...owned.netns]
          .reverse()
          .map((n) => `netns del ${n}\n`)
          .join(''),
      }).catch(() => undefined);
    }
    removeSync(owned); // whatever the polite path missed (agents that would not stop, namespaces `ip` failed on)
    unguard();
    log?.debug('sandbox destroyed', { id });
  };

  const addPod = async (podSpec: PodSpec): Promise<SandboxPod> => {
    if (destroyed) throw new Error(`sandbox ${id} was destroyed`);
    checkNamespace(podSpec.namespace);
    checkName('pod', podSpec.name);
    const node = nodeOf(podSpec.node);
    const key = podKey(podSpec.namespace, podSpec.name);
    if (pods.has(key)) throw new Error(`pod ${key} already exists in sandbox ${id}`);
    const families = podSpec.families ?? (v6Only ? [6] : node.ipv6 ? [4, 6] : [4]);
    if (v6Only && families.includes(4)) throw new Error(`pod ${key}: sandbox ${id} is IPv6-only`);
    if (families.length === 0 || new Set(families).size !== families.length)
      throw new Error(`pod ${key}: families must list 4 and/or 6 once each`);
    if (families.includes(6) && !node.ipv6) throw new Error(`pod ${key}: sandbox ${id} is IPv4-only (create it with ipv6)`);
    const slot = reserveIp(node, podSpec.ip);
    const addresses: PodAddress[] = families.map((f) =>
      f === 4
        ? { ip: formatIpv4(slot), prefix: node.cidr.prefix, gatewayIp: node.gatewayIp }
        : { ip: podIpv6(node.ipv6!, slot - node.cidr.base), prefix: 64, gatewayIp: node.ipv6!.gatewayIp },
    );
    const ips = addresses.map((a) => a.ip);
    const pod: PodState = {
      namespace: podSpec.namespace,
      name: podSpec.name,
      key,
      node: node.name,
      ip: ips[0]!,
      ips,
      ...(families.includes(4) ? { ipv4: formatIpv4(slot) } : {}),
      ...(families.includes(6) ? { ipv6: addresses[families.indexOf(6)]!.ip } : {}),
      slot,
      netns: names.podNetns(podSpec.namespace, podSpec.name),
      hostVeth: randomVethName(),
      ports: podSpec.ports ?? ports,
    };
    pods.set(key, pod); // reserved synchronously, so concurrent addPod calls cannot take the same name or IP
    try {
      await addNetns(pod.netns);
      // Before eth0 exists, so it inherits "no DAD" (commands.ts NODE_SYSCTLS_V6).
      if (families.includes(6)) await run('sysctl', ['-q', '-w', ...POD_SYSCTLS_V6], { netns: pod.netns });
      await ipBatch(node.netns, podHostBatch(pod.hostVeth, pod.netns));
      await ipBatch(pod.netns, podBatch(addresses));
      if (opts.cniCacheDir) writeCniResult(opts.cniCacheDir, cachedPod(pod, node));
      pod.agent = await launch(pod.netns, key, pod.ports, 'eth0');
    } catch (err) {
      await removePodState(pod).catch(() => undefined);
      throw err;
    }
    log?.debug('pod added', { pod: key, node: node.name, ip: pod.ip, veth: pod.hostVeth });
    return publicPod(pod);
  };

  const removePodState = async (pod: PodState): Promise<void> => {
    if (opts.cniCacheDir) removeCniResult(opts.cniCacheDir, cachedPod(pod, nodeOf(pod.node)));
    await stopAgent(pod.agent);
    // Deleting the host veth first removes both ends now; a namespace's links otherwise go away
    // asynchronously, and a lingering port on cni0 would confuse an IP-reuse test.
    await run('ip', ['-n', nodeOf(pod.node).netns, 'link', 'del', pod.hostVeth]).catch(() => undefined);
    await dropNetns(pod.netns);
    nodeOf(pod.node).taken.delete(pod.slot);
    pods.delete(pod.key);
  };

  const addExternal = async (name: string): Promise<SandboxExternal> => {
    if (destroyed) throw new Error(`sandbox ${id} was destroyed`);
    if (v6Only) throw new Error(`sandbox ${id} is IPv6-only: external clients are IPv4-only`);
    checkName('node', name);
    const key = `ext:${name}`;
    if (externals.has(key)) throw new Error(`external ${name} already exists in sandbox ${id}`);
    // From the top of the underlay down, away from the node addresses (.1, .2, …).
    const ip = formatIpv4(underlay.base + cidrSize(underlay) - 2 - externals.size);
    const v6 = v6Plan && externalIpv6(v6Plan, externals.size);
    const ext: ExternalState = { name, key, netns: `${names.prefix}ext-${name}`, ip, ...(v6 ? { ipv6: v6.ip } : {}) };
    externals.set(key, ext);
    const port = `${names.prefix}x${externals.size - 1}`;
    if (port.length > 15) throw new Error(`underlay port name ${port} is longer than 15 characters: use a shorter sandbox id`);
    await addNetns(ext.netns);
    await ipBatch(ext.netns, [
      'link set lo up',
      `link add eth0 type veth peer name ${port} netns ${names.underlayNetns}`,
      `addr add ${ip}/${underlay.prefix} dev eth0`,
      ...(v6 ? [`addr add ${v6.ip}/${v6.prefix} dev eth0 nodad`] : []),
      'link set eth0 up',
    ]);
    await ipBatch(names.underlayNetns, [`link set ${port} master br0`, `link set ${port} up`]);
    ext.agent = await launch(ext.netns, key, ports);
    log?.debug('external client added', { name, ip });
    const { agent: _agent, ...pub } = ext;
    return pub;
  };

  const sandbox: Sandbox = {
    id,
    prefix: names.prefix,
    clusterCidr: clusterCidrText,
    ...(v6Plan ? { clusterCidr6: v6Plan.clusterCidr } : {}),
    // In the spec's order, not the order the nodes finished building in (they are built in parallel).
    nodes: () => nodePlans.flatMap((p) => (nodes.has(p.name) ? [publicNode(nodes.get(p.name)!)] : [])),
    pods: () => [...pods.values()].filter((p) => p.agent).map(publicPod),
    addPod,
    addExternal,
    removePod: async (ref) => removePodState(podOf(ref)),
    nodeNetns: (name) => nodeOf(name).netns,
    podNetns: (ref) => podOf(ref).netns,
    addressOf(endpoint, family) {
      const node = [...nodes.values()].find((n) => n.key === endpoint);
      const ext = externals.get(endpoint);
      if (family === undefined) return node ? node.underlayIp : (ext?.ip ?? podOf(endpoint).ip);
      const found = node
        ? family === 4
          ? v6Only
            ? undefined
            : node.underlayIp
          : node.ipv6?.underlayIp
        : ext
          ? family === 4
            ? ext.ip
            : ext.ipv6
          : family === 4
            ? podOf(endpoint).ipv4
            : podOf(endpoint).ipv6;
      if (found === undefined) throw new Error(`${endpoint} has no IPv${family} address in sandbox ${id}`);
      return found;
    },
    async probe(from, req) {
      const source = [...nodes.values()].find((n) => n.key === from) ?? externals.get(from) ?? podOf(from);
      if (!source.agent) return { ok: false, error: `${from} has no running agent` };
      return source.agent.probe(req);
    },
    namespaces: () => [...owned.netns],
    destroy,
  };

  try {
    await addNetns(names.underlayNetns);
    await ipBatch(names.underlayNetns, underlayBridgeBatch());
    // allSettled, not all: destroy() must not start while another node is still being built.
    const built = await Promise.allSettled(
      nodePlans.map(async ({ name, plan, cidr }) => {
        const netns = names.nodeNetns(name);
        const fullPlan: NodePlan = {
          ...plan,
          netns,
          underlayPort: underlayPortName(
            names,
            nodePlans.findIndex((p) => p.name === name),
          ),
        };
        await addNetns(netns);
        const peers = nodePlans.filter((p) => p.name !== name).map((p) => ({ podCidr: p.plan.podCidr, via: p.plan.underlayIp }));
        const index = nodePlans.findIndex((p) => p.name === name);
        const v6 = nodeV6[index];
        const v6Batch = v6 && {
          ...v6,
          peers: nodeV6.flatMap((o, i) => (o && i !== index ? [{ podCidr: o.podCidr, via: o.underlayIp }] : [])),
        };
        // Before any link exists, so every link inherits "no DAD"; then IPv6 forwarding like any router.
        if (v6) await run('sysctl', ['-q', '-w', ...NODE_SYSCTLS_V6], { netns });
        await ipBatch(netns, nodeBatch(fullPlan, names.underlayNetns, peers, v6Batch, !v6Only));
        await ipBatch(names.underlayNetns, underlayPortBatch(fullPlan));
        await run('sysctl', ['-q', '-w', ...NODE_SYSCTLS], { netns });
        if (!v6Only)
          await run(RESTORE[opts.iptables ?? 'iptables'], ['--noflush', '--wait'], {
            netns,
            input: flannelRestore(clusterCidrText, plan.podCidr),
          });
        const lease = v6 && v6Plan ? { clusterCidr: v6Plan.clusterCidr, gatewayIp: v6.gatewayIp } : undefined;
        const node: NodeState = {
          name,
          key: nodeKey(name),
          netns,
          // An IPv6-only node's own addresses are its IPv6 ones.
          podCidr: v6Only && v6 ? v6.podCidr : plan.podCidr,
          gatewayIp: v6Only && v6 ? v6.gatewayIp : plan.gatewayIp,
          underlayIp: v6Only && v6 ? v6.underlayIp : plan.underlayIp,
          subnetEnv:
            v6Only && lease ? flannelSubnetEnvV6Only(lease) : flannelSubnetEnv(clusterCidrText, plan.gatewayIp, plan.podPrefix, lease),
          ...(v6 ? { ipv6: v6 } : {}),
          cidr,
          taken: new Set(),
        };
        nodes.set(name, node);
        node.agent = await launch(netns, node.key, ports);
      }),
    );
    const failed = built.find((b): b is PromiseRejectedResult => b.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    await destroy();
    throw err;
  }
  log?.debug('sandbox created', { id, nodes: nodePlans.map((n) => n.name) });
  return sandbox;
}

/** The node's port on the underlay bridge; a link name, so at most 15 characters. */
function underlayPortName(names: SandboxNames, index: number): string {
  const name = `${names.prefix}u${index}`;
  if (name.length > 15) throw new Error(`underlay port name ${name} is longer than 15 characters: use a shorter sandbox id`);
  return name;
}

const cachedPod = (pod: PodState, node: NodeState): CachedPod => ({
  node: node.name,
  netns: pod.netns,
  hostVeth: pod.hostVeth,
  ips: pod.ips.map((address) =>
    address.includes(':')
      ? { address, prefix: 64, gateway: node.ipv6?.gatewayIp ?? '' }
      : { address, prefix: node.cidr.prefix, gateway: node.gatewayIp },
  ),
  // The veth name is random per pod: a stand-in for the sandbox container ID.
  containerId: `${pod.netns}-${pod.hostVeth}`,
});

function publicNode(n: NodeState): SandboxNode {
  const { cidr: _cidr, taken: _taken, agent: _agent, ...node } = n;
  return node;
}

function publicPod(p: PodState): SandboxPod {
  const { agent: _agent, slot: _slot, ...pod } = p;
  return pod;
}

function reserveIp(node: NodeState, wanted: string | undefined): number {
  if (wanted === undefined) {
    const ip = nextFreeIp(node.cidr, node.taken);
    if (ip === undefined) throw new Error(`node ${node.name}: pod CIDR ${node.podCidr} is full`);
    node.taken.add(ip);
    return ip;
  }
  const ip = parseIpv4(wanted);
  if (ip === undefined || !isAssignable(node.cidr, ip))
    throw new Error(`node ${node.name}: ${wanted} is not a pod address of ${node.podCidr}`);
  if (node.taken.has(ip)) throw new Error(`node ${node.name}: ${wanted} is in use`);
  node.taken.add(ip);
  return ip;
}

/** Validates the node list and derives each node's addresses, before anything is created. */
function planNodes(spec: SandboxSpec, cluster: Ipv4Cidr, underlay: Ipv4Cidr) {
  if (spec.nodes.length === 0) throw new Error('a sandbox needs at least one node');
  const seen = new Set<string>();
  const cidrs: Ipv4Cidr[] = [];
  return spec.nodes.map((n, i) => {
    checkName('node', n.name);
    if (seen.has(n.name)) throw new Error(`duplicate node name "${n.name}"`);
    seen.add(n.name);
    const cidr = parseIpv4Cidr(n.podCidr);
    if (!cidrContains(cluster, cidr.base) || cidr.prefix < cluster.prefix)
      throw new Error(`node ${n.name}: ${n.podCidr} is outside the cluster CIDR`);
    if (cidrs.some((c) => cidrsOverlap(c, cidr))) throw new Error(`node ${n.name}: ${n.podCidr} overlaps another node's pod CIDR`);
    cidrs.push(cidr);
    const underlayIp = underlay.base + 1 + i;
    if (underlayIp >= underlay.base + cidrSize(underlay) - 1) {
      throw new Error(`underlay ${formatIpv4(underlay.base)}/${underlay.prefix} is too small for ${spec.nodes.length} nodes`);
    }
    const plan: Omit<NodePlan, 'netns' | 'underlayPort'> = {
      underlayIp: formatIpv4(underlayIp),
      underlayPrefix: underlay.prefix,
      podCidr: n.podCidr,
      gatewayIp: formatIpv4(gatewayOf(cidr)),
      podPrefix: cidr.prefix,
    };
    return { name: n.name, cidr, plan };
  });
}

/** Picks a run id whose prefix no existing namespace carries (another run, or a leftover). */
async function chooseNames(wanted: string | undefined): Promise<SandboxNames> {
  const existing = (await run('ip', ['netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0] ?? '');
  const free = (n: SandboxNames): boolean => !existing.some((e) => e.startsWith(n.prefix));
  if (wanted !== undefined) {
    const n = sandboxNames(wanted);
    if (!free(n)) throw new Error(`namespaces with prefix ${n.prefix} already exist`);
    return n;
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const n = sandboxNames(randomRunId());
    if (free(n)) return n;
  }
  throw new Error('no free sandbox id found');
}
