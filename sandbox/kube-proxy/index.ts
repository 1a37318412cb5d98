// kube-proxy for the sandbox: writes the rules kube-proxy writes into every sandbox node's network
// namespace, in iptables or nftables mode, so policy can be tested on Service paths with real packets.
// It is rules only (no watch loop): start programs the services, sync reprograms them, restart does
// what a kube-proxy restart does to the kernel chains' jumps, stop removes everything it owns.

import { run } from '../../src/dataplane/exec.js';
import { iptablesCleanup, iptablesRules, KUBE_PROXY_JUMPS, type Jump, type Table } from './iptables-mode.js';
import type { KubeProxyMode, ProxyNode, ServiceSpec } from './model.js';
import { nftablesCleanup, nftablesScript } from './nftables-mode.js';

export type { KubeProxyMode, ServiceSpec } from './model.js';

/** What kube-proxy needs of a sandbox node. */
export interface ProxiedNode {
  readonly name: string;
  readonly netns: string;
  readonly underlayIp: string;
}

export interface KubeProxyOptions {
  readonly mode: KubeProxyMode;
  readonly clusterCidr: string;
  /** Default 10.96.0.0/16, kubeadm's service range. */
  readonly serviceCidr?: string;
  /** iptables mode: which binaries (`iptables` = whatever the alternatives point at). Default `iptables`. */
  readonly iptables?: 'iptables' | 'nft' | 'legacy';
}

export interface KubeProxy {
  readonly mode: KubeProxyMode;
  readonly serviceCidr: string;
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

export async function startKubeProxy(nodes: readonly ProxiedNode[], services: readonly ServiceSpec[], opts: KubeProxyOptions): Promise<KubeProxy> {
  const serviceCidr = opts.serviceCidr ?? '10.96.0.0/16';
  const bin = opts.iptables === 'nft' ? 'iptables-nft' : opts.iptables === 'legacy' ? 'iptables-legacy' : 'iptables';
  const proxyNode = (n: ProxiedNode): ProxyNode => ({ name: n.name, clusterCidr: opts.clusterCidr, serviceCidr, nodeIps: [n.underlayIp] });
  const nodeOf = (name: string): ProxiedNode => {
    const node = nodes.find((n) => n.name === name);
    if (!node) throw new Error(`kube-proxy: no node "${name}"`);
    return node;
  };

  const chainsOf = async (netns: string): Promise<Record<Table, string[]>> => {
    const list = async (table: Table) => (await run(`${bin}-save`, ['-t', table], { netns })).stdout.split('\n').flatMap((l) => (l.startsWith(':') ? [l.slice(1).split(' ')[0] ?? ''] : []));
    return { filter: await list('filter'), nat: await list('nat') };
  };
  const present = async (netns: string, j: Jump): Promise<boolean> =>
    run(bin, ['-w', '-t', j.table, '-C', j.chain, ...j.args], { netns }).then(
      () => true,
      () => false,
    );
  // EnsureRule(Prepend): add only when missing, and then at the top.
  const ensureJumps = async (netns: string): Promise<void> => {
    for (const j of KUBE_PROXY_JUMPS) if (!(await present(netns, j))) await run(bin, ['-w', '-t', j.table, '-I', j.chain, '1', ...j.args], { netns });
  };

  const syncNode = async (n: ProxiedNode, svcs: readonly ServiceSpec[]): Promise<void> => {
    if (opts.mode === 'nftables') {
      await run('nft', ['-f', '-'], { netns: n.netns, input: nftablesScript(proxyNode(n), svcs) });
      return;
    }
    const payload = iptablesRules(proxyNode(n), svcs, await chainsOf(n.netns));
    await run(`${bin}-restore`, ['--noflush', '--wait'], { netns: n.netns, input: payload.restore });
    await ensureJumps(n.netns);
  };
  const sync = async (svcs: readonly ServiceSpec[]): Promise<void> => {
    await Promise.all(nodes.map((n) => syncNode(n, svcs)));
  };

  await sync(services);
  return {
    mode: opts.mode,
    serviceCidr,
    sync,
    async restart(name) {
      if (opts.mode !== 'iptables') throw new Error('restart() re-prepends iptables jumps: iptables mode only');
      const { netns } = nodeOf(name);
      for (const j of KUBE_PROXY_JUMPS) if (await present(netns, j)) await run(bin, ['-w', '-t', j.table, '-D', j.chain, ...j.args], { netns });
      await ensureJumps(netns);
    },
    async stop() {
      await Promise.all(
        nodes.map(async (n) => {
          if (opts.mode === 'nftables') {
            await run('nft', ['-f', '-'], { netns: n.netns, input: nftablesCleanup() });
            return;
          }
          const jumps: Jump[] = [];
          for (const j of KUBE_PROXY_JUMPS) if (await present(n.netns, j)) jumps.push(j);
          await run(`${bin}-restore`, ['--noflush', '--wait'], { netns: n.netns, input: iptablesCleanup(await chainsOf(n.netns), jumps) });
        }),
      );
    },
  };
}
