// kube-proxy for the sandbox: writes the rules kube-proxy writes into every sandbox node's network
// namespace, in iptables or nftables mode, so policy can be tested on Service paths with real packets.
// It is rules only (no watch loop): start programs the services, sync reprograms them, restart does
// what a kube-proxy restart does to the kernel chains' jumps, stop removes everything it owns.
// Dual-stack (clusterCidr6 set) runs a second, IPv6 proxier beside the IPv4 one, as kube-proxy's
// meta-proxier does: ip6tables (or table `ip6 kube-proxy`) with the same layout, fed each Service's
// IPv6 ClusterIP and IPv6 endpoints only.

import { run } from '../../src/dataplane/exec.js';
import { iptablesCleanup, iptablesRules, KUBE_PROXY_JUMPS, type Jump, type Table } from './iptables-mode.js';
import type { IpFamily, KubeProxyMode, ProxyNode, ServiceSpec } from './model.js';
import { nftablesCleanup, nftablesScript } from './nftables-mode.js';

export type { IpFamily, KubeProxyMode, ServiceSpec } from './model.js';

/** What kube-proxy needs of a sandbox node. */
export interface ProxiedNode {
  readonly name: string;
  readonly netns: string;
  readonly underlayIp: string;
  /** The node's IPv6 side in a dual-stack sandbox: its IPv6 underlay address takes IPv6 NodePorts. */
  readonly ipv6?: { readonly underlayIp: string };
}

export interface KubeProxyOptions {
  readonly mode: KubeProxyMode;
  readonly clusterCidr: string;
  /** Default 10.96.0.0/16, kubeadm's service range. */
  readonly serviceCidr?: string;
  /** The IPv6 cluster CIDR: set, kube-proxy runs an IPv6 proxier too (dual-stack). */
  readonly clusterCidr6?: string;
  /** The IPv6 service range. Default fd00:10:96::/112 (kubeadm's dual-stack example). */
  readonly serviceCidr6?: string;
  /** iptables mode: which binaries (`iptables` = whatever the alternatives point at). Default `iptables`. */
  readonly iptables?: 'iptables' | 'nft' | 'legacy';
}

export interface KubeProxy {
  readonly mode: KubeProxyMode;
  readonly serviceCidr: string;
  /** The families it programs: [4], or [4, 6] when dual-stack. */
  readonly families: readonly IpFamily[];
  /** Reprograms every node for this set of services (kube-proxy's syncProxyRules). */
  sync(services: readonly ServiceSpec[]): Promise<void>;
  /**
   * A kube-proxy restart as the kernel sees it, on one node: its jumps are deleted and ensured again,
   * each prepended, so KUBE-FORWARD lands above whatever was first in FORWARD. iptables mode only.
   */
  restart(node: string): Promise<void>;
  /** Removes every rule, chain and table it wrote, on every node. */
  stop(): Promise<void>;
}

export async function startKubeProxy(
  nodes: readonly ProxiedNode[],
  services: readonly ServiceSpec[],
  opts: KubeProxyOptions,
): Promise<KubeProxy> {
  const serviceCidr = opts.serviceCidr ?? '10.96.0.0/16';
  const serviceCidr6 = opts.serviceCidr6 ?? 'fd00:10:96::/112';
  const families: IpFamily[] = opts.clusterCidr6 ? [4, 6] : [4];
  const suffix = opts.iptables === 'nft' ? '-nft' : opts.iptables === 'legacy' ? '-legacy' : '';
  const binOf = (family: IpFamily): string => `${family === 6 ? 'ip6tables' : 'iptables'}${suffix}`;
  const proxyNode = (n: ProxiedNode, family: IpFamily): ProxyNode => {
    if (family === 4) return { name: n.name, family, clusterCidr: opts.clusterCidr, serviceCidr, nodeIps: [n.underlayIp] };
    if (!n.ipv6) throw new Error(`kube-proxy: node ${n.name} has no IPv6 address for the IPv6 proxier`);
    return { name: n.name, family, clusterCidr: opts.clusterCidr6 ?? '', serviceCidr: serviceCidr6, nodeIps: [n.ipv6.underlayIp] };
  };
  const nodeOf = (name: string): ProxiedNode => {
    const node = nodes.find((n) => n.name === name);
    if (!node) throw new Error(`kube-proxy: no node "${name}"`);
    return node;
  };

  const chainsOf = async (netns: string, family: IpFamily): Promise<Record<Table, string[]>> => {
    const list = async (table: Table) =>
      (await run(`${binOf(family)}-save`, ['-t', table], { netns })).stdout
        .split('\n')
        .flatMap((l) => (l.startsWith(':') ? [l.slice(1).split(' ')[0] ?? ''] : []));
    return { filter: await list('filter'), nat: await list('nat') };
  };
  const present = async (netns: string, j: Jump, family: IpFamily): Promise<boolean> =>
    run(binOf(family), ['-w', '-t', j.table, '-C', j.chain, ...j.args], { netns }).then(
      () => true,
      () => false,
    );
  // EnsureRule(Prepend): add only when missing, and then at the top.
  const ensureJumps = async (netns: string, family: IpFamily): Promise<void> => {
    for (const j of KUBE_PROXY_JUMPS)
      if (!(await present(netns, j, family))) await run(binOf(family), ['-w', '-t', j.table, '-I', j.chain, '1', ...j.args], { netns });
  };

  const syncNode = async (n: ProxiedNode, svcs: readonly ServiceSpec[], family: IpFamily): Promise<void> => {
    if (opts.mode === 'nftables') {
      await run('nft', ['-f', '-'], { netns: n.netns, input: nftablesScript(proxyNode(n, family), svcs) });
      return;
    }
    const payload = iptablesRules(proxyNode(n, family), svcs, await chainsOf(n.netns, family));
    await run(`${binOf(family)}-restore`, ['--noflush', '--wait'], { netns: n.netns, input: payload.restore });
    await ensureJumps(n.netns, family);
  };
  const sync = async (svcs: readonly ServiceSpec[]): Promise<void> => {
    await Promise.all(nodes.flatMap((n) => families.map((f) => syncNode(n, svcs, f))));
  };

  await sync(services);
  return {
    mode: opts.mode,
    serviceCidr,
    families,
    sync,
    async restart(name) {
      if (opts.mode !== 'iptables') throw new Error('restart() re-prepends iptables jumps: iptables mode only');
      const { netns } = nodeOf(name);
      // Both proxiers restart with the process.
      for (const family of families) {
        for (const j of KUBE_PROXY_JUMPS)
          if (await present(netns, j, family)) await run(binOf(family), ['-w', '-t', j.table, '-D', j.chain, ...j.args], { netns });
        await ensureJumps(netns, family);
      }
    },
    async stop() {
      await Promise.all(
        nodes.flatMap((n) =>
          families.map(async (family) => {
            if (opts.mode === 'nftables') {
              await run('nft', ['-f', '-'], { netns: n.netns, input: nftablesCleanup(family) });
              return;
            }
            const jumps: Jump[] = [];
            for (const j of KUBE_PROXY_JUMPS) if (await present(n.netns, j, family)) jumps.push(j);
            await run(`${binOf(family)}-restore`, ['--noflush', '--wait'], {
              netns: n.netns,
              input: iptablesCleanup(await chainsOf(n.netns, family), jumps),
            });
          }),
        ),
      );
    },
  };
}
