// The 24 tests (92 subtests) of the network-policy-api conformance suite for ClusterNetworkPolicy v1alpha2
// (kubernetes-sigs/network-policy-api @0eec1b0e, conformance/tests/*.go with the manifests of
// conformance/base/{admin_tier,baseline_tier,api_integration}/*.yaml), as data: each test's manifests, and
// per subtest the live changes it makes and the pokes it asserts. Every poke is one
// `kubernetes.PokeServer(clientNamespace, clientPod, protocol, serverPodIP, port, shouldConnect)` of
// upstream, in upstream's order, with upstream's expectation; test/kernel/conformance/cnp-upstream.test.ts runs them.
//
// As upstream: a test's manifests replace the previous test's (MustApplyWithCleanup), the subtests of a test
// run in order and their changes accumulate (a swap in subtest 3 is still in force in subtest 4).

import { CENTAUR_PORTS, ns, type CnpDoc, type House, type HouseCluster } from './houses.js';

export type PokeProtocol = 'tcp' | 'udp' | 'sctp';

/** `PokeServer(client's namespace, client, protocol, server's IP, port, shouldConnect)`. */
export interface Poke {
  /** A house pod (`harry-potter-0`). */
  readonly client: string;
  readonly protocol: PokeProtocol;
  /** A house pod, or `centaur-<i>` (a hostNetwork pod: its node's address). */
  readonly server: string;
  readonly port: number;
  readonly connect: boolean;
}

export const poke = (client: string, protocol: PokeProtocol, server: string, port: number, connect: boolean): Poke => ({
  client,
  protocol,
  server,
  port,
  connect,
});

/** A live change (kubectl patch / delete), applied to the desired state before the step's pokes. */
export type Change = (cluster: HouseCluster) => void;

export interface Step {
  readonly change?: Change;
  readonly pokes: readonly Poke[];
}

export interface Subtest {
  /** Upstream's t.Run title. */
  readonly title: string;
  readonly steps: readonly Step[];
}

export interface UpstreamTest {
  /** Upstream's ShortName. */
  readonly shortName: string;
  /** The manifest upstream applies (under conformance/). */
  readonly manifest: string;
  readonly clusterPolicies: readonly CnpDoc[];
  readonly policies?: readonly object[];
  readonly subtests: readonly Subtest[];
}

/** suite.go: HostNetworkPorts, indexed as the tests index them. */
export const HNP = CENTAUR_PORTS;

// --- manifests -------------------------------------------------------------------------------------------

type Rule = Record<string, unknown>;
type Direction = 'ingress' | 'egress';

const NAME = 'kubernetes.io/metadata.name';
const byName = (house: House) => ({ matchLabels: { [NAME]: ns(house) } });
const byHouse = (house: string) => ({ matchLabels: { 'conformance-house': house } });
const nsPeer = (house: House) => ({ namespaces: byName(house) });
const housePods = (house: string) => ({ pods: { namespaceSelector: byHouse(house), podSelector: byHouse(house) } });
const nodesLinux = { nodes: { matchLabels: { 'kubernetes.io/os': 'linux' } } };
const internet = { networks: ['0.0.0.0/0', '::/0'] };

/** `protocols:` entries, e.g. [['tcp', 80], ['udp', 53]]. */
const at = (...ports: readonly (readonly [PokeProtocol, number])[]) => ports.map(([p, n]) => ({ [p]: { destinationPort: { number: n } } }));

function cnp(
  name: string,
  tier: 'Admin' | 'Baseline',
  priority: number,
  subject: Record<string, unknown>,
  rules: { ingress?: Rule[]; egress?: Rule[] },
): CnpDoc {
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name },
    spec: { tier, priority, subject, ...rules },
  };
}

interface Houses {
  /** Accept, Deny (and Pass, Admin) of everything from/to this house. */
  readonly all: House;
  /** Deny (and Pass, Admin) of this house at these ports. */
  readonly denyAt: readonly [House, ReturnType<typeof at>, string];
  /** Accept of this house at these ports, then Deny of everything else from it. */
  readonly acceptAt: readonly [House, ReturnType<typeof at>, string];
}

/**
 * The rule list every standard-{ingress,egress,gress}-*.yaml shares, in the YAML's order (rule names
 * approximate upstream's; a rule's name has no effect on the verdict):
 * Admin  0 Accept all-house · 1 Deny all-house · 2 Pass all-house · 3 Deny deny-house at ports ·
 *        4 Pass deny-house at ports · 5 Accept accept-house at ports · 6 Deny accept-house (everything else);
 * Baseline the same without the two Pass rules (so 0 Accept · 1 Deny · 2 Deny at · 3 Accept at · 4 Deny).
 */
function ordered(tier: 'Admin' | 'Baseline', direction: Direction, h: Houses): Rule[] {
  const verb = direction === 'ingress' ? 'from' : 'to';
  const r = (name: string, action: string, house: House, protocols?: ReturnType<typeof at>): Rule => ({
    name,
    action,
    [verb]: [nsPeer(house)],
    ...(protocols ? { protocols } : {}),
  });
  const [denyHouse, denyPorts, denySuffix] = h.denyAt;
  const [acceptHouse, acceptPorts, acceptSuffix] = h.acceptAt;
  const admin = tier === 'Admin';
  return [
    r(`allow-${verb}-${h.all}-everything`, 'Accept', h.all),
    r(`deny-${verb}-${h.all}-everything`, 'Deny', h.all),
    ...(admin ? [r(`pass-${verb}-${h.all}-everything`, 'Pass', h.all)] : []),
    r(`deny-${verb}-${denyHouse}-at-${denySuffix}`, 'Deny', denyHouse, denyPorts),
    ...(admin ? [r(`pass-${verb}-${denyHouse}-at-${denySuffix}`, 'Pass', denyHouse, denyPorts)] : []),
    r(`allow-${verb}-${acceptHouse}-at-${acceptSuffix}`, 'Accept', acceptHouse, acceptPorts),
    r(`deny-${verb}-${acceptHouse}-everything-else`, 'Deny', acceptHouse),
  ];
}

// standard-{ingress,egress}-{tcp,udp,sctp}-rules.yaml: which houses and ports each one names.
const INGRESS_TCP: Houses = {
  all: 'ravenclaw',
  denyAt: ['slytherin', at(['tcp', 80]), 'port-80'],
  acceptAt: ['hufflepuff', at(['tcp', 80]), 'port-80'],
};
const INGRESS_UDP: Houses = {
  all: 'ravenclaw',
  denyAt: ['slytherin', at(['udp', 5353]), 'port-5353'],
  acceptAt: ['gryffindor', at(['udp', 53]), 'port-53'],
};
const INGRESS_SCTP: Houses = {
  all: 'gryffindor',
  denyAt: ['slytherin', at(['sctp', 9003]), 'port-9003'],
  acceptAt: ['hufflepuff', at(['sctp', 9003]), 'port-9003'],
};
const EGRESS_TCP: Houses = {
  all: 'ravenclaw',
  denyAt: ['slytherin', at(['tcp', 80]), 'port-80'],
  acceptAt: ['hufflepuff', at(['tcp', 8080]), 'port-8080'],
};
const EGRESS_UDP: Houses = INGRESS_UDP;
const EGRESS_SCTP: Houses = INGRESS_SCTP;
// standard-gress-rules-combined.yaml
const GRESS_IN: Houses = {
  all: 'ravenclaw',
  denyAt: ['slytherin', at(['tcp', 80], ['udp', 53], ['sctp', 9003]), 'port-80-53-9003'],
  acceptAt: ['hufflepuff', at(['tcp', 80], ['udp', 5353], ['sctp', 9003]), 'port-80-5353-9003'],
};
const GRESS_OUT: Houses = {
  all: 'ravenclaw',
  denyAt: ['slytherin', at(['tcp', 80], ['udp', 53], ['sctp', 9003]), 'ports-80-53-9003'],
  acceptAt: ['hufflepuff', at(['tcp', 8080], ['udp', 5353], ['sctp', 9003]), 'ports-8080-5353-9003'],
};

const subjectNs = (house: House) => ({ namespaces: byName(house) });

// --- live changes ----------------------------------------------------------------------------------------

function patchRules(name: string, direction: Direction, edit: (rules: Rule[]) => void): Change {
  return (c) => {
    const doc = c.clusterPolicy(name);
    const rules = [...(doc.spec[direction] ?? [])];
    edit(rules);
    c.putClusterPolicy({ ...doc, spec: { ...doc.spec, [direction]: rules } });
  };
}

/** `mutate.Spec.<Direction>[i], [j] = [j], [i]` */
const swap = (name: string, direction: Direction, i: number, j: number): Change =>
  patchRules(name, direction, (rules) => {
    [rules[i], rules[j]] = [rules[j]!, rules[i]!];
  });

/** `mutate.Spec.<Direction>[i].<field> = …` */
const setRule = (name: string, direction: Direction, i: number, fields: Rule): Change =>
  patchRules(name, direction, (rules) => {
    rules[i] = { ...rules[i], ...fields };
  });

const both =
  (...changes: Change[]): Change =>
  (c) => {
    for (const change of changes) change(c);
  };

const setPriority =
  (name: string, priority: number): Change =>
  (c) => {
    const doc = c.clusterPolicy(name);
    c.putClusterPolicy({ ...doc, spec: { ...doc.spec, priority } });
  };

/** `mutateNamespace.SetLabels(...)` then PatchNamespace. */
const setNamespaceLabels =
  (house: House, labels: Record<string, string>): Change =>
  (c) =>
    c.setNamespaceLabels(ns(house), labels);

const deletePolicy =
  (namespace: string, name: string): Change =>
  (c) =>
    c.setPolicies(
      c.current.policies.filter(
        (p) =>
          !(
            (p as { metadata: { namespace: string; name: string } }).metadata.namespace === namespace &&
            (p as { metadata: { name: string } }).metadata.name === name
          ),
      ),
    );

/** The inline-CIDR tests' new first rule: Accept to luna-lovegood-0's and cedric-diggory-0's podIPs (/32, or /128 when not IPv4, as upstream). */
const prependAcceptToPodIps =
  (name: string, ...podNames: string[]): Change =>
  (c) => {
    const ipOf = (pod: string) => c.sandbox.pods().find((p) => p.name === pod)!.ip;
    patchRules(name, 'egress', (rules) => {
      rules.unshift({
        name: 'allow-egress-to-specific-podIPs',
        action: 'Accept',
        to: [{ networks: podNames.map((p) => `${ipOf(p)}${ipOf(p).includes(':') ? '/128' : '/32'}`) }],
      });
    })(c);
  };

// --- shared subtest shapes -------------------------------------------------------------------------------

const one = (title: string, pokes: readonly Poke[], change?: Change): Subtest => ({
  title,
  steps: [change ? { change, pokes } : { pokes }],
});

/** tcp 80, udp 53, sctp 9003 from `client` to `server`, all expecting `connect`. */
const threeProtocols = (client: string, server: string, connect: boolean): Poke[] => [
  poke(client, 'tcp', server, 80, connect),
  poke(client, 'udp', server, 53, connect),
  poke(client, 'sctp', server, 9003, connect),
];

function inlineCidrSubtests(name: string): Subtest[] {
  const hp1 = 'harry-potter-1';
  return [
    {
      title: "Should support a 'deny-egress' rule policy for egress-cidr-peer",
      steps: [
        {
          pokes: [
            ...threeProtocols(hp1, 'luna-lovegood-0', false),
            ...threeProtocols(hp1, 'cedric-diggory-0', false),
            ...threeProtocols(hp1, 'draco-malfoy-0', true),
          ],
        },
        {
          change: setNamespaceLabels('slytherin', { 'conformance-house': 'denied-namespace-label' }),
          pokes: threeProtocols(hp1, 'draco-malfoy-0', false),
        },
        {
          change: setNamespaceLabels('slytherin', { 'conformance-house': 'slytherin' }),
          pokes: threeProtocols(hp1, 'draco-malfoy-0', true),
        },
      ],
    },
    one(
      "Should support an 'allow-egress' rule policy for egress-cidr-peer",
      [
        ...threeProtocols(hp1, 'luna-lovegood-0', true),
        ...threeProtocols(hp1, 'cedric-diggory-0', true),
        ...threeProtocols(hp1, 'luna-lovegood-1', false),
        ...threeProtocols(hp1, 'cedric-diggory-1', false),
      ],
      prependAcceptToPodIps(name, 'luna-lovegood-0', 'cedric-diggory-0'),
    ),
  ];
}

function gressSubtests(name: string, admin: boolean): Subtest[] {
  const first = [
    one("Should support an 'allow-gress' policy across different protocols", [
      poke('harry-potter-0', 'tcp', 'luna-lovegood-0', 80, true),
      poke('harry-potter-1', 'udp', 'luna-lovegood-0', 53, true),
      poke('harry-potter-0', 'sctp', 'luna-lovegood-0', 9003, true),
      poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true),
      poke('luna-lovegood-1', 'udp', 'harry-potter-0', 53, true),
      poke('luna-lovegood-1', 'sctp', 'harry-potter-0', 9003, true),
    ]),
    one("Should support an 'allow-gress' policy across different protocols at the specified ports", [
      poke('harry-potter-0', 'tcp', 'cedric-diggory-1', 8080, true),
      poke('harry-potter-1', 'tcp', 'cedric-diggory-1', 80, false),
      poke('harry-potter-0', 'udp', 'cedric-diggory-1', 5353, true),
      poke('harry-potter-1', 'udp', 'cedric-diggory-1', 53, false),
      poke('harry-potter-0', 'sctp', 'cedric-diggory-1', 9003, true),
      poke('harry-potter-1', 'sctp', 'cedric-diggory-1', 9005, false),
      poke('cedric-diggory-0', 'tcp', 'harry-potter-1', 80, true),
      poke('cedric-diggory-1', 'tcp', 'harry-potter-1', 8080, false),
      poke('cedric-diggory-0', 'udp', 'harry-potter-1', 5353, true),
      poke('cedric-diggory-1', 'udp', 'harry-potter-1', 53, false),
      poke('cedric-diggory-0', 'sctp', 'harry-potter-1', 9003, true),
      poke('cedric-diggory-1', 'sctp', 'harry-potter-1', 9005, false),
    ]),
    one(
      "Should support an 'deny-gress' policy across different protocols",
      [
        poke('harry-potter-0', 'tcp', 'luna-lovegood-1', 80, false),
        poke('harry-potter-1', 'udp', 'luna-lovegood-1', 53, false),
        poke('harry-potter-0', 'sctp', 'luna-lovegood-1', 9003, false),
        poke('luna-lovegood-0', 'tcp', 'harry-potter-1', 80, false),
        poke('luna-lovegood-1', 'udp', 'harry-potter-1', 53, false),
        poke('luna-lovegood-1', 'sctp', 'harry-potter-1', 9003, false),
      ],
      both(swap(name, 'egress', 0, 1), swap(name, 'ingress', 0, 1)),
    ),
    one("Should support a 'deny-gress' policy across different protocols at the specified ports", [
      poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
      poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true),
      poke('harry-potter-0', 'udp', 'draco-malfoy-0', 53, false),
      poke('harry-potter-1', 'udp', 'draco-malfoy-0', 5353, true),
      poke('harry-potter-0', 'sctp', 'draco-malfoy-0', 9003, false),
      poke('harry-potter-1', 'sctp', 'draco-malfoy-0', 9005, true),
      poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false),
      poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true),
      poke('draco-malfoy-0', 'udp', 'harry-potter-0', 53, false),
      poke('draco-malfoy-1', 'udp', 'harry-potter-0', 5353, true),
      poke('draco-malfoy-0', 'sctp', 'harry-potter-0', 9003, false),
      poke('draco-malfoy-1', 'sctp', 'harry-potter-0', 9005, true),
    ]),
  ];
  if (!admin) return first;
  return [
    ...first,
    one(
      "Should support an 'pass-gress' policy across different protocols",
      [
        poke('harry-potter-0', 'tcp', 'luna-lovegood-0', 80, true),
        poke('harry-potter-0', 'udp', 'luna-lovegood-0', 5353, true),
        poke('harry-potter-0', 'sctp', 'luna-lovegood-0', 9003, true),
        poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true),
        poke('luna-lovegood-1', 'udp', 'harry-potter-0', 53, true),
        poke('luna-lovegood-1', 'sctp', 'harry-potter-0', 9003, true),
      ],
      both(swap(name, 'egress', 0, 2), swap(name, 'ingress', 0, 2)),
    ),
    one(
      "Should support a 'pass-gress' policy across different protocols at the specified ports",
      [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, true),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true),
        poke('harry-potter-0', 'udp', 'draco-malfoy-0', 53, true),
        poke('harry-potter-1', 'udp', 'draco-malfoy-0', 5353, true),
        poke('harry-potter-0', 'sctp', 'draco-malfoy-0', 9003, true),
        poke('harry-potter-1', 'sctp', 'draco-malfoy-0', 9005, true),
        poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, true),
        poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true),
        poke('draco-malfoy-0', 'udp', 'harry-potter-0', 53, true),
        poke('draco-malfoy-1', 'udp', 'harry-potter-0', 5353, true),
        poke('draco-malfoy-0', 'sctp', 'harry-potter-0', 9003, true),
        poke('draco-malfoy-1', 'sctp', 'harry-potter-0', 9005, true),
      ],
      both(swap(name, 'egress', 3, 4), swap(name, 'ingress', 3, 4)),
    ),
  ];
}

// --- the suite -------------------------------------------------------------------------------------------

const pass = { action: 'Pass' };

export const UPSTREAM_TESTS: readonly UpstreamTest[] = [
  // ---------------------------------------------------------------------------------------- Admin tier
  {
    shortName: 'CNPAdminTierIngressTCP',
    manifest: 'base/admin_tier/standard-ingress-tcp-rules.yaml',
    clusterPolicies: [cnp('ingress-tcp', 'Admin', 3, subjectNs('gryffindor'), { ingress: ordered('Admin', 'ingress', INGRESS_TCP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for TCP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true),
        poke('luna-lovegood-1', 'tcp', 'harry-potter-0', 8080, true),
      ]),
      one("Should support an 'allow-ingress' policy for TCP protocol at the specified port", [
        poke('cedric-diggory-0', 'tcp', 'harry-potter-1', 80, true),
        poke('cedric-diggory-1', 'tcp', 'harry-potter-1', 8080, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'tcp', 'harry-potter-1', 80, false), poke('luna-lovegood-1', 'tcp', 'harry-potter-1', 8080, false)],
        swap('ingress-tcp', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for TCP protocol at the specified port", [
        poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false),
        poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true),
      ]),
      one(
        "Should support an 'pass-ingress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true), poke('luna-lovegood-1', 'tcp', 'harry-potter-0', 8080, true)],
        swap('ingress-tcp', 'ingress', 0, 2),
      ),
      one(
        "Should support a 'pass-ingress' policy for TCP protocol at the specified port",
        [poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, true), poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true)],
        swap('ingress-tcp', 'ingress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierIngressUDP',
    manifest: 'base/admin_tier/standard-ingress-udp-rules.yaml',
    clusterPolicies: [cnp('ingress-udp', 'Admin', 4, subjectNs('hufflepuff'), { ingress: ordered('Admin', 'ingress', INGRESS_UDP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for UDP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'udp', 'cedric-diggory-0', 53, true),
        poke('luna-lovegood-1', 'udp', 'cedric-diggory-0', 5353, true),
      ]),
      one("Should support an 'allow-ingress' policy for UDP protocol at the specified port", [
        poke('harry-potter-0', 'udp', 'cedric-diggory-1', 53, true),
        poke('harry-potter-1', 'udp', 'cedric-diggory-1', 5353, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'udp', 'cedric-diggory-1', 53, false), poke('luna-lovegood-1', 'udp', 'cedric-diggory-1', 5353, false)],
        swap('ingress-udp', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for UDP protocol at the specified port", [
        poke('draco-malfoy-0', 'udp', 'cedric-diggory-0', 5353, false),
        poke('draco-malfoy-1', 'udp', 'cedric-diggory-0', 53, true),
      ]),
      one(
        "Should support an 'pass-ingress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'udp', 'cedric-diggory-1', 5353, true), poke('luna-lovegood-1', 'udp', 'cedric-diggory-1', 53, true)],
        swap('ingress-udp', 'ingress', 0, 2),
      ),
      one(
        "Should support a 'pass-ingress' policy for UDP protocol at the specified port",
        [poke('draco-malfoy-0', 'udp', 'cedric-diggory-0', 5353, true), poke('draco-malfoy-1', 'udp', 'cedric-diggory-0', 53, true)],
        swap('ingress-udp', 'ingress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierIngressSCTP',
    manifest: 'base/admin_tier/standard-ingress-sctp-rules.yaml',
    clusterPolicies: [cnp('ingress-sctp', 'Admin', 5, subjectNs('ravenclaw'), { ingress: ordered('Admin', 'ingress', INGRESS_SCTP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for SCTP protocol; ensure rule ordering is respected", [
        poke('harry-potter-0', 'sctp', 'luna-lovegood-0', 9003, true),
        poke('harry-potter-1', 'sctp', 'luna-lovegood-0', 9005, true),
      ]),
      one("Should support an 'allow-ingress' policy for SCTP protocol at the specified port", [
        poke('cedric-diggory-0', 'sctp', 'luna-lovegood-1', 9003, true),
        poke('cedric-diggory-1', 'sctp', 'luna-lovegood-1', 9005, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'sctp', 'luna-lovegood-1', 9003, false), poke('harry-potter-1', 'sctp', 'luna-lovegood-1', 9005, false)],
        swap('ingress-sctp', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for SCTP protocol at the specified port", [
        poke('draco-malfoy-0', 'sctp', 'luna-lovegood-0', 9003, false),
        poke('draco-malfoy-1', 'sctp', 'luna-lovegood-0', 9005, true),
      ]),
      one(
        "Should support an 'pass-ingress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'sctp', 'luna-lovegood-1', 9003, true), poke('harry-potter-1', 'sctp', 'luna-lovegood-1', 9005, true)],
        swap('ingress-sctp', 'ingress', 0, 2),
      ),
      one(
        "Should support a 'pass-ingress' policy for SCTP protocol at the specified port",
        [poke('draco-malfoy-0', 'sctp', 'luna-lovegood-0', 9003, true), poke('draco-malfoy-1', 'sctp', 'luna-lovegood-0', 9005, true)],
        swap('ingress-sctp', 'ingress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierEgressTCP',
    manifest: 'base/admin_tier/standard-egress-tcp-rules.yaml',
    clusterPolicies: [cnp('egress-tcp', 'Admin', 6, subjectNs('gryffindor'), { egress: ordered('Admin', 'egress', EGRESS_TCP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for TCP protocol; ensure rule ordering is respected", [
        poke('harry-potter-0', 'tcp', 'luna-lovegood-0', 80, true),
        poke('harry-potter-1', 'tcp', 'luna-lovegood-0', 8080, true),
      ]),
      one("Should support an 'allow-egress' policy for TCP protocol at the specified port", [
        poke('harry-potter-0', 'tcp', 'cedric-diggory-1', 8080, true),
        poke('harry-potter-1', 'tcp', 'cedric-diggory-1', 80, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'tcp', 'luna-lovegood-1', 80, false), poke('harry-potter-1', 'tcp', 'luna-lovegood-1', 8080, false)],
        swap('egress-tcp', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for TCP protocol at the specified port", [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true),
      ]),
      one(
        "Should support an 'pass-egress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'tcp', 'luna-lovegood-0', 80, true), poke('harry-potter-1', 'tcp', 'luna-lovegood-0', 8080, true)],
        swap('egress-tcp', 'egress', 0, 2),
      ),
      one(
        "Should support a 'pass-egress' policy for TCP protocol at the specified port",
        [poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, true), poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true)],
        swap('egress-tcp', 'egress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierEgressUDP',
    manifest: 'base/admin_tier/standard-egress-udp-rules.yaml',
    clusterPolicies: [cnp('egress-udp', 'Admin', 7, subjectNs('hufflepuff'), { egress: ordered('Admin', 'egress', EGRESS_UDP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for UDP protocol; ensure rule ordering is respected", [
        poke('cedric-diggory-0', 'udp', 'luna-lovegood-0', 53, true),
        poke('cedric-diggory-1', 'udp', 'luna-lovegood-0', 5353, true),
      ]),
      one("Should support an 'allow-egress' policy for UDP protocol at the specified port", [
        poke('cedric-diggory-0', 'udp', 'harry-potter-1', 53, true),
        poke('cedric-diggory-1', 'udp', 'harry-potter-1', 5353, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('cedric-diggory-0', 'udp', 'luna-lovegood-1', 53, false), poke('cedric-diggory-1', 'udp', 'luna-lovegood-1', 5353, false)],
        swap('egress-udp', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for UDP protocol at the specified port", [
        poke('cedric-diggory-0', 'udp', 'draco-malfoy-0', 5353, false),
        poke('cedric-diggory-1', 'udp', 'draco-malfoy-0', 53, true),
      ]),
      one(
        "Should support an 'pass-egress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('cedric-diggory-0', 'udp', 'luna-lovegood-1', 5353, true), poke('cedric-diggory-1', 'udp', 'luna-lovegood-1', 53, true)],
        swap('egress-udp', 'egress', 0, 2),
      ),
      one(
        "Should support a 'pass-egress' policy for UDP protocol at the specified port",
        [poke('cedric-diggory-0', 'udp', 'draco-malfoy-0', 5353, true), poke('cedric-diggory-1', 'udp', 'draco-malfoy-0', 53, true)],
        swap('egress-udp', 'egress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierEgressSCTP',
    manifest: 'base/admin_tier/standard-egress-sctp-rules.yaml',
    clusterPolicies: [cnp('egress-sctp', 'Admin', 8, subjectNs('ravenclaw'), { egress: ordered('Admin', 'egress', EGRESS_SCTP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for SCTP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'sctp', 'harry-potter-0', 9003, true),
        poke('luna-lovegood-1', 'sctp', 'harry-potter-0', 9005, true),
      ]),
      one("Should support an 'allow-egress' policy for SCTP protocol at the specified port", [
        poke('luna-lovegood-0', 'sctp', 'cedric-diggory-1', 9003, true),
        poke('luna-lovegood-1', 'sctp', 'cedric-diggory-1', 9005, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'sctp', 'harry-potter-1', 9003, false), poke('luna-lovegood-1', 'sctp', 'harry-potter-1', 9005, false)],
        swap('egress-sctp', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for SCTP protocol at the specified port", [
        poke('luna-lovegood-0', 'sctp', 'draco-malfoy-0', 9003, false),
        poke('luna-lovegood-1', 'sctp', 'draco-malfoy-0', 9005, true),
      ]),
      one(
        "Should support an 'pass-egress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'sctp', 'harry-potter-1', 9003, true), poke('luna-lovegood-1', 'sctp', 'harry-potter-1', 9005, true)],
        swap('egress-sctp', 'egress', 0, 2),
      ),
      one(
        "Should support a 'pass-egress' policy for SCTP protocol at the specified port",
        [poke('luna-lovegood-0', 'sctp', 'draco-malfoy-0', 9003, true), poke('luna-lovegood-1', 'sctp', 'draco-malfoy-0', 9005, true)],
        swap('egress-sctp', 'egress', 3, 4),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierGress',
    manifest: 'base/admin_tier/standard-gress-rules-combined.yaml',
    clusterPolicies: [
      cnp('gress-rules', 'Admin', 15, subjectNs('gryffindor'), {
        ingress: ordered('Admin', 'ingress', GRESS_IN),
        egress: ordered('Admin', 'egress', GRESS_OUT),
      }),
    ],
    subtests: gressSubtests('gress-rules', true),
  },
  {
    shortName: 'CNPAdminTierEgressInlineCIDRPeers',
    manifest: 'base/admin_tier/standard-egress-inline-cidr-rules.yaml',
    clusterPolicies: [
      cnp('inline-cidr-as-peers-example', 'Admin', 85, housePods('gryffindor'), {
        egress: [
          { name: 'allow-egress-to-slytherin', action: 'Accept', to: [housePods('slytherin')] },
          { name: 'deny-egress-to-internet', action: 'Deny', to: [internet] },
        ],
      }),
    ],
    subtests: inlineCidrSubtests('inline-cidr-as-peers-example'),
  },
  {
    shortName: 'CNPAdminTierPriorityField',
    manifest: 'base/admin_tier/standard-priority-field.yaml',
    clusterPolicies: [
      cnp('priority-50-example', 'Admin', 50, housePods('gryffindor'), {
        ingress: [{ name: 'deny-all-ingress-from-slytherin', action: 'Deny', from: [housePods('slytherin')] }],
        egress: [{ name: 'deny-all-egress-to-slytherin', action: 'Deny', to: [housePods('slytherin')] }],
      }),
      cnp('old-priority-60-new-priority-40-example', 'Admin', 60, housePods('gryffindor'), {
        ingress: [{ name: 'pass-all-ingress-from-slytherin', action: 'Pass', from: [housePods('slytherin')] }],
        egress: [{ name: 'pass-all-egress-to-slytherin', action: 'Pass', to: [housePods('slytherin')] }],
      }),
      cnp('default', 'Baseline', 10, housePods('gryffindor'), {
        ingress: [{ name: 'allow-all-ingress-from-slytherin', action: 'Accept', from: [housePods('slytherin')] }],
        egress: [{ name: 'allow-all-egress-to-slytherin', action: 'Accept', to: [housePods('slytherin')] }],
      }),
    ],
    subtests: [
      one('Should Deny traffic from slytherin to gryffindor respecting admin CNP', [
        poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false),
        poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, false),
      ]),
      one('Should Deny traffic to slytherin from gryffindor respecting admin CNP', [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, false),
      ]),
      one(
        'Should respect admin CNP priority field; thus passing both ingress and egress traffic over to baseline CNP',
        [
          poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, true),
          poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true),
          poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, true),
          poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true),
        ],
        setPriority('old-priority-60-new-priority-40-example', 40),
      ),
    ],
  },
  {
    shortName: 'CNPAdminTierIntegration',
    manifest: 'base/api_integration/standard-anp-np-banp.yaml',
    clusterPolicies: [
      cnp(
        'pass-example',
        'Admin',
        10,
        { namespaces: byHouse('gryffindor') },
        {
          ingress: [{ name: 'deny-all-ingress-from-slytherin', action: 'Deny', from: [{ namespaces: byHouse('slytherin') }] }],
          egress: [{ name: 'deny-all-egress-to-slytherin', action: 'Deny', to: [{ namespaces: byHouse('slytherin') }] }],
        },
      ),
      cnp(
        'default',
        'Baseline',
        10,
        { namespaces: byHouse('gryffindor') },
        {
          ingress: [{ name: 'deny-all-ingress-from-slytherin', action: 'Deny', from: [{ namespaces: byHouse('slytherin') }] }],
          egress: [{ name: 'deny-all-egress-to-slytherin', action: 'Deny', to: [{ namespaces: byHouse('slytherin') }] }],
        },
      ),
    ],
    policies: [
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'allow-gress-from-to-slytherin-to-gryffindor', namespace: ns('gryffindor') },
        spec: {
          podSelector: null,
          policyTypes: ['Ingress', 'Egress'],
          ingress: [{ from: [{ namespaceSelector: byHouse('slytherin') }] }],
          egress: [{ to: [{ namespaceSelector: byHouse('slytherin') }] }],
        },
      },
    ],
    subtests: [
      one('Should Deny traffic from slytherin to gryffindor respecting admin CNP', [
        poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false),
        poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, false),
      ]),
      one('Should Deny traffic to slytherin from gryffindor respecting admin CNP', [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, false),
      ]),
      one(
        "Should support a 'pass-ingress' policy for admin CNP and respect the match for network policy",
        [poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, true), poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true)],
        setRule('pass-example', 'ingress', 0, pass),
      ),
      one(
        "Should support a 'pass-egress' policy for admin CNP and respect the match for network policy",
        [poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, true), poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true)],
        setRule('pass-example', 'egress', 0, pass),
      ),
      one(
        "Should support a 'pass-ingress' policy for admin CNP and respect the match for baseline cluster network policy",
        [poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false), poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, false)],
        deletePolicy(ns('gryffindor'), 'allow-gress-from-to-slytherin-to-gryffindor'),
      ),
      one("Should support a 'pass-egress' policy for admin CNP and respect the match for baseline cluster network policy", [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, false),
      ]),
    ],
  },
  {
    // admin-network-policy-experimental-ingress-rules.go (feature ClusterNetworkPolicyNamedPorts)
    shortName: 'CNPAdminTierIngressNamedPort',
    manifest: 'base/admin_tier/standard-ingress-udp-rules.yaml',
    clusterPolicies: [cnp('ingress-udp', 'Admin', 4, subjectNs('hufflepuff'), { ingress: ordered('Admin', 'ingress', INGRESS_UDP) })],
    subtests: [
      one(
        "Should support an 'allow-ingress' policy for named port",
        [poke('harry-potter-0', 'udp', 'cedric-diggory-1', 53, true), poke('harry-potter-1', 'udp', 'cedric-diggory-1', 5353, false)],
        setRule('ingress-udp', 'ingress', 5, { protocols: [{ destinationNamedPort: 'dns' }] }),
      ),
    ],
  },
  {
    // admin-network-policy-experimental-egress-rules.go (feature ClusterNetworkPolicyNamedPorts)
    shortName: 'CNPAdminTierEgressNamedPort',
    manifest: 'base/admin_tier/standard-egress-tcp-rules.yaml',
    clusterPolicies: [cnp('egress-tcp', 'Admin', 6, subjectNs('gryffindor'), { egress: ordered('Admin', 'egress', EGRESS_TCP) })],
    subtests: [
      one(
        "Should support an 'allow-egress' policy for named port",
        [poke('harry-potter-0', 'tcp', 'cedric-diggory-1', 80, true), poke('harry-potter-1', 'tcp', 'cedric-diggory-1', 8080, false)],
        setRule('egress-tcp', 'egress', 5, { protocols: [{ destinationNamedPort: 'web' }] }),
      ),
    ],
  },
  {
    // admin-network-policy-experimental-egress-rules.go (feature ClusterNetworkPolicyEgressNodePeers)
    shortName: 'CNPAdminTierEgressNodePeers',
    manifest: 'base/admin_tier/experimental-egress-selector-rules.yaml',
    clusterPolicies: [
      cnp('node-and-cidr-as-peers-example', 'Admin', 75, housePods('gryffindor'), {
        egress: [
          { name: `allow-egress-to-${HNP[0]}-on-nodes`, action: 'Accept', to: [nodesLinux], protocols: at(['tcp', HNP[0]]) },
          { name: `pass-egress-to-${HNP[2]}-on-nodes`, action: 'Pass', to: [nodesLinux], protocols: at(['udp', HNP[2]]) },
          { name: 'deny-egress-to-slytherin-and-nodes-and-internet', action: 'Deny', to: [housePods('slytherin'), nodesLinux, internet] },
        ],
      }),
    ],
    subtests: [
      one("Should support an 'allow-egress' rule policy for egress-node-peer", [poke('harry-potter-1', 'tcp', 'centaur-1', HNP[0], true)]),
      one("Should support a 'pass-egress' rule policy for egress-node-peer", [poke('harry-potter-1', 'udp', 'centaur-1', HNP[2], true)]),
      one("Should support a 'deny-egress' rule policy for egress-node-peer", [
        poke('harry-potter-1', 'tcp', 'centaur-1', HNP[1], false),
        poke('harry-potter-1', 'udp', 'centaur-1', HNP[4], false),
        poke('harry-potter-1', 'sctp', 'centaur-1', HNP[6], false),
      ]),
    ],
  },

  // ------------------------------------------------------------------------------------- Baseline tier
  {
    shortName: 'CNPBaselineTierIngressTCP',
    manifest: 'base/baseline_tier/standard-ingress-tcp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('gryffindor'), { ingress: ordered('Baseline', 'ingress', INGRESS_TCP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for TCP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true),
        poke('luna-lovegood-1', 'tcp', 'harry-potter-0', 8080, true),
      ]),
      one("Should support an 'allow-ingress' policy for TCP protocol at the specified port", [
        poke('cedric-diggory-0', 'tcp', 'harry-potter-1', 80, true),
        poke('cedric-diggory-1', 'tcp', 'harry-potter-1', 8080, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'tcp', 'harry-potter-1', 80, false), poke('luna-lovegood-1', 'tcp', 'harry-potter-1', 8080, false)],
        swap('default', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for TCP protocol at the specified port", [
        poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false),
        poke('draco-malfoy-1', 'tcp', 'harry-potter-0', 8080, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierIngressUDP',
    manifest: 'base/baseline_tier/standard-ingress-udp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('hufflepuff'), { ingress: ordered('Baseline', 'ingress', INGRESS_UDP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for UDP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'udp', 'cedric-diggory-0', 53, true),
        poke('luna-lovegood-1', 'udp', 'cedric-diggory-0', 5353, true),
      ]),
      one("Should support an 'allow-ingress' policy for UDP protocol at the specified port", [
        poke('harry-potter-0', 'udp', 'cedric-diggory-1', 53, true),
        poke('harry-potter-1', 'udp', 'cedric-diggory-1', 5353, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'udp', 'cedric-diggory-1', 53, false), poke('luna-lovegood-1', 'udp', 'cedric-diggory-1', 5353, false)],
        swap('default', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for UDP protocol at the specified port", [
        poke('draco-malfoy-0', 'udp', 'cedric-diggory-0', 5353, false),
        poke('draco-malfoy-1', 'udp', 'cedric-diggory-0', 53, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierIngressSCTP',
    manifest: 'base/baseline_tier/standard-ingress-sctp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('ravenclaw'), { ingress: ordered('Baseline', 'ingress', INGRESS_SCTP) })],
    subtests: [
      one("Should support an 'allow-ingress' policy for SCTP protocol; ensure rule ordering is respected", [
        poke('harry-potter-0', 'sctp', 'luna-lovegood-0', 9003, true),
        poke('harry-potter-1', 'sctp', 'luna-lovegood-0', 9005, true),
      ]),
      one("Should support an 'allow-ingress' policy for SCTP protocol at the specified port", [
        poke('cedric-diggory-0', 'sctp', 'luna-lovegood-1', 9003, true),
        poke('cedric-diggory-1', 'sctp', 'luna-lovegood-1', 9005, false),
      ]),
      one(
        "Should support an 'deny-ingress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'sctp', 'luna-lovegood-1', 9003, false), poke('harry-potter-1', 'sctp', 'luna-lovegood-1', 9005, false)],
        swap('default', 'ingress', 0, 1),
      ),
      one("Should support a 'deny-ingress' policy for SCTP protocol at the specified port", [
        poke('draco-malfoy-0', 'sctp', 'luna-lovegood-0', 9003, false),
        poke('draco-malfoy-1', 'sctp', 'luna-lovegood-0', 9005, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierEgressTCP',
    manifest: 'base/baseline_tier/standard-egress-tcp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('gryffindor'), { egress: ordered('Baseline', 'egress', EGRESS_TCP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for TCP protocol; ensure rule ordering is respected", [
        poke('harry-potter-0', 'tcp', 'luna-lovegood-0', 80, true),
        poke('harry-potter-1', 'tcp', 'luna-lovegood-0', 8080, true),
      ]),
      one("Should support an 'allow-egress' policy for TCP protocol at the specified port", [
        poke('harry-potter-0', 'tcp', 'cedric-diggory-1', 8080, true),
        poke('harry-potter-1', 'tcp', 'cedric-diggory-1', 80, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for TCP protocol; ensure rule ordering is respected",
        [poke('harry-potter-0', 'tcp', 'luna-lovegood-1', 80, false), poke('harry-potter-1', 'tcp', 'luna-lovegood-1', 8080, false)],
        swap('default', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for TCP protocol at the specified port", [
        poke('harry-potter-0', 'tcp', 'draco-malfoy-0', 80, false),
        poke('harry-potter-1', 'tcp', 'draco-malfoy-0', 8080, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierEgressUDP',
    manifest: 'base/baseline_tier/standard-egress-udp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('hufflepuff'), { egress: ordered('Baseline', 'egress', EGRESS_UDP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for UDP protocol; ensure rule ordering is respected", [
        poke('cedric-diggory-0', 'udp', 'luna-lovegood-0', 53, true),
        poke('cedric-diggory-1', 'udp', 'luna-lovegood-0', 5353, true),
      ]),
      one("Should support an 'allow-egress' policy for UDP protocol at the specified port", [
        poke('cedric-diggory-0', 'udp', 'harry-potter-1', 53, true),
        poke('cedric-diggory-1', 'udp', 'harry-potter-1', 5353, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for UDP protocol; ensure rule ordering is respected",
        [poke('cedric-diggory-0', 'udp', 'luna-lovegood-1', 53, false), poke('cedric-diggory-1', 'udp', 'luna-lovegood-1', 5353, false)],
        swap('default', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for UDP protocol at the specified port", [
        poke('cedric-diggory-0', 'udp', 'draco-malfoy-0', 5353, false),
        poke('cedric-diggory-1', 'udp', 'draco-malfoy-0', 53, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierEgressSCTP',
    manifest: 'base/baseline_tier/standard-egress-sctp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('ravenclaw'), { egress: ordered('Baseline', 'egress', EGRESS_SCTP) })],
    subtests: [
      one("Should support an 'allow-egress' policy for SCTP protocol; ensure rule ordering is respected", [
        poke('luna-lovegood-0', 'sctp', 'harry-potter-0', 9003, true),
        poke('luna-lovegood-1', 'sctp', 'harry-potter-0', 9005, true),
      ]),
      one("Should support an 'allow-egress' policy for SCTP protocol at the specified port", [
        poke('luna-lovegood-0', 'sctp', 'cedric-diggory-1', 9003, true),
        poke('luna-lovegood-1', 'sctp', 'cedric-diggory-1', 9005, false),
      ]),
      one(
        "Should support an 'deny-egress' policy for SCTP protocol; ensure rule ordering is respected",
        [poke('luna-lovegood-0', 'sctp', 'harry-potter-1', 9003, false), poke('luna-lovegood-1', 'sctp', 'harry-potter-1', 9005, false)],
        swap('default', 'egress', 0, 1),
      ),
      one("Should support a 'deny-egress' policy for SCTP protocol at the specified port", [
        poke('luna-lovegood-0', 'sctp', 'draco-malfoy-0', 9003, false),
        poke('luna-lovegood-1', 'sctp', 'draco-malfoy-0', 9005, true),
      ]),
    ],
  },
  {
    shortName: 'CNPBaselineTierGress',
    manifest: 'base/baseline_tier/standard-gress-rules-combined.yaml',
    clusterPolicies: [
      cnp('default', 'Baseline', 10, subjectNs('gryffindor'), {
        ingress: ordered('Baseline', 'ingress', GRESS_IN),
        egress: ordered('Baseline', 'egress', GRESS_OUT),
      }),
    ],
    subtests: gressSubtests('default', false),
  },
  {
    shortName: 'CNPBaselineTierEgressInlineCIDRPeers',
    manifest: 'base/baseline_tier/standard-egress-inline-cidr-rules.yaml',
    clusterPolicies: [
      cnp('default', 'Baseline', 10, subjectNs('gryffindor'), {
        egress: [
          { name: 'allow-egress-to-slytherin', action: 'Accept', to: [housePods('slytherin')] },
          { name: 'deny-egress-to-internet', action: 'Deny', to: [internet] },
        ],
      }),
    ],
    subtests: inlineCidrSubtests('default'),
  },
  {
    // baseline-admin-network-policy-experimental-ingress-rules.go (feature ClusterNetworkPolicyNamedPorts)
    shortName: 'CNPBaselineTierIngressNamedPort',
    manifest: 'base/baseline_tier/standard-ingress-tcp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('gryffindor'), { ingress: ordered('Baseline', 'ingress', INGRESS_TCP) })],
    subtests: [
      one(
        "Should support an 'allow-ingress' policy for named port",
        [poke('cedric-diggory-0', 'tcp', 'harry-potter-1', 80, true), poke('cedric-diggory-1', 'tcp', 'harry-potter-1', 8080, false)],
        setRule('default', 'ingress', 3, { protocols: [{ destinationNamedPort: 'web' }] }),
      ),
    ],
  },
  {
    // baseline-admin-network-policy-experimental-egress-rules.go (feature ClusterNetworkPolicyNamedPorts)
    shortName: 'CNPBaselineTierEgressNamedPort',
    manifest: 'base/baseline_tier/standard-egress-udp-rules.yaml',
    clusterPolicies: [cnp('default', 'Baseline', 10, subjectNs('hufflepuff'), { egress: ordered('Baseline', 'egress', EGRESS_UDP) })],
    subtests: [
      one(
        "Should support an 'allow-egress' policy for named port",
        [poke('cedric-diggory-0', 'udp', 'harry-potter-1', 53, true), poke('cedric-diggory-1', 'udp', 'harry-potter-1', 5353, false)],
        setRule('default', 'egress', 3, { protocols: [{ destinationNamedPort: 'dns' }] }),
      ),
    ],
  },
  {
    // baseline-admin-network-policy-experimental-egress-rules.go (feature ClusterNetworkPolicyEgressNodePeers)
    shortName: 'CNPBaselineTierEgressNodePeers',
    manifest: 'base/baseline_tier/experimental-egress-selector-rules.yaml',
    clusterPolicies: [
      cnp('default', 'Baseline', 10, subjectNs('gryffindor'), {
        egress: [
          {
            name: `allow-egress-to-${HNP[0]}-on-nodes`,
            action: 'Accept',
            to: [nodesLinux],
            protocols: [{ tcp: { destinationPort: { range: { start: HNP[0], end: HNP[1] } } } }],
          },
          { name: 'deny-egress-to-nodes-and-internet', action: 'Deny', to: [nodesLinux, internet] },
        ],
      }),
    ],
    subtests: [
      one("Should support an 'allow-egress' rule policy for egress-node-peer", [
        poke('harry-potter-0', 'tcp', 'centaur-1', HNP[0], true),
        poke('harry-potter-1', 'tcp', 'centaur-1', HNP[1], true),
      ]),
      one("Should support a 'deny-egress' rule policy for egress-node-peer", [
        poke('harry-potter-1', 'udp', 'centaur-1', HNP[4], false),
        poke('harry-potter-1', 'sctp', 'centaur-1', HNP[6], false),
      ]),
    ],
  },
];
