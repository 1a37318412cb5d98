import { iptablesCleanup, iptablesRules, KUBE_PROXY_JUMPS } from '../../../sandbox/kube-proxy/iptables-mode.js';
import { serviceForFamily, type ProxyNode, type ServiceSpec } from '../../../sandbox/kube-proxy/model.js';
import { BASE_CHAINS, nftablesScript } from '../../../sandbox/kube-proxy/nftables-mode.js';

const node: ProxyNode = { name: 'n1', family: 4, clusterCidr: '10.244.0.0/16', serviceCidr: '10.96.0.0/16', nodeIps: ['10.99.0.1'] };
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
    for (const c of BASE_CHAINS)
      expect(script).toContain(`add chain ip kube-proxy ${c.name} { type ${c.type} hook ${c.hook} priority ${c.priority} ; }`);
    expect(BASE_CHAINS.find((c) => c.name === 'filter-forward')?.priority).toBe(-110);
    expect(BASE_CHAINS.find((c) => c.name === 'nat-postrouting')?.priority).toBe(100);
  });

  it('never accepts in a filter chain, and declares every chain before a rule names it', () => {
    const lines = nftablesScript(node, [two, localOnly('here', 'n1')])
      .trimEnd()
      .split('\n');
    expect(lines.filter((l) => /^add rule ip kube-proxy filter-/.test(l) && /\baccept\b/.test(l))).toEqual([]);
    const declared = new Set<string>();
    for (const l of lines) {
      const chain = /^add chain ip kube-proxy (\S+)/.exec(l)?.[1];
      if (chain) declared.add(chain);
      for (const m of l.matchAll(/\b(?:goto|jump) (\S+)/g)) expect(declared.has(m[1] ?? '')).toBe(true);
    }
  });
});

// A dual-stack Service (ipFamilies [IPv6, IPv4]): kube-proxy's meta-proxier hands each single-family
// proxier the Service with that family's ClusterIP (spec.clusterIPs) and that family's EndpointSlice.
const node6: ProxyNode = {
  name: 'n1',
  family: 6,
  clusterCidr: 'fd00:10:244::/56',
  serviceCidr: 'fd00:10:96::/112',
  nodeIps: ['fd00:99::1'],
};
const dual: ServiceSpec = {
  ...two,
  clusterIp: 'fd00:10:96::a',
  clusterIps: ['fd00:10:96::a', '10.96.0.10'],
  endpoints: [
    { ip: 'fd00:10:244:1::5', node: 'n1' },
    { ip: '10.244.1.5', node: 'n1' },
    { ip: 'fd00:10:244:2::5', node: 'n2' },
    { ip: '10.244.2.5', node: 'n2' },
  ],
};
const v4only: ServiceSpec = { ...two, name: 'v4only' };

describe('sandbox kube-proxy, one proxier per family (dual-stack)', () => {
  it("gives each family's proxier only that family's ClusterIP and endpoints, and skips single-stack Services of the other family", () => {
    expect(serviceForFamily(dual, 6)).toMatchObject({
      clusterIp: 'fd00:10:96::a',
      endpoints: [{ ip: 'fd00:10:244:1::5' }, { ip: 'fd00:10:244:2::5' }],
    });
    expect(serviceForFamily(dual, 4)).toMatchObject({ clusterIp: '10.96.0.10', endpoints: [{ ip: '10.244.1.5' }, { ip: '10.244.2.5' }] });
    expect(serviceForFamily(v4only, 6)).toBeUndefined();
    expect(() => serviceForFamily({ ...dual, clusterIps: ['10.96.0.10', 'fd00:10:96::a'] }, 6)).toThrow(/clusterIPs\[0\]/);
  });

  it('writes the IPv6 proxier with /128 host matches, bracketed DNAT targets, the IPv6 cluster CIDR and no ::1 node ports', () => {
    const { restore } = iptablesRules(node6, [dual, v4only]);
    const nat = natLines(restore);
    expect(restore).not.toMatch(/\b10\.(96|244)\./);
    const svc = nat.filter((l) => l.startsWith('-A KUBE-SVC-'));
    expect(svc[0]).toMatch(/^-A KUBE-SVC-\w+ ! -s fd00:10:244::\/56 -d fd00:10:96::a\/128 .* --dport 80 -j KUBE-MARK-MASQ$/);
    const sep = nat.filter((l) => l.startsWith('-A KUBE-SEP-'));
    expect(sep.filter((l) => /-s fd00:10:244:1::5\/128 .*-j KUBE-MARK-MASQ$/.test(l))).toHaveLength(1);
    expect(sep.filter((l) => l.endsWith('-j DNAT --to-destination [fd00:10:244:1::5]:8080'))).toHaveLength(1);
    expect(nat.filter((l) => l.startsWith('-A KUBE-SERVICES')).at(-1)).toMatch(/--dst-type LOCAL ! -d ::1\/128 -j KUBE-NODEPORTS$/);
    // The same KUBE-FORWARD (mark accept included) as the IPv4 proxier: the bypass exists on both families.
    expect(restore.split('\n').filter((l) => l.startsWith('-A KUBE-FORWARD'))).toEqual(
      iptablesRules(node, [two])
        .restore.split('\n')
        .filter((l) => l.startsWith('-A KUBE-FORWARD')),
    );
    // The IPv4 proxier sees the dual-stack Service through its IPv4 ClusterIP only.
    const v4 = iptablesRules(node, [dual]).restore;
    expect(v4).toContain('-d 10.96.0.10/32');
    expect(v4).not.toMatch(/fd00/);
  });

  it('writes table ip6 kube-proxy with IPv6 sets, ip6 matches and no colon in a chain name', () => {
    const script = nftablesScript(node6, [dual, v4only]);
    expect(script).not.toMatch(/\bip kube-proxy|\bip (s|d)addr|ipv4_addr|[\s{]10\.(96|244)\./);
    expect(script).toContain('add set ip6 kube-proxy cluster-ips { type ipv6_addr ;');
    expect(script).toMatch(/ ip6 daddr fd00:10:96::a ip6 saddr != fd00:10:244::\/56 jump mark-for-masquerade/);
    expect(script).toMatch(/dnat to \[fd00:10:244:1::5\]:8080/);
    for (const m of script.matchAll(/^add chain ip6 kube-proxy (\S+)/gm)) expect(m[1]).not.toContain(':');
  });
});
