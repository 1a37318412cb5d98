import { iptablesCleanup, iptablesRules, KUBE_PROXY_JUMPS } from '../../../sandbox/kube-proxy/iptables-mode.js';
import type { ProxyNode, ServiceSpec } from '../../../sandbox/kube-proxy/model.js';
import { BASE_CHAINS, nftablesScript } from '../../../sandbox/kube-proxy/nftables-mode.js';

const node: ProxyNode = { name: 'n1', clusterCidr: '10.244.0.0/16', serviceCidr: '10.96.0.0/16', nodeIps: ['10.99.0.1'] };
const two: ServiceSpec = {
  namespace: 'x',
  name: 'web',
  clusterIp: '10.96.0.10',
  ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30080 }],
  endpoints: [
    { ip: '10.244.1.5', node: 'n1' },
    { ip: '10.244.2.5', node: 'n2' },
  ],
};
const localOnly = (name: string, endpointNode: string): ServiceSpec => ({
  ...two,
  name,
  externalTrafficPolicy: 'Local',
  ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080, nodePort: 30081 }],
  endpoints: [{ ip: '10.244.2.5', node: endpointNode }],
});

const natLines = (restore: string): string[] => restore.slice(restore.indexOf('*nat')).split('\n');

describe('sandbox kube-proxy, iptables mode', () => {
  it('prepends KUBE-FORWARD last, so it ends up first in FORWARD', () => {
    const forward = KUBE_PROXY_JUMPS.filter((j) => j.table === 'filter' && j.chain === 'FORWARD');
    expect(forward.at(-1)?.args.at(-1)).toBe('KUBE-FORWARD');
  });

  it('writes KUBE-FORWARD: INVALID drop, 0x4000 accept, established accept', () => {
    const { restore } = iptablesRules(node, [two]);
    const kubeForward = restore.split('\n').filter((l) => l.startsWith('-A KUBE-FORWARD'));
    expect(kubeForward).toEqual([
      '-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP',
      '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT',
      '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
    ]);
  });

  it('spreads a ClusterIP over its endpoints, hairpin-marks and DNATs each, and masquerades off-cluster sources', () => {
    const nat = natLines(iptablesRules(node, [two]).restore);
    const svc = nat.filter((l) => l.startsWith('-A KUBE-SVC-'));
    expect(svc[0]).toMatch(/^-A KUBE-SVC-\w+ ! -s 10\.244\.0\.0\/16 -d 10\.96\.0\.10\/32 .* --dport 80 -j KUBE-MARK-MASQ$/);
    expect(svc[1]).toMatch(/-m statistic --mode random --probability 0\.5000000000 -j KUBE-SEP-/);
    expect(svc[2]).not.toMatch(/statistic/);
    const sep = nat.filter((l) => l.startsWith('-A KUBE-SEP-'));
    expect(sep.filter((l) => /-s 10\.244\.1\.5\/32 .*-j KUBE-MARK-MASQ$/.test(l))).toHaveLength(1);
    expect(sep.filter((l) => l.endsWith('-j DNAT --to-destination 10.244.1.5:8080'))).toHaveLength(1);
    expect(nat).toContain('-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000');
    expect(nat.filter((l) => l.startsWith('-A KUBE-SERVICES')).at(-1)).toMatch(/--dst-type LOCAL -j KUBE-NODEPORTS$/);
  });

  it('eTP Cluster masquerades NodePort traffic; eTP Local goes to local endpoints only, or is dropped in filter', () => {
    const cluster = natLines(iptablesRules(node, [two]).restore).filter((l) => l.startsWith('-A KUBE-EXT-'));
    expect(cluster[0]).toMatch(/-j KUBE-MARK-MASQ$/);
    const local = iptablesRules(node, [localOnly('here', 'n1')]).restore;
    expect(local).toMatch(/-A KUBE-EXT-\w+ -j KUBE-SVL-/);
    expect(local).not.toMatch(/masquerade traffic for/);
    const elsewhere = iptablesRules(node, [localOnly('there', 'n2')]).restore;
    expect(elsewhere).not.toMatch(/KUBE-SVL-/);
    expect(elsewhere).toMatch(/-A KUBE-EXTERNAL-SERVICES .*has no local endpoints.* --dport 30081 -j DROP/);
  });

  it('deletes generated chains of services that are gone, and cleans up only its own chains', () => {
    const { restore } = iptablesRules(node, [], { filter: ['FORWARD', 'FLANNEL-FWD'], nat: ['KUBE-SVC-OLD', 'FLANNEL-POSTRTG'] });
    expect(restore).toContain('-X KUBE-SVC-OLD');
    expect(restore).not.toContain('FLANNEL');
    const cleanup = iptablesCleanup({ filter: ['KUBE-FORWARD', 'FLANNEL-FWD'], nat: ['KUBE-SEP-A'] }, KUBE_PROXY_JUMPS.slice(-1));
    expect(cleanup).toContain('-X KUBE-FORWARD');
    expect(cleanup).toContain('-D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING');
    expect(cleanup).not.toContain('FLANNEL');
  });
});

describe('sandbox kube-proxy, nftables mode', () => {
  it('registers its base chains at kube-proxy priorities: filter dstnat-10, nat dstnat and srcnat', () => {
    const script = nftablesScript(node, [two]);
    for (const c of BASE_CHAINS) expect(script).toContain(`add chain ip kube-proxy ${c.name} { type ${c.type} hook ${c.hook} priority ${c.priority} ; }`);
    expect(BASE_CHAINS.find((c) => c.name === 'filter-forward')?.priority).toBe(-110);
    expect(BASE_CHAINS.find((c) => c.name === 'nat-postrouting')?.priority).toBe(100);
  });

  it('never accepts in a filter chain, and declares every chain before a rule names it', () => {
    const lines = nftablesScript(node, [two, localOnly('here', 'n1')]).trimEnd().split('\n');
    expect(lines.filter((l) => /^add rule ip kube-proxy filter-/.test(l) && /\baccept\b/.test(l))).toEqual([]);
    const declared = new Set<string>();
    for (const l of lines) {
      const chain = /^add chain ip kube-proxy (\S+)/.exec(l)?.[1];
      if (chain) declared.add(chain);
      for (const m of l.matchAll(/\b(?:goto|jump) (\S+)/g)) expect(declared.has(m[1] ?? '')).toBe(true);
    }
  });
});
