// One flannel-like node for traffic tests, built on the sandbox (sandbox/: cni0 bridge with
// bridge-nf-call-iptables=1, ip_forward=1, pods on veths with hairpin on, a probe agent per pod,
// flanneld's FLANNEL-FWD rules): pods x/a, x/b, x/c and the cluster that describes them, where b
// accepts TCP 80 only from pods labelled role=client.

import type { ClusterSnapshot, Labels } from '../../src/model/index.js';
import { createSandbox, type Sandbox } from '../../sandbox/topology.js';
import { ingress, labels, makeNamespace, makePod, makePolicy, podPeer, rule, sel, selectPods, snapshot, tcp, NODE } from './builders.js';

export type PodName = 'a' | 'b' | 'c';
export type PodLabels = Readonly<Record<PodName, Labels>>;

export const POD_CIDR = '10.244.1.0/24';
export const SERVER: Labels = { app: 'server' };
export const CLIENT: Labels = { role: 'client' };
export const OTHER: Labels = { role: 'other' };

export interface PolicyNode {
  readonly sandbox: Sandbox;
  /** The node's network namespace: where netfence programs. */
  readonly netns: string;
  ip(pod: PodName): string;
  /** Whether a new TCP connection from `from` to b:80 succeeds. */
  reachesServer(from: PodName, timeoutMs?: number): Promise<boolean>;
  /** The cluster as netfence sees it, with these labels on the pods. */
  cluster(podLabels: PodLabels): ClusterSnapshot;
  destroy(): Promise<void>;
}

export async function createPolicyNode(): Promise<PolicyNode> {
  const sandbox = await createSandbox({ nodes: [{ name: NODE, podCidr: POD_CIDR }] });
  try {
    for (const name of ['a', 'b', 'c']) await sandbox.addPod({ namespace: 'x', name, node: NODE });
  } catch (err) {
    await sandbox.destroy();
    throw err;
  }
  const ip = (pod: PodName): string => sandbox.addressOf(`x/${pod}`);
  return {
    sandbox,
    netns: sandbox.nodeNetns(NODE),
    ip,
    async reachesServer(from, timeoutMs = 300) {
      return (await sandbox.probe(`x/${from}`, { protocol: 'TCP', ip: ip('b'), port: 80, timeoutMs })).ok;
    },
    cluster: (podLabels) =>
      snapshot({
        nodes: [{ name: NODE, podCidrs: [POD_CIDR], addresses: [] }],
        namespaces: [makeNamespace('x')],
        pods: sandbox.pods().map((p) => makePod(p.namespace, p.name, p.ip, labels({ ...podLabels[p.name as PodName] }))),
        policies: [
          makePolicy('x', 'allow-client', selectPods(sel({ ...SERVER })), ingress(rule([podPeer(sel({ ...CLIENT }))], [tcp(80)]))),
        ],
      }),
    destroy: () => sandbox.destroy(),
  };
}
