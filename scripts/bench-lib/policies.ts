// NetworkPolicies for synthetic clusters: the shapes real clusters carry, in realistic proportions.
// Every kind appears at least once when there are enough policies; all of them are valid (the
// generator's tests compile each one and expect no `error` problem).

import type {
  ContainerPort,
  LabelSelector,
  Namespace,
  NetworkPolicy,
  PolicyPeer,
  PolicyPort,
  PolicyRule,
  SelectorRequirement,
} from '../../src/model/index.js';
import type { Rng } from './prng.js';

/** One deployment: `replicas` pods sharing labels and container ports. */
export interface AppInfo {
  readonly namespace: string;
  readonly app: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: readonly ContainerPort[];
  readonly replicas: number;
}

export const POLICY_KINDS = [
  'default-deny-ingress',
  'default-deny-all',
  'allow-same-namespace',
  'app-to-app',
  'from-team-namespaces',
  'namespace-and-pod',
  'monitoring-scrape',
  'match-expressions',
  'egress-dns',
  'egress-ipblock',
  'ingress-ipblock',
  'port-range',
  'allow-all-ingress',
  'egress-to-app',
] as const;
export type PolicyKind = (typeof POLICY_KINDS)[number];

/** Relative frequency: app-to-app rules dominate real policy sets, allow-alls are rare. */
const WEIGHTS: Readonly<Record<PolicyKind, number>> = {
  'default-deny-ingress': 8,
  'default-deny-all': 3,
  'allow-same-namespace': 5,
  'app-to-app': 25,
  'from-team-namespaces': 7,
  'namespace-and-pod': 7,
  'monitoring-scrape': 8,
  'match-expressions': 8,
  'egress-dns': 8,
  'egress-ipblock': 5,
  'ingress-ipblock': 3,
  'port-range': 4,
  'allow-all-ingress': 2,
  'egress-to-app': 7,
};

export interface PolicyInput {
  readonly namespaces: readonly Namespace[];
  readonly apps: readonly AppInfo[];
  readonly count: number;
}

export interface GeneratedPolicies {
  readonly policies: NetworkPolicy[];
  readonly kinds: Record<PolicyKind, number>;
}

type Spec = Omit<NetworkPolicy, 'namespace' | 'name'>;

interface Ctx {
  readonly rng: Rng;
  readonly input: PolicyInput;
  readonly appsByNamespace: ReadonlyMap<string, readonly AppInfo[]>;
  readonly teams: readonly string[];
  /** Counts matchExpressions policies, so the four operators rotate. */
  exprTurn: number;
}

export function generatePolicies(rng: Rng, input: PolicyInput): GeneratedPolicies {
  const appsByNamespace = new Map<string, AppInfo[]>();
  for (const a of input.apps) appsByNamespace.set(a.namespace, [...(appsByNamespace.get(a.namespace) ?? []), a]);
  const teams = [...new Set(input.namespaces.map((n) => n.labels['team']).filter((t): t is string => t !== undefined))].sort();
  const ctx: Ctx = { rng, input, appsByNamespace, teams, exprTurn: 0 };
  const kinds = Object.fromEntries(POLICY_KINDS.map((k) => [k, 0])) as Record<PolicyKind, number>;
  const defaultDenied = new Set<string>();
  const weighted = POLICY_KINDS.map((k) => [k, WEIGHTS[k]] as const);
  const policies: NetworkPolicy[] = [];
  for (let i = 0; i < input.count; i++) {
    // Busy namespaces carry more policies: pick the app first (apps live mostly in big namespaces).
    const app = rng.pick(input.apps);
    let kind: PolicyKind = i < POLICY_KINDS.length ? POLICY_KINDS[i]! : rng.weighted(weighted);
    if (kind.startsWith('default-deny')) {
      if (defaultDenied.has(app.namespace)) kind = 'app-to-app';
      else defaultDenied.add(app.namespace);
    }
    kinds[kind]++;
    policies.push({ namespace: app.namespace, name: `${kind}-${i}`, ...BUILD[kind](ctx, app) });
  }
  return { policies, kinds };
}

const sel = (matchLabels: Record<string, string> = {}, matchExpressions: SelectorRequirement[] = []): LabelSelector => ({
  matchLabels,
  matchExpressions,
});
const tcp = (port?: number | string, endPort?: number): PolicyPort => ({
  protocol: 'TCP',
  ...(port !== undefined ? { port } : {}),
  ...(endPort !== undefined ? { endPort } : {}),
});
const udp = (port?: number, endPort?: number): PolicyPort => ({
  protocol: 'UDP',
  ...(port !== undefined ? { port } : {}),
  ...(endPort !== undefined ? { endPort } : {}),
});
const byName = (ns: string): LabelSelector => sel({ 'kubernetes.io/metadata.name': ns });
const DNS_RULE: PolicyRule = {
  peers: [{ namespaceSelector: byName('kube-system'), podSelector: sel({ 'k8s-app': 'kube-dns' }) }],
  ports: [udp(53), tcp(53)],
};

/** How clients reach an app: by a named port half the time when it has one, else by number. */
function servicePorts(ctx: Ctx, app: AppInfo): PolicyPort[] {
  const main = app.ports.find((p) => p.name !== 'metrics');
  if (!main) return [tcp(8080)];
  const named = main.name !== undefined && ctx.rng.chance(0.5);
  const ports = [tcp(named ? main.name : main.containerPort)];
  // A sprinkle of UDP and SCTP keeps the other protocols' code paths in the measurement.
  if (ctx.rng.chance(0.1)) ports.push(udp(5000 + ctx.rng.int(100)));
  if (ctx.rng.chance(0.03)) ports.push({ protocol: 'SCTP', port: 9000 + ctx.rng.int(10) });
  return ports;
}

function otherApp(ctx: Ctx, app: AppInfo, namespace = app.namespace): AppInfo {
  const apps = (ctx.appsByNamespace.get(namespace) ?? []).filter((a) => a !== app);
  return apps.length > 0 ? ctx.rng.pick(apps) : app;
}

const target = (app: AppInfo): LabelSelector => sel({ app: app.app });

const BUILD: Readonly<Record<PolicyKind, (ctx: Ctx, app: AppInfo) => Spec>> = {
  'default-deny-ingress': () => ({ podSelector: sel(), policyTypes: ['Ingress'] }),
  'default-deny-all': () => ({ podSelector: sel(), policyTypes: ['Ingress', 'Egress'] }),
  'allow-same-namespace': () => ({ podSelector: sel(), policyTypes: ['Ingress'], ingress: [{ peers: [{ podSelector: sel() }] }] }),

  'app-to-app': (ctx, app) => {
    const peers: PolicyPeer[] = [{ podSelector: sel({ app: otherApp(ctx, app).app }) }];
    if (ctx.rng.chance(0.2)) peers.push({ podSelector: sel({ app: otherApp(ctx, app).app }) });
    const ingress: PolicyRule[] = [{ peers, ports: servicePorts(ctx, app) }];
    if (ctx.rng.chance(0.25)) ingress.push({ peers: [{ podSelector: sel({ tier: 'frontend' }) }], ports: [tcp(8080), tcp(8443)] });
    return { podSelector: target(app), policyTypes: ['Ingress'], ingress };
  },

  'from-team-namespaces': (ctx, app) => ({
    podSelector: target(app),
    ingress: [{ peers: [{ namespaceSelector: sel({ team: ctx.rng.pick(ctx.teams) }) }], ports: servicePorts(ctx, app) }],
  }),

  'namespace-and-pod': (ctx, app) => ({
    podSelector: ctx.rng.chance(0.5) ? sel({ tier: app.tier }) : target(app),
    ingress: [
      {
        peers: [{ namespaceSelector: sel({ env: ctx.rng.pick(['prod', 'staging']) }), podSelector: sel({ tier: 'frontend' }) }],
        ports: servicePorts(ctx, app),
      },
    ],
  }),

  'monitoring-scrape': (ctx, app) => ({
    podSelector: ctx.rng.chance(0.3) ? sel() : target(app),
    ingress: [{ peers: [{ namespaceSelector: byName('monitoring'), podSelector: sel({ app: 'prometheus' }) }], ports: [tcp('metrics')] }],
  }),

  // All four operators, in pod and namespace selectors, on targets and peers.
  'match-expressions': (ctx, app) => {
    const turn = ctx.exprTurn++ % 4;
    const targets: SelectorRequirement[][] = [
      [{ key: 'tier', operator: 'In', values: ['frontend', 'backend'] }],
      [
        { key: 'app', operator: 'In', values: [app.app] },
        { key: 'version', operator: 'Exists', values: [] },
      ],
      [{ key: 'tier', operator: 'NotIn', values: ['db', 'cache'] }],
      [
        { key: 'app', operator: 'In', values: [app.app, otherApp(ctx, app).app] },
        { key: 'canary', operator: 'DoesNotExist', values: [] },
      ],
    ];
    const peers: PolicyPeer[][] = [
      [
        {
          podSelector: sel({}, [
            { key: 'app', operator: 'NotIn', values: [app.app] },
            { key: 'version', operator: 'Exists', values: [] },
          ]),
        },
      ],
      [
        {
          namespaceSelector: sel({}, [
            { key: 'compliance', operator: 'DoesNotExist', values: [] },
            { key: 'env', operator: 'In', values: ['prod'] },
          ]),
        },
      ],
      [
        {
          namespaceSelector: sel({ team: ctx.rng.pick(ctx.teams) }),
          podSelector: sel({}, [{ key: 'tier', operator: 'In', values: ['frontend', 'backend'] }]),
        },
      ],
      [
        { podSelector: sel({}, [{ key: 'version', operator: 'NotIn', values: ['v2'] }]) },
        { namespaceSelector: sel({}, [{ key: 'istio-injection', operator: 'Exists', values: [] }]) },
      ],
    ];
    return { podSelector: sel({}, targets[turn]!), ingress: [{ peers: peers[turn]!, ports: servicePorts(ctx, app) }] };
  },

  'egress-dns': (ctx, app) => ({
    podSelector: ctx.rng.chance(0.4) ? sel() : target(app),
    policyTypes: ['Egress'],
    egress: [DNS_RULE],
  }),

  'egress-ipblock': (ctx, app) => ({
    podSelector: target(app),
    policyTypes: ['Egress'],
    egress: [
      { peers: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } }], ports: [tcp(443)] },
      ...(ctx.rng.chance(0.5)
        ? [{ peers: [{ ipBlock: { cidr: `10.${96 + ctx.rng.int(8)}.0.0/16`, except: [] } }], ports: [tcp(5432), tcp(6379)] }]
        : []),
      DNS_RULE,
    ],
  }),

  'ingress-ipblock': (ctx, app) => {
    const hole = ctx.rng.int(256);
    return {
      podSelector: target(app),
      ingress: [
        {
          peers: [
            { ipBlock: { cidr: '192.168.0.0/16', except: [`192.168.${hole}.0/24`] } },
            { ipBlock: { cidr: '203.0.113.0/24', except: ['203.0.113.128/25', '203.0.113.64/27'] } },
            { podSelector: sel({ tier: 'frontend' }) },
          ],
          ports: [tcp(8080), tcp(443)],
        },
      ],
    };
  },

  'port-range': (ctx, app) => ({
    podSelector: target(app),
    ingress: [
      {
        peers: [{ podSelector: sel() }],
        ports: [tcp(30000, 32767), tcp(8000, 8100), ...(ctx.rng.chance(0.5) ? [udp(7000, 7010)] : []), tcp(9443)],
      },
    ],
  }),

  'allow-all-ingress': (_ctx, app) => ({ podSelector: target(app), ingress: [{}] }),

  'egress-to-app': (ctx, app) => {
    const namespaces = [...ctx.appsByNamespace.keys()];
    const peerApp = otherApp(ctx, app, ctx.rng.pick(namespaces));
    return {
      podSelector: target(app),
      policyTypes: ['Egress'],
      egress: [
        {
          peers: [{ namespaceSelector: byName(peerApp.namespace), podSelector: sel({ app: peerApp.app }) }],
          ports: servicePorts(ctx, peerApp),
        },
        DNS_RULE,
      ],
    };
  },
};
