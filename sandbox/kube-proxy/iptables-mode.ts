// kube-proxy's iptables mode as rules (pure): the chains `iptables-restore --noflush` loads, and the
// jumps from the kernel chains it "ensures" one by one, prepending each when missing (EnsureRule with
// Prepend in pkg/proxy/iptables/proxier.go). Modelled on the layout of kube-proxy's own golden dumps
// (pkg/proxy/iptables/proxier_test.go): KUBE-SERVICES → KUBE-SVC-* → KUBE-SEP-* (hairpin KUBE-MARK-MASQ,
// DNAT), KUBE-NODEPORTS → KUBE-EXT-*, KUBE-POSTROUTING masquerade of the 0x4000 mark, and filter
// KUBE-FORWARD that ACCEPTs masquerade-marked traffic.

import type { Protocol } from '../../src/model/index.js';
import {
  MASQ_MARK,
  chainHash,
  hostMask,
  joinHostPort,
  localEndpoints,
  servicePortName,
  servicesForFamily,
  trafficPolicyOf,
  type ProxyNode,
  type ServiceEndpoint,
  type ServicePort,
  type ServiceSpec,
} from './model.js';

export type Table = 'filter' | 'nat';

/** One jump from a kernel chain into kube-proxy's chains, as `iptables -t T -C/-I CHAIN args…` takes it. */
export interface Jump {
  readonly table: Table;
  readonly chain: string;
  readonly args: readonly string[];
}

const comment = (text: string): string[] => ['-m', 'comment', '--comment', text];
const NEW = ['-m', 'conntrack', '--ctstate', 'NEW'];

/**
 * kube-proxy's jumps in the order it ensures them. Each one is prepended when missing, so the last one
 * ensured for a chain ends up first: in FORWARD that is KUBE-FORWARD, whose mark rule ACCEPTs every
 * masquerade-marked packet; anything that filters pod traffic must be re-asserted above it.
 */
export const KUBE_PROXY_JUMPS: readonly Jump[] = [
  {
    table: 'filter',
    chain: 'INPUT',
    args: [...NEW, ...comment('kubernetes externally-visible service portals'), '-j', 'KUBE-EXTERNAL-SERVICES'],
  },
  {
    table: 'filter',
    chain: 'FORWARD',
    args: [...NEW, ...comment('kubernetes externally-visible service portals'), '-j', 'KUBE-EXTERNAL-SERVICES'],
  },
  { table: 'filter', chain: 'INPUT', args: [...comment('kubernetes health check service ports'), '-j', 'KUBE-NODEPORTS'] },
  { table: 'filter', chain: 'FORWARD', args: [...NEW, ...comment('kubernetes service portals'), '-j', 'KUBE-SERVICES'] },
  { table: 'filter', chain: 'OUTPUT', args: [...NEW, ...comment('kubernetes service portals'), '-j', 'KUBE-SERVICES'] },
  { table: 'filter', chain: 'FORWARD', args: [...comment('kubernetes forwarding rules'), '-j', 'KUBE-FORWARD'] },
  { table: 'nat', chain: 'OUTPUT', args: [...comment('kubernetes service portals'), '-j', 'KUBE-SERVICES'] },
  { table: 'nat', chain: 'PREROUTING', args: [...comment('kubernetes service portals'), '-j', 'KUBE-SERVICES'] },
  { table: 'nat', chain: 'POSTROUTING', args: [...comment('kubernetes postrouting rules'), '-j', 'KUBE-POSTROUTING'] },
];

/** Chains kube-proxy always has, per table. */
const FIXED: Readonly<Record<Table, readonly string[]>> = {
  filter: ['KUBE-EXTERNAL-SERVICES', 'KUBE-FORWARD', 'KUBE-NODEPORTS', 'KUBE-SERVICES', 'KUBE-PROXY-FIREWALL'],
  nat: ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ'],
};

/** Per-service chains kube-proxy generates (and deletes when their service goes). */
export const isGeneratedChain = (name: string): boolean => /^KUBE-(SVC|SEP|EXT|SVL)-/.test(name);

const proto = (p: Protocol): string[] => {
  const lower = p.toLowerCase();
  return ['-p', lower, '-m', lower];
};

interface PortChains {
  readonly svc: string;
  readonly ext: string;
  readonly svl: string;
  readonly sep: (ep: ServiceEndpoint) => string;
}

function chainsOf(svc: ServiceSpec, port: ServicePort): PortChains {
  const base = chainHash(svc.namespace, svc.name, port.name, port.protocol);
  return {
    svc: `KUBE-SVC-${base}`,
    ext: `KUBE-EXT-${base}`,
    svl: `KUBE-SVL-${base}`,
    sep: (ep) => `KUBE-SEP-${chainHash(svc.namespace, svc.name, port.name, port.protocol, ep.ip)}`,
  };
}

/**
 * kube-proxy's random spread over n endpoints: the i-th of n rules matches with probability 1/(n-i),
 * the last one unconditionally.
 */
function spread(
  rules: string[],
  chain: string,
  name: string,
  port: ServicePort,
  endpoints: readonly ServiceEndpoint[],
  sep: (ep: ServiceEndpoint) => string,
): void {
  endpoints.forEach((ep, i) => {
    const left = endpoints.length - i;
    const stat = left > 1 ? ['-m', 'statistic', '--mode', 'random', '--probability', (1 / left).toFixed(10)] : [];
    rules.push(line(chain, [...comment(`${name} -> ${joinHostPort(ep.ip, port.targetPort)}`), ...stat, '-j', sep(ep)]));
  });
}

const quote = (w: string): string => (/[\s"]/.test(w) ? `"${w.replace(/"/g, '\\"')}"` : w);
const line = (chain: string, args: readonly string[]): string => `-A ${chain} ${args.map(quote).join(' ')}`;

export interface IptablesPayload {
  /** `iptables-restore --noflush` input: every kube-proxy chain declared (so rewritten), then stale ones deleted. */
  readonly restore: string;
  readonly jumps: readonly Jump[];
}

/**
 * The node's kube-proxy rules. `existing` names the chains the node's tables hold now, so generated
 * chains of services that are gone get deleted, as kube-proxy does.
 */
export function iptablesRules(
  node: ProxyNode,
  services: readonly ServiceSpec[],
  existing: Readonly<Record<Table, readonly string[]>> = { filter: [], nat: [] },
): IptablesPayload {
  const nat: string[] = [
    line('KUBE-POSTROUTING', ['-m', 'mark', '!', '--mark', `${MASQ_MARK}/${MASQ_MARK}`, '-j', 'RETURN']),
    line('KUBE-POSTROUTING', ['-j', 'MARK', '--xor-mark', MASQ_MARK]),
    line('KUBE-POSTROUTING', [...comment('kubernetes service traffic requiring SNAT'), '-j', 'MASQUERADE', '--random-fully']),
    line('KUBE-MARK-MASQ', ['-j', 'MARK', '--or-mark', MASQ_MARK]),
  ];
  const filter: string[] = [
    line('KUBE-FORWARD', ['-m', 'conntrack', '--ctstate', 'INVALID', '-j', 'DROP']),
    line('KUBE-FORWARD', [...comment('kubernetes forwarding rules'), '-m', 'mark', '--mark', `${MASQ_MARK}/${MASQ_MARK}`, '-j', 'ACCEPT']),
    line('KUBE-FORWARD', [
      ...comment('kubernetes forwarding conntrack rule'),
      '-m',
      'conntrack',
      '--ctstate',
      'RELATED,ESTABLISHED',
      '-j',
      'ACCEPT',
    ]),
  ];
  const generated: string[] = [];
  const services_: string[] = [];
  const nodeports: string[] = [];
  const perService: string[] = [];

  // Each family's proxier gets only its family's view of a Service (ClusterIP and endpoints).
  const host = hostMask(node.family);
  for (const svc of servicesForFamily(services, node.family)) {
    for (const port of svc.ports) {
      const name = servicePortName(svc, port);
      const c = chainsOf(svc, port);
      const match = [...proto(port.protocol)];
      generated.push(c.svc);
      services_.push(
        line('KUBE-SERVICES', [
          '-d',
          `${svc.clusterIp}${host}`,
          ...comment(`${name} cluster IP`),
          ...match,
          '--dport',
          String(port.port),
          '-j',
          c.svc,
        ]),
      );
      // The cluster-CIDR rule: a ClusterIP reached from outside the pod network is masqueraded.
      perService.push(
        line(c.svc, [
          '!',
          '-s',
          node.clusterCidr,
          '-d',
          `${svc.clusterIp}${host}`,
          ...comment(`${name} cluster IP`),
          ...match,
          '--dport',
          String(port.port),
          '-j',
          'KUBE-MARK-MASQ',
        ]),
      );
      spread(perService, c.svc, name, port, svc.endpoints, c.sep);
      for (const ep of svc.endpoints) {
        const sep = c.sep(ep);
        generated.push(sep);
        // Hairpin: an endpoint reaching its own service is masqueraded so the reply comes back through us.
        perService.push(line(sep, ['-s', `${ep.ip}${host}`, ...comment(name), '-j', 'KUBE-MARK-MASQ']));
        perService.push(
          line(sep, [...proto(port.protocol), ...comment(name), '-j', 'DNAT', '--to-destination', joinHostPort(ep.ip, port.targetPort)]),
        );
      }
      if (port.nodePort === undefined) continue;
      generated.push(c.ext);
      nodeports.push(line('KUBE-NODEPORTS', [...match, ...comment(name), '--dport', String(port.nodePort), '-j', c.ext]));
      if (trafficPolicyOf(svc) === 'Cluster') {
        perService.push(line(c.ext, [...comment(`masquerade traffic for ${name} external destinations`), '-j', 'KUBE-MARK-MASQ']));
        perService.push(line(c.ext, ['-j', c.svc]));
        continue;
      }
      // externalTrafficPolicy Local: no masquerade, only this node's endpoints; none here → drop in filter.
      const local = localEndpoints(svc, node);
      perService.push(line(c.ext, ['-s', node.clusterCidr, ...comment(`pod traffic for ${name} external destinations`), '-j', c.svc]));
      perService.push(
        line(c.ext, [
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          ...comment(`masquerade LOCAL traffic for ${name} external destinations`),
          '-j',
          'KUBE-MARK-MASQ',
        ]),
      );
      perService.push(
        line(c.ext, [
          '-m',
          'addrtype',
          '--src-type',
          'LOCAL',
          ...comment(`route LOCAL traffic for ${name} external destinations`),
          '-j',
          c.svc,
        ]),
      );
      if (local.length > 0) {
        generated.push(c.svl);
        perService.push(line(c.ext, ['-j', c.svl]));
        spread(perService, c.svl, name, port, local, c.sep);
      } else {
        filter.push(
          line('KUBE-EXTERNAL-SERVICES', [
            ...match,
            ...comment(`${name} has no local endpoints`),
            '-m',
            'addrtype',
            '--dst-type',
            'LOCAL',
            '--dport',
            String(port.nodePort),
            '-j',
            'DROP',
          ]),
        );
      }
    }
  }
  // "this must be the last rule in this chain": node ports are matched after every ClusterIP. The IPv6
  // proxier also excludes ::1 (kube-proxy: "For IPv6 they never work").
  const local = ['-m', 'addrtype', '--dst-type', 'LOCAL', ...(node.family === 6 ? ['!', '-d', '::1/128'] : [])];
  services_.push(
    line('KUBE-SERVICES', [
      ...comment('kubernetes service nodeports; NOTE: this must be the last rule in this chain'),
      ...local,
      '-j',
      'KUBE-NODEPORTS',
    ]),
  );

  const declare = (chains: readonly string[]): string[] => chains.map((c) => `:${c} - [0:0]`);
  // Stale chains are declared too (which flushes them, so nothing they jump to stays referenced), then deleted.
  const stale = existing.nat.filter((c) => isGeneratedChain(c) && !generated.includes(c));
  const restore = [
    '*filter',
    ...declare(FIXED.filter),
    ...filter,
    'COMMIT',
    '*nat',
    ...declare([...FIXED.nat, ...generated, ...stale]),
    ...nat,
    ...services_,
    ...nodeports,
    ...perService,
    ...stale.map((c) => `-X ${c}`),
    'COMMIT',
    '',
  ].join('\n');
  return { restore, jumps: KUBE_PROXY_JUMPS };
}

/** Removes everything kube-proxy owns (its `--cleanup`): jumps first, then its chains flushed and deleted. */
export function iptablesCleanup(existing: Readonly<Record<Table, readonly string[]>>, presentJumps: readonly Jump[]): string {
  const ours = (table: Table): string[] => existing[table].filter((c) => FIXED[table].includes(c) || isGeneratedChain(c));
  const block = (table: Table): string[] => [
    `*${table}`,
    ...presentJumps.filter((j) => j.table === table).map((j) => `-D ${j.chain} ${j.args.map(quote).join(' ')}`),
    ...ours(table).map((c) => `-F ${c}`),
    ...ours(table).map((c) => `-X ${c}`),
    'COMMIT',
  ];
  return [...block('filter'), ...block('nat'), ''].join('\n');
}
