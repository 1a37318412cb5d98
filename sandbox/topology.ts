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
  flannelRestore,
  flannelSubnetEnv,
  nodeBatch,
  podBatch,
  podHostBatch,
  underlayBridgeBatch,
  underlayPortBatch,
  type NodePlan,
} from './commands.js';
import { cidrSize, cidrsOverlap, cidrContains, formatIpv4, gatewayOf, isAssignable, nextFreeIp, parseIpv4, parseIpv4Cidr, type Ipv4Cidr } from './ipv4.js';
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
}

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
}

export interface PodSpec {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  /** A fixed address in the node's pod CIDR (IP-reuse tests); the next free one when absent. */
  readonly ip?: string;
  /** Ports the pod's agent serves; the sandbox's ports when absent. */
  readonly ports?: readonly number[];
}

export interface SandboxPod {
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`. */
  readonly key: string;
  readonly node: string;
  readonly ip: string;
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
}

export interface Sandbox {
  readonly id: string;
  /** `nfs<id>-`: the prefix of every namespace this sandbox owns. */
  readonly prefix: string;
  readonly clusterCidr: string;
  nodes(): readonly SandboxNode[];
  pods(): readonly SandboxPod[];
  addPod(spec: PodSpec): Promise<SandboxPod>;
  /** Plugs a client namespace into the underlay, outside every node (the next free underlay address from the top). */
  addExternal(name: string): Promise<SandboxExternal>;
  removePod(pod: PodRef): Promise<void>;
  nodeNetns(node: string): string;
  podNetns(pod: PodRef): string;
  /** The address a probe to this endpoint (pod key or `node:<name>`) targets: pod IP or node underlay IP. */
  addressOf(endpoint: string): string;
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
      await run('ip', ['-force', '-batch', '-'], { input: [...owned.netns].reverse().map((n) => `netns del ${n}\n`).join('') }).catch(() => undefined);
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
    const ip = reserveIp(node, podSpec.ip);
    const pod: PodState = {
      namespace: podSpec.namespace,
      name: podSpec.name,
      key,
      node: node.name,
      ip: formatIpv4(ip),
      netns: names.podNetns(podSpec.namespace, podSpec.name),
      hostVeth: randomVethName(),
      ports: podSpec.ports ?? ports,
    };
    pods.set(key, pod); // reserved synchronously, so concurrent addPod calls cannot take the same name or IP
    try {
      await addNetns(pod.netns);
      await ipBatch(node.netns, podHostBatch(pod.hostVeth, pod.netns));
      await ipBatch(pod.netns, podBatch(pod.ip, node.cidr.prefix, node.gatewayIp));
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
    nodeOf(pod.node).taken.delete(parseIpv4(pod.ip) ?? -1);
    pods.delete(pod.key);
  };

  const addExternal = async (name: string): Promise<SandboxExternal> => {
    if (destroyed) throw new Error(`sandbox ${id} was destroyed`);
    checkName('node', name);
    const key = `ext:${name}`;
    if (externals.has(key)) throw new Error(`external ${name} already exists in sandbox ${id}`);
    // From the top of the underlay down, away from the node addresses (.1, .2, …).
    const ip = formatIpv4(underlay.base + cidrSize(underlay) - 2 - externals.size);
    const ext: ExternalState = { name, key, netns: `${names.prefix}ext-${name}`, ip };
    externals.set(key, ext);
    const port = `${names.prefix}x${externals.size - 1}`;
    if (port.length > 15) throw new Error(`underlay port name ${port} is longer than 15 characters: use a shorter sandbox id`);
    await addNetns(ext.netns);
    await ipBatch(ext.netns, ['link set lo up', `link add eth0 type veth peer name ${port} netns ${names.underlayNetns}`, `addr add ${ip}/${underlay.prefix} dev eth0`, 'link set eth0 up']);
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
    nodes: () => [...nodes.values()].map(publicNode),
    pods: () => [...pods.values()].filter((p) => p.agent).map(publicPod),
    addPod,
    addExternal,
    removePod: async (ref) => removePodState(podOf(ref)),
    nodeNetns: (name) => nodeOf(name).netns,
    podNetns: (ref) => podOf(ref).netns,
    addressOf(endpoint) {
      const node = [...nodes.values()].find((n) => n.key === endpoint);
      return node ? node.underlayIp : (externals.get(endpoint)?.ip ?? podOf(endpoint).ip);
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
        const fullPlan: NodePlan = { ...plan, netns, underlayPort: underlayPortName(names, nodePlans.findIndex((p) => p.name === name)) };
        await addNetns(netns);
        const peers = nodePlans.filter((p) => p.name !== name).map((p) => ({ podCidr: p.plan.podCidr, via: p.plan.underlayIp }));
        await ipBatch(netns, nodeBatch(fullPlan, names.underlayNetns, peers));
        await ipBatch(names.underlayNetns, underlayPortBatch(fullPlan));
        await run('sysctl', ['-q', '-w', ...NODE_SYSCTLS], { netns });
        await run(RESTORE[opts.iptables ?? 'iptables'], ['--noflush', '--wait'], { netns, input: flannelRestore(clusterCidrText, plan.podCidr) });
        const node: NodeState = {
          name,
          key: nodeKey(name),
          netns,
          podCidr: plan.podCidr,
          gatewayIp: plan.gatewayIp,
          underlayIp: plan.underlayIp,
          subnetEnv: flannelSubnetEnv(clusterCidrText, plan.gatewayIp, plan.podPrefix),
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
  ips: [{ address: pod.ip, prefix: node.cidr.prefix, gateway: node.gatewayIp }],
  // The veth name is random per pod: a stand-in for the sandbox container ID.
  containerId: `${pod.netns}-${pod.hostVeth}`,
});

function publicNode(n: NodeState): SandboxNode {
  const { cidr: _cidr, taken: _taken, agent: _agent, ...node } = n;
  return node;
}

function publicPod(p: PodState): SandboxPod {
  const { agent: _agent, ...pod } = p;
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
  if (ip === undefined || !isAssignable(node.cidr, ip)) throw new Error(`node ${node.name}: ${wanted} is not a pod address of ${node.podCidr}`);
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
    if (!cidrContains(cluster, cidr.base) || cidr.prefix < cluster.prefix) throw new Error(`node ${n.name}: ${n.podCidr} is outside the cluster CIDR`);
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
