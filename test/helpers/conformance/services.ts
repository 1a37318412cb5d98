// The model's Services behind the sandbox's kube-proxy: one ClusterIP Service per model pod (TCP and UDP
// on 80 and 81, the ports the cases probe), and two NodePort Services in front of x/a, one per
// externalTrafficPolicy. A conformance run "via Services" probes each pod's ClusterIP instead of its IP:
// the same cases, the same expected matrices.

import { startKubeProxy, type KubeProxy, type KubeProxyMode, type ServiceSpec } from '../../../sandbox/kube-proxy/index.js';
import type { ProbeTarget, Sandbox, SandboxExternal } from '../../../sandbox/index.js';
import { MODEL_PODS, NAMESPACES, POD_NAMES, PORTS, modelPod, type ModelPod } from './model.js';

/** One /24 per namespace inside kubeadm's default 10.96.0.0/16: 10.96.<ns>.<pod>, readable in reports. */
export const clusterIpOf = (pod: ModelPod): string =>
  `10.96.${NAMESPACES.indexOf(pod.namespace as (typeof NAMESPACES)[number]) + 1}.${POD_NAMES.indexOf(pod.name as (typeof POD_NAMES)[number]) + 1}`;

/** NodePorts in front of x/a's TCP 80. */
export const NODE_PORTS = { cluster: 30080, local: 30081 } as const;
export const NODE_PORT_TARGET = 'x/a';

export function modelServices(): ServiceSpec[] {
  const ports = PORTS.flatMap((port) =>
    (['TCP', 'UDP'] as const).map((protocol) => ({ name: `p${port}-${protocol.toLowerCase()}`, protocol, port, targetPort: port })),
  );
  const perPod: ServiceSpec[] = MODEL_PODS.map((pod) => ({
    namespace: pod.namespace,
    name: `svc-${pod.name}`,
    clusterIp: clusterIpOf(pod),
    ports,
    endpoints: [{ ip: pod.ip, node: pod.node }],
  }));
  const target = modelPod(NODE_PORT_TARGET);
  const nodePort = (name: string, clusterIp: string, nodePortNumber: number, policy: 'Cluster' | 'Local'): ServiceSpec => ({
    namespace: target.namespace,
    name,
    clusterIp,
    externalTrafficPolicy: policy,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 80, nodePort: nodePortNumber }],
    endpoints: [{ ip: target.ip, node: target.node }],
  });
  return [...perPod, nodePort('np-cluster', '10.96.100.1', NODE_PORTS.cluster, 'Cluster'), nodePort('np-local', '10.96.100.2', NODE_PORTS.local, 'Local')];
}

export interface ModelServices {
  readonly proxy: KubeProxy;
  /** A NodePort client outside the cluster, on the node underlay. */
  readonly client: SandboxExternal;
  /** The sandbox, with every pod's address replaced by its Service's ClusterIP (a replaced pod keeps its IP, so its Service). */
  viaClusterIp(sandbox: Sandbox): ProbeTarget;
}

export async function startModelServices(sandbox: Sandbox, mode: KubeProxyMode): Promise<ModelServices> {
  const proxy = await startKubeProxy(sandbox.nodes(), modelServices(), { mode, clusterCidr: sandbox.clusterCidr });
  const client = await sandbox.addExternal('client');
  const byPodIp = new Map(MODEL_PODS.map((p) => [p.ip, clusterIpOf(p)]));
  return {
    proxy,
    client,
    viaClusterIp: (sb) => ({
      pods: () => sb.pods(),
      probe: (from, req) => sb.probe(from, req),
      addressOf(endpoint) {
        const ip = sb.addressOf(endpoint);
        return byPodIp.get(ip) ?? ip;
      },
    }),
  };
}
