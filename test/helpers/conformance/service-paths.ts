// Service paths beyond the ClusterIP matrix, run on a ConformanceCluster that has kube-proxy
// (ConformanceOptions.kubeProxy): proof that probes really are DNATed, hairpin, the NodePort source
// table (which source an ipBlock sees, per externalTrafficPolicy and endpoint placement), and, in
// iptables mode, the KUBE-FORWARD reorder that opens a bypass until netfence's jump is back on top.
// Expectations come from README "Services" and the Kubernetes docs, not from netfence.

import { run } from '../../../src/dataplane/exec.js';
import type { ConformanceCluster } from './cluster.js';
import { netpol } from './manifests.js';
import { modelPod } from './model.js';
import { ALL, cidr, sel } from './policies.js';
import { NODE_PORT_TARGET, NODE_PORTS, clusterIpOf } from './services.js';

const PROBE_MS = 500;

/** Probes until the outcome is `want` or ~3 s pass (the kernel converges right after apply, but ARP may lag); returns the last outcome. */
async function probeUntil(cluster: ConformanceCluster, from: string, ip: string, port: number, want: boolean): Promise<boolean> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const { ok } = await cluster.sandbox.probe(from, { protocol: 'TCP', ip, port, timeoutMs: PROBE_MS });
    if (ok === want || Date.now() >= deadline) return ok;
  }
}

const nodeIp = (cluster: ConformanceCluster, node: string): string => cluster.sandbox.addressOf(`node:${node}`);

export function describeServicePaths(get: () => ConformanceCluster): void {
  const target = modelPod(NODE_PORT_TARGET); // x/a, on n1
  const other = target.node === 'n1' ? 'n2' : 'n1';

  describe('service paths', () => {
    it('probes to a ClusterIP are DNATed by kube-proxy to the endpoint pod', async () => {
      const c = get();
      const from = 'x/b';
      expect(await probeUntil(c, from, clusterIpOf(target), 80, true)).toBe(true);
      const node = c.sandbox.nodeNetns(modelPod(from).node);
      const { stdout } = await run('conntrack', ['-L', '-p', 'tcp', '--orig-dst', clusterIpOf(target)], { netns: node });
      expect(stdout).toContain(`src=${target.ip}`);
    });

    it('hairpin: a pod reaches itself through its own Service even when its namespace denies everything', async () => {
      const c = get();
      c.setPolicies([netpol('x', 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] })]);
      await c.apply();
      expect(await probeUntil(c, target.key, clusterIpOf(target), 80, true)).toBe(true);
      expect(await probeUntil(c, 'x/b', clusterIpOf(target), 80, false)).toBe(false);
    });

    describe('NodePort from outside the cluster: the source an ipBlock sees', () => {
      const client = (c: ConformanceCluster): string => c.services!.client.key;
      const reach = async (c: ConformanceCluster, node: string, port: number, want: boolean) => probeUntil(c, client(c), nodeIp(c, node), port, want);
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
        c.setPolicies([onlyFrom(`${c.services!.client.ip}/32`)]);
        await c.apply();
        expect(await reach(c, target.node, NODE_PORTS.cluster, true)).toBe(true);
        expect(await reach(c, target.node, NODE_PORTS.local, true)).toBe(true);
        expect(await reach(c, other, NODE_PORTS.cluster, false)).toBe(false);
      });

      it("ipBlock of the forwarding node: admits eTP Cluster via that node, and nothing the client sends directly", async () => {
        const c = get();
        c.setPolicies([onlyFrom(`${nodeIp(c, other)}/32`)]);
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
      const forward = (await run('iptables', ['-S', 'FORWARD', '1'], { netns: c.sandbox.nodeNetns(target.node) })).stdout;
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
