// The model's Services behind the sandbox's kube-proxy: one ClusterIP Service per model pod (TCP and UDP
// on 80 and 81, the ports the cases probe), and two NodePort Services in front of x/a, one per
// externalTrafficPolicy. A conformance run "via Services" probes each pod's ClusterIP instead of its IP:
// the same cases, the same expected matrices. On an IPv6 run every Service is dual-stack
// (ipFamilies [IPv6, IPv4], as PreferDualStack on an IPv6-primary cluster allocates it): an IPv6
// ClusterIP out of fd00:10:96::/112 first, the IPv4 one second, and endpoints of both families.

import { startKubeProxy, type KubeProxy, type KubeProxyMode, type ServiceSpec } from '../../../sandbox/kube-proxy/index.js';
import type { ProbeTarget, Sandbox, SandboxExternal } from '../../../sandbox/index.js';
import { MODEL_PODS, NAMESPACES, POD_NAMES, PORTS, modelPod, type Family, type ModelPod } from './model.js';

/** The IPv6 service range (kubeadm's dual-stack example uses a /112 like this). */
export const SERVICE_CIDR6 = 'fd00:10:96::/112';

/**
 * One /24 per namespace inside kubeadm's default 10.96.0.0/16: 10.96.<ns>.<pod>, readable in reports;
 * the IPv6 twin is fd00:10:96::<ns><pod> (x/a → ::11).
 */
export const clusterIpOf = (pod: ModelPod, family: Family = 4): string => {
  const ns = NAMESPACES.indexOf(pod.namespace as (typeof NAMESPACES)[number]) + 1;
  const name = POD_NAMES.indexOf(pod.name as (typeof POD_NAMES)[number]) + 1;
  return family === 6 ? `fd00:10:96::${ns}${name}` : `10.96.${ns}.${name}`;
};

/** The NodePort Services' ClusterIPs. */
const NODE_PORT_IPS = { cluster: { 4: '10.96.100.1', 6: 'fd00:10:96::1001' }, local: { 4: '10.96.100.2', 6: 'fd00:10:96::1002' } } as const;

/** NodePorts in front of x/a's TCP 80. */
export const NODE_PORTS = { cluster: 30080, local: 30081 } as const;
export const NODE_PORT_TARGET = 'x/a';

/** A Service's ClusterIP fields: single-stack IPv4, or dual-stack with IPv6 first. */
const clusterIps = (v4: string, v6: string, family: Family) => (family === 6 ? { clusterIp: v6, clusterIps: [v6, v4] } : { clusterIp: v4 });
const endpointsOf = (pod: ModelPod, family: Family) => [
  { ip: pod.ip, node: pod.node },
  ...(family === 6 ? [{ ip: pod.ip6, node: pod.node }] : []),
];

export function modelServices(family: Family = 4): ServiceSpec[] {
  const ports = PORTS.flatMap((port) =>
    (['TCP', 'UDP'] as const).map((protocol) => ({ name: `p${port}-${protocol.toLowerCase()}`, protocol, port, targetPort: port })),
  );
  const perPod: ServiceSpec[] = MODEL_PODS.map((pod) => ({
    namespace: pod.namespace,
    name: `svc-${pod.name}`,
    ...clusterIps(clusterIpOf(pod, 4), clusterIpOf(pod, 6), family),
    ports,
    endpoints: endpointsOf(pod, family),
  }));
  const target = modelPod(NODE_PORT_TARGET);
  const nodePort = (name: string, ips: { 4: string; 6: string }, nodePortNumber: number, policy: 'Cluster' | 'Local'): ServiceSpec => ({
    namespace: target.namespace,
    name,
    ...clusterIps(ips[4], ips[6], family),
    externalTrafficPolicy: policy,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80, nodePort: nodePortNumber }],
    endpoints: endpointsOf(target, family),
  });
  return [
    ...perPod,
    nodePort('np-cluster', NODE_PORT_IPS.cluster, NODE_PORTS.cluster, 'Cluster'),
    nodePort('np-local', NODE_PORT_IPS.local, NODE_PORTS.local, 'Local'),
  ];
}

export interface ModelServices {
  readonly proxy: KubeProxy;
  /** A NodePort client outside the cluster, on the node underlay. */
  readonly client: SandboxExternal;
  /** The sandbox, with every pod's address replaced by its Service's ClusterIP (a replaced pod keeps its IP, so its Service). */
  viaClusterIp(sandbox: Sandbox): ProbeTarget;
}

export async function startModelServices(sandbox: Sandbox, mode: KubeProxyMode, family: Family = 4): Promise<ModelServices> {
  const cidr6 = sandbox.clusterCidr6;
  if (family === 6 && !cidr6) throw new Error('IPv6 Services need a dual-stack sandbox');
  const dual = family === 6 && cidr6 ? { clusterCidr6: cidr6, serviceCidr6: SERVICE_CIDR6 } : {};
  const proxy = await startKubeProxy(sandbox.nodes(), modelServices(family), { mode, clusterCidr: sandbox.clusterCidr, ...dual });
  const client = await sandbox.addExternal('client');
  const byPodIp = new Map(MODEL_PODS.flatMap((p) => [[p.ip, clusterIpOf(p, 4)] as const, [p.ip6, clusterIpOf(p, 6)] as const]));
  return {
    proxy,
    client,
    viaClusterIp: (sb) => ({
      pods: () => sb.pods(),
      probe: (from, req) => sb.probe(from, req),
      addressOf(endpoint, fam) {
        const ip = sb.addressOf(endpoint, fam);
        return byPodIp.get(ip) ?? ip;
      },
    }),
  };
}
