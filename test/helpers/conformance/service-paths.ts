// Service paths beyond the ClusterIP matrix, run on a ConformanceCluster that has kube-proxy
// (ConformanceOptions.kubeProxy): proof that probes really are DNATed, hairpin, the NodePort source
// table (which source an ipBlock sees, per externalTrafficPolicy and endpoint placement), and, in
// iptables mode, the KUBE-FORWARD reorder that opens a bypass until netfence's jump is back on top.
// Expectations come from docs/services.md and the Kubernetes docs, not from netfence. On an IPv6
// cluster every path runs over IPv6 (IPv6 ClusterIPs, NodePorts on the nodes' IPv6 addresses, the
// client's IPv6 address in the ipBlocks, ip6tables' KUBE-FORWARD), and before every probe the
// neighbour caches of the pods, the nodes and the client are flushed.

import { run } from '../../../src/dataplane/exec.js';
import type { ConformanceCluster } from './cluster.js';
import { netpol } from './manifests.js';
import { modelPod, podIp, type Family } from './model.js';
import { ALL, cidr, sel } from './policies.js';
import { NODE_PORT_TARGET, NODE_PORTS, clusterIpOf } from './services.js';

const PROBE_MS = 500;

/** IPv6: every pod, node and external client forgets its neighbours, so the next probe needs ND on every hop. */
async function coldNeighbours(cluster: ConformanceCluster): Promise<void> {
  if (cluster.family !== 6) return;
  const sb = cluster.sandbox;
  const client = cluster.services?.client.netns;
  const netns = [...sb.nodes().map((n) => n.netns), ...(client ? [client] : [])];
  await Promise.all([cluster.coldNeighbours(), ...netns.map((ns) => run('ip', ['-6', 'neigh', 'flush', 'all'], { netns: ns }))]);
}

/** Probes until the outcome is `want` or ~3 s pass (the kernel converges right after apply, but ARP may lag); returns the last outcome. */
async function probeUntil(cluster: ConformanceCluster, from: string, ip: string, port: number, want: boolean): Promise<boolean> {
  const deadline = Date.now() + 3000;
  for (;;) {
    await coldNeighbours(cluster);
    const { ok } = await cluster.sandbox.probe(from, { protocol: 'TCP', ip, port, timeoutMs: PROBE_MS });
    if (ok === want || Date.now() >= deadline) return ok;
  }
}

const nodeIp = (cluster: ConformanceCluster, node: string): string => cluster.sandbox.addressOf(`node:${node}`, cluster.family);
const clientIp = (cluster: ConformanceCluster): string => {
  const client = cluster.services!.client;
  const ip = cluster.family === 6 ? client.ipv6 : client.ip;
  if (!ip) throw new Error(`the external client has no IPv${cluster.family} address`);
  return ip;
};
const hostMask = (family: Family): string => (family === 6 ? '/128' : '/32');
const iptablesOf = (family: Family): string => (family === 6 ? 'ip6tables' : 'iptables');

export function describeServicePaths(get: () => ConformanceCluster): void {
  const target = modelPod(NODE_PORT_TARGET); // x/a, on n1
  const other = target.node === 'n1' ? 'n2' : 'n1';

  describe('service paths', () => {
    it('probes to a ClusterIP are DNATed by kube-proxy to the endpoint pod', async () => {
      const c = get();
      const from = 'x/b';
      expect(await probeUntil(c, from, clusterIpOf(target, c.family), 80, true)).toBe(true);
      const node = c.sandbox.nodeNetns(modelPod(from).node);
      const family = c.family === 6 ? 'ipv6' : 'ipv4';
      const { stdout } = await run('conntrack', ['-L', '-f', family, '-p', 'tcp', '--orig-dst', clusterIpOf(target, c.family)], {
        netns: node,
      });
      // The reply comes from the endpoint pod's address of the same family: the probe was DNATed there.
      expect(stdout).toContain(`src=${podIp(target.key, c.family)} `);
      expect(stdout).toContain(`src=${podIp(from, c.family)} `);
    });

    it('hairpin: a pod reaches itself through its own Service even when its namespace denies everything', async () => {
      const c = get();
      c.setPolicies([netpol('x', 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] })]);
      await c.apply();
      expect(await probeUntil(c, target.key, clusterIpOf(target, c.family), 80, true)).toBe(true);
      expect(await probeUntil(c, 'x/b', clusterIpOf(target, c.family), 80, false)).toBe(false);
    });

    describe('NodePort from outside the cluster: the source an ipBlock sees', () => {
      const client = (c: ConformanceCluster): string => c.services!.client.key;
      const reach = async (c: ConformanceCluster, node: string, port: number, want: boolean) =>
        probeUntil(c, client(c), nodeIp(c, node), port, want);
      const onlyFrom = (block: string) => netpol('x', 'only-from', { podSelector: sel({ pod: 'a' }), ingress: [{ from: [cidr(block)] }] });

      it('without policy: both NodePorts answer on the endpoint node; eTP Local answers nowhere else', async () => {
        const c = get();
        expect(await reach(c, target.node, NODE_PORTS.cluster, true)).toBe(true);
        expect(await reach(c, other, NODE_PORTS.cluster, true)).toBe(true);
        expect(await reach(c, target.node, NODE_PORTS.local, true)).toBe(true);
        // kube-proxy drops eTP Local traffic on a node without a local endpoint: not netfence's doing.
        expect(await reach(c, other, NODE_PORTS.local, false)).toBe(false);
      });

      it('ipBlock of the client: admitted on the endpoint node (Cluster and Local), not via another node (masqueraded)', async () => {
        const c = get();
        c.setPolicies([onlyFrom(`${clientIp(c)}${hostMask(c.family)}`)]);
        await c.apply();
        expect(await reach(c, target.node, NODE_PORTS.cluster, true)).toBe(true);
        expect(await reach(c, target.node, NODE_PORTS.local, true)).toBe(true);
        expect(await reach(c, other, NODE_PORTS.cluster, false)).toBe(false);
      });

      it('ipBlock of the forwarding node: admits eTP Cluster via that node, and nothing the client sends directly', async () => {
        const c = get();
        c.setPolicies([onlyFrom(`${nodeIp(c, other)}${hostMask(c.family)}`)]);
        await c.apply();
        expect(await reach(c, other, NODE_PORTS.cluster, true)).toBe(true);
        expect(await reach(c, target.node, NODE_PORTS.cluster, false)).toBe(false);
        expect(await reach(c, target.node, NODE_PORTS.local, false)).toBe(false);
      });
    });

    it('KUBE-FORWARD above netfence lets a masquerade-marked NodePort client past a deny; netfence back on top closes it', async () => {
      const c = get();
      if (c.services!.proxy.mode !== 'iptables') return; // nftables mode has no accepting rule in FORWARD
      c.setPolicies([netpol('x', 'deny-ingress', { podSelector: ALL, ingress: [] })]);
      await c.apply();
      const client = c.services!.client.key;
      const cluster = nodeIp(c, target.node);
      expect(await probeUntil(c, client, cluster, NODE_PORTS.cluster, false)).toBe(false);
      // A kube-proxy restart: its jumps are deleted and ensured again, so KUBE-FORWARD is first in FORWARD.
      await c.services!.proxy.restart(target.node);
      const forward = (await run(iptablesOf(c.family), ['-S', 'FORWARD', '1'], { netns: c.sandbox.nodeNetns(target.node) })).stdout;
      expect(forward).toContain('-j KUBE-FORWARD');
      // eTP Cluster marks 0x4000 in nat PREROUTING; KUBE-FORWARD ACCEPTs it before netfence sees it.
      expect(await probeUntil(c, client, cluster, NODE_PORTS.cluster, true)).toBe(true);
      // eTP Local is not marked: KUBE-FORWARD does not accept it, netfence still drops it.
      expect(await probeUntil(c, client, cluster, NODE_PORTS.local, false)).toBe(false);
      await c.apply(); // netfence's repair: its jump back at position 1
      expect(await probeUntil(c, client, cluster, NODE_PORTS.cluster, false)).toBe(false);
    });
  });
}
