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

/** The underlay: one bridge every node plugs into, standing in for the physical L2 network. */
export function underlayBridgeBatch(): string[] {
  return ['link set lo up', 'link add br0 type bridge', 'link set br0 up'];
}

/** Inside the node: loopback, `eth0` towards the underlay, the `cni0` bridge, and host-gw routes. */
export function nodeBatch(node: NodePlan, underlayNetns: string, peers: readonly PeerRoute[]): string[] {
  return [
    'link set lo up',
    `link add eth0 type veth peer name ${node.underlayPort} netns ${underlayNetns}`,
    `addr add ${node.underlayIp}/${node.underlayPrefix} dev eth0`,
    'link set eth0 up',
    'link add cni0 type bridge',
    `addr add ${node.gatewayIp}/${node.podPrefix} dev cni0`,
    'link set cni0 up',
    // host-gw backend: every other node's pod CIDR is one hop away, via that node's underlay address.
    ...peers.map((p) => `route add ${p.podCidr} via ${p.via} dev eth0`),
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
export function flannelSubnetEnv(clusterCidr: string, gatewayIp: string, podPrefix: number): string {
  return `FLANNEL_NETWORK=${clusterCidr}\nFLANNEL_SUBNET=${gatewayIp}/${podPrefix}\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n`;
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

/** Pod side: its address from the node's CIDR and the default route via `cni0`'s address. */
export function podBatch(ip: string, prefix: number, gatewayIp: string): string[] {
  return ['link set lo up', `addr add ${ip}/${prefix} dev eth0`, 'link set eth0 up', `route add default via ${gatewayIp} dev eth0`];
}
