// kube-proxy's nftables mode as one `nft -f` script (pure): the `ip kube-proxy` table, recreated whole in
// one transaction. Modelled on pkg/proxy/nftables/proxier.go and the base rules of its proxier_test.go:
// filter chains at dstnat−10 (−110) that only drop or reject (never accept), DNAT through verdict maps
// at dstnat (−100), and masquerade of the 0x4000 mark at srcnat (100). The README there: "Components
// other than kube-proxy should *never* make any modifications to the `kube-proxy` nftables table".

import {
  MASQ_MARK,
  chainHash,
  joinHostPort,
  localEndpoints,
  servicesForFamily,
  trafficPolicyOf,
  type IpFamily,
  type ProxyNode,
  type ServiceEndpoint,
  type ServicePort,
  type ServiceSpec,
} from './model.js';

/** kube-proxy's table per family: `ip kube-proxy` and, for the IPv6 proxier, `ip6 kube-proxy`. */
export const nftTable = (family: IpFamily): string => (family === 6 ? 'ip6 kube-proxy' : 'ip kube-proxy');

/** Base chains and their hooks; priorities as kube-proxy's nftables proxier registers them. */
export const BASE_CHAINS: readonly {
  readonly name: string;
  readonly type: 'filter' | 'nat';
  readonly hook: string;
  readonly priority: number;
}[] = [
  { name: 'filter-prerouting', type: 'filter', hook: 'prerouting', priority: -110 },
  { name: 'filter-forward', type: 'filter', hook: 'forward', priority: -110 },
  { name: 'filter-input', type: 'filter', hook: 'input', priority: -110 },
  { name: 'filter-output', type: 'filter', hook: 'output', priority: -110 },
  { name: 'nat-prerouting', type: 'nat', hook: 'prerouting', priority: -100 },
  { name: 'nat-output', type: 'nat', hook: 'output', priority: -100 },
  { name: 'nat-postrouting', type: 'nat', hook: 'postrouting', priority: 100 },
];

const REGULAR = [
  'cluster-ips-check',
  'endpoints-check-services',
  'firewall-check',
  'mark-for-masquerade',
  'masquerading',
  'nodeport-endpoints-check',
  'reject-chain',
  'services',
];

const portId = (svc: ServiceSpec, port: ServicePort): string => `${svc.namespace}/${svc.name}/${port.protocol.toLowerCase()}/${port.name}`;

function namesOf(svc: ServiceSpec, port: ServicePort) {
  const id = portId(svc, port);
  const hash = chainHash(id).slice(0, 8);
  return {
    service: `service-${hash}-${id}`,
    external: `external-${hash}-${id}`,
    // An nft name cannot hold ':', so an IPv6 endpoint is spelled with dots (fd00.10.244.1..b).
    endpoint: (ep: ServiceEndpoint) => `endpoint-${chainHash(id, ep.ip).slice(0, 8)}-${id}__${ep.ip.replace(/:/g, '.')}/${port.targetPort}`,
  };
}

const vmapOver = (endpoints: readonly ServiceEndpoint[], endpoint: (ep: ServiceEndpoint) => string): string =>
  `numgen random mod ${endpoints.length} vmap { ${endpoints.map((ep, i) => `${i} : goto ${endpoint(ep)}`).join(' , ')} }`;

export function nftablesScript(node: ProxyNode, services: readonly ServiceSpec[]): string {
  const t = nftTable(node.family);
  // The family's words: address type, address match.
  const addr = node.family === 6 ? 'ipv6_addr' : 'ipv4_addr';
  const ip = node.family === 6 ? 'ip6' : 'ip';
  const out: string[] = [
    // add-then-delete makes the delete safe when the table does not exist yet; all of it is one transaction.
    `add table ${t}`,
    `delete table ${t}`,
    `add table ${t} { comment "rules for kube-proxy" ; }`,
    `add set ${t} cluster-ips { type ${addr} ; comment "Active ClusterIPs" ; }`,
    `add set ${t} nodeport-ips { type ${addr} ; comment "IPs that accept NodePort traffic" ; }`,
    `add map ${t} firewall-ips { type ${addr} . inet_proto . inet_service : verdict ; }`,
    `add map ${t} no-endpoint-services { type ${addr} . inet_proto . inet_service : verdict ; }`,
    `add map ${t} no-endpoint-nodeports { type inet_proto . inet_service : verdict ; }`,
    `add map ${t} service-ips { type ${addr} . inet_proto . inet_service : verdict ; comment "ClusterIP, ExternalIP and LoadBalancer IP traffic" ; }`,
    `add map ${t} service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }`,
    ...BASE_CHAINS.map((c) => `add chain ${t} ${c.name} { type ${c.type} hook ${c.hook} priority ${c.priority} ; }`),
    ...REGULAR.map((c) => `add chain ${t} ${c}`),
    `add rule ${t} filter-prerouting ct state new jump firewall-check`,
    `add rule ${t} filter-forward ct state new jump endpoints-check-services`,
    `add rule ${t} filter-forward ct state new jump cluster-ips-check`,
    `add rule ${t} filter-input ct state new jump nodeport-endpoints-check`,
    `add rule ${t} filter-input ct state new jump endpoints-check-services`,
    `add rule ${t} filter-output ct state new jump endpoints-check-services`,
    `add rule ${t} filter-output ct state new jump cluster-ips-check`,
    `add rule ${t} firewall-check ${ip} daddr . meta l4proto . th dport vmap @firewall-ips`,
    `add rule ${t} cluster-ips-check ${ip} daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"`,
    `add rule ${t} cluster-ips-check ${ip} daddr { ${node.serviceCidr} } drop comment "Drop traffic to unallocated ClusterIPs"`,
    `add rule ${t} endpoints-check-services ${ip} daddr . meta l4proto . th dport vmap @no-endpoint-services`,
    `add rule ${t} nodeport-endpoints-check ${ip} daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports`,
    `add rule ${t} reject-chain reject`,
    `add rule ${t} mark-for-masquerade mark set mark or ${MASQ_MARK}`,
    `add rule ${t} masquerading mark and ${MASQ_MARK} == 0 return`,
    `add rule ${t} masquerading mark set mark xor ${MASQ_MARK}`,
    `add rule ${t} masquerading masquerade fully-random`,
    `add rule ${t} nat-prerouting jump services`,
    `add rule ${t} nat-output jump services`,
    `add rule ${t} nat-postrouting jump masquerading`,
    `add rule ${t} services ${ip} daddr . meta l4proto . th dport vmap @service-ips`,
    `add rule ${t} services ${ip} daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports`,
    ...node.nodeIps.map((a) => `add element ${t} nodeport-ips { ${a} }`),
  ];
  // Every chain is declared before any rule names it (a goto to a chain not yet added fails the transaction).
  const chains: string[] = [];
  const rules: string[] = [];
  for (const svc of servicesForFamily(services, node.family)) {
    for (const port of svc.ports) {
      const n = namesOf(svc, port);
      const proto = port.protocol.toLowerCase();
      chains.push(`add chain ${t} ${n.service}`);
      // The cluster-CIDR rule: a ClusterIP reached from outside the pod network is masqueraded.
      rules.push(`add rule ${t} ${n.service} ${ip} daddr ${svc.clusterIp} ${ip} saddr != ${node.clusterCidr} jump mark-for-masquerade`);
      if (svc.endpoints.length > 0) rules.push(`add rule ${t} ${n.service} ${vmapOver(svc.endpoints, n.endpoint)}`);
      for (const ep of svc.endpoints) {
        chains.push(`add chain ${t} ${n.endpoint(ep)}`);
        // Hairpin: an endpoint reaching its own service is masqueraded.
        rules.push(`add rule ${t} ${n.endpoint(ep)} ${ip} saddr ${ep.ip} jump mark-for-masquerade`);
        rules.push(`add rule ${t} ${n.endpoint(ep)} meta l4proto ${proto} dnat to ${joinHostPort(ep.ip, port.targetPort)}`);
      }
      rules.push(`add element ${t} cluster-ips { ${svc.clusterIp} }`);
      if (svc.endpoints.length > 0)
        rules.push(`add element ${t} service-ips { ${svc.clusterIp} . ${proto} . ${port.port} : goto ${n.service} }`);
      else rules.push(`add element ${t} no-endpoint-services { ${svc.clusterIp} . ${proto} . ${port.port} : goto reject-chain }`);
      if (port.nodePort === undefined) continue;
      chains.push(`add chain ${t} ${n.external}`);
      if (trafficPolicyOf(svc) === 'Cluster') {
        rules.push(`add rule ${t} ${n.external} jump mark-for-masquerade`, `add rule ${t} ${n.external} goto ${n.service}`);
      } else {
        const local = localEndpoints(svc, node);
        rules.push(
          `add rule ${t} ${n.external} ${ip} saddr ${node.clusterCidr} goto ${n.service} comment "short-circuit pod traffic"`,
          `add rule ${t} ${n.external} fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"`,
          `add rule ${t} ${n.external} fib saddr type local goto ${n.service} comment "short-circuit local traffic"`,
        );
        if (local.length > 0) rules.push(`add rule ${t} ${n.external} ${vmapOver(local, n.endpoint)}`);
        else rules.push(`add element ${t} no-endpoint-nodeports { ${proto} . ${port.nodePort} : drop }`);
      }
      rules.push(`add element ${t} service-nodeports { ${proto} . ${port.nodePort} : goto ${n.external} }`);
    }
  }
  return `${[...out, ...chains, ...rules].join('\n')}\n`;
}

/** kube-proxy's cleanup in this mode: its table goes, nothing else is touched. */
export const nftablesCleanup = (family: IpFamily = 4): string => `add table ${nftTable(family)}\ndelete table ${nftTable(family)}\n`;
