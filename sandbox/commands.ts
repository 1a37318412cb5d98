// What the sandbox asks the kernel for, as data: `ip -batch` lines per namespace and the
// flannel-like iptables state of a node. Pure, so the address plan can be unit-tested without root.

export interface NodePlan {
  readonly netns: string;
  /** Host side of the node's underlay veth, living in the underlay namespace. */
  readonly underlayPort: string;
  readonly underlayIp: string;
  readonly underlayPrefix: number;
  readonly podCidr: string;
  readonly gatewayIp: string;
  readonly podPrefix: number;
}

export interface PeerRoute {
  readonly podCidr: string;
  readonly via: string;
}

/** A dual-stack node's IPv6 side (ipv6.ts): the underlay address, cni0's second gateway, routes to the other /64s. */
export interface NodeIpv6Batch {
  readonly underlayIp: string;
  readonly underlayPrefix: number;
  readonly gatewayIp: string;
  readonly peers: readonly PeerRoute[];
}

/** The underlay: one bridge every node plugs into, standing in for the physical L2 network. */
export function underlayBridgeBatch(): string[] {
  return ['link set lo up', 'link add br0 type bridge', 'link set br0 up'];
}

/** Inside the node: loopback, `eth0` towards the underlay, the `cni0` bridge, and host-gw routes. */
export function nodeBatch(node: NodePlan, underlayNetns: string, peers: readonly PeerRoute[], v6?: NodeIpv6Batch, ipv4 = true): string[] {
  // `nodad`: the addresses we assign are unique by construction; waiting out DAD would only make tests
  // wait. Link-local addresses still do DAD (NODE_SYSCTLS_V6 turns it off for them where it matters).
  const ipv6 = v6
    ? [
        `addr add ${v6.underlayIp}/${v6.underlayPrefix} dev eth0 nodad`,
        `addr add ${v6.gatewayIp}/64 dev cni0 nodad`,
        ...v6.peers.map((p) => `route add ${p.podCidr} via ${p.via} dev eth0`),
      ]
    : [];
  return [
    'link set lo up',
    `link add eth0 type veth peer name ${node.underlayPort} netns ${underlayNetns}`,
    ...(ipv4 ? [`addr add ${node.underlayIp}/${node.underlayPrefix} dev eth0`] : []),
    'link set eth0 up',
    'link add cni0 type bridge',
    ...(ipv4 ? [`addr add ${node.gatewayIp}/${node.podPrefix} dev cni0`] : []),
    'link set cni0 up',
    // host-gw backend: every other node's pod CIDR is one hop away, via that node's underlay address.
    ...(ipv4 ? peers.map((p) => `route add ${p.podCidr} via ${p.via} dev eth0`) : []),
    ...ipv6,
  ];
}

export function underlayPortBatch(node: NodePlan): string[] {
  return [`link set ${node.underlayPort} master br0`, `link set ${node.underlayPort} up`];
}

/** What kubelet + flannel require of a node: bridged pod traffic visible to iptables, and routing. */
export const NODE_SYSCTLS: readonly string[] = [
  'net.bridge.bridge-nf-call-iptables=1',
  'net.bridge.bridge-nf-call-ip6tables=1',
  'net.ipv4.ip_forward=1',
];

/**
 * Set in a dual-stack node's (or pod's) namespace before its links exist, so every link inherits them:
 * no DAD (addresses would stay tentative for a second or more, and a test would race it; the link-local
 * ones too, since `nodad` only covers addresses we add) and IPv6 routing on nodes. Neighbour caches
 * are left alone: tests must see neighbour discovery happen.
 */
export const NODE_SYSCTLS_V6: readonly string[] = [
  'net.ipv6.conf.all.accept_dad=0',
  'net.ipv6.conf.default.accept_dad=0',
  'net.ipv6.conf.all.forwarding=1',
];
export const POD_SYSCTLS_V6: readonly string[] = ['net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0'];

/**
 * The rules flanneld installs on a node (FLANNEL-FWD in filter, FLANNEL-POSTRTG in nat), so tests
 * can prove netfence leaves foreign state byte-for-byte alone. FLANNEL-FWD accepts all cluster
 * traffic, which is why anything that filters pod traffic must sit before it in FORWARD.
 */
export function flannelRestore(clusterCidr: string, podCidr: string): string {
  const fwd = '-m comment --comment "flanneld forward"';
  const masq = '-m comment --comment "flanneld masq"';
  return [
    '*filter',
    ':FLANNEL-FWD - [0:0]',
    `-A FORWARD ${fwd} -j FLANNEL-FWD`,
    `-A FLANNEL-FWD -s ${clusterCidr} ${fwd} -j ACCEPT`,
    `-A FLANNEL-FWD -d ${clusterCidr} ${fwd} -j ACCEPT`,
    'COMMIT',
    '*nat',
    ':FLANNEL-POSTRTG - [0:0]',
    `-A POSTROUTING ${masq} -j FLANNEL-POSTRTG`,
    `-A FLANNEL-POSTRTG -s ${podCidr} -d ${clusterCidr} ${masq} -j RETURN`,
    `-A FLANNEL-POSTRTG -s ${clusterCidr} -d ${podCidr} ${masq} -j RETURN`,
    `-A FLANNEL-POSTRTG -s ${clusterCidr} ! -d 224.0.0.0/4 ${masq} -j MASQUERADE --random-fully`,
    'COMMIT',
    '',
  ].join('\n');
}

/** What flanneld would write to this node's /run/flannel/subnet.env (host-gw over veths: MTU 1500). */
/** flanneld with EnableIPv4 false writes only the IPv6 lease. */
export function flannelSubnetEnvV6Only(v6: { readonly clusterCidr: string; readonly gatewayIp: string }): string {
  return `FLANNEL_IPV6_NETWORK=${v6.clusterCidr}\nFLANNEL_IPV6_SUBNET=${v6.gatewayIp}/64\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n`;
}

export function flannelSubnetEnv(
  clusterCidr: string,
  gatewayIp: string,
  podPrefix: number,
  v6?: { readonly clusterCidr: string; readonly gatewayIp: string },
): string {
  const ipv6 = v6 ? `FLANNEL_IPV6_NETWORK=${v6.clusterCidr}\nFLANNEL_IPV6_SUBNET=${v6.gatewayIp}/64\n` : '';
  return `FLANNEL_NETWORK=${clusterCidr}\nFLANNEL_SUBNET=${gatewayIp}/${podPrefix}\n${ipv6}FLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n`;
}

/** Node side of a new pod: the veth pair (pod end becomes `eth0`), on `cni0`, hairpin on as flannel's bridge plugin sets it. */
export function podHostBatch(hostVeth: string, podNetns: string): string[] {
  return [
    `link add ${hostVeth} type veth peer name eth0 netns ${podNetns}`,
    `link set ${hostVeth} master cni0`,
    `link set dev ${hostVeth} type bridge_slave hairpin on`,
    `link set ${hostVeth} up`,
  ];
}

/** One family's address on the pod's eth0 and its default route via `cni0`'s address of that family. */
export interface PodAddress {
  readonly ip: string;
  readonly prefix: number;
  readonly gatewayIp: string;
}

/** Pod side: its addresses from the node's CIDRs and a default route per family via `cni0`. */
export function podBatch(list: readonly PodAddress[]): string[] {
  const v6 = (a: PodAddress): boolean => a.ip.includes(':');
  return [
    'link set lo up',
    ...list.map((a) => `addr add ${a.ip}/${a.prefix} dev eth0${v6(a) ? ' nodad' : ''}`),
    'link set eth0 up',
    ...list.map((a) => `route add ${v6(a) ? '::/0' : 'default'} via ${a.gatewayIp} dev eth0`),
  ];
}
