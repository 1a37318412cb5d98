// NetworkPolicy semantics, one per case, asserted on the compiled structure: which policy chains a pod's
// workload chain runs, whether it is isolated, and what each allow rule admits (set members, not set names).

import { compile } from '../../../src/compile/index.js';
import type { NetworkPolicy, Pod, Problem } from '../../../src/model/index.js';
import {
  blockPeer,
  egress,
  expr,
  hostNetwork,
  ingress,
  ips,
  labels,
  makePod,
  makePolicy,
  nsPeer,
  nsPodPeer,
  onNode,
  phase,
  podPeer,
  rule,
  sctp,
  sel,
  selectPods,
  settings,
  tcp,
  types,
  udp,
} from '../../helpers/builders.js';
import { viewPod, type AllowView, type DirectionView } from './compiled-view.js';
import { cluster, IP } from './fixtures.js';

interface Case {
  readonly name: string;
  readonly policies: readonly NetworkPolicy[];
  readonly extraPods?: readonly Pod[];
  /** Per pod key, the expected view of each direction given (undefined: the pod has no workload chain). */
  readonly expect: Readonly<Record<string, { ingress?: DirectionView | undefined; egress?: DirectionView | undefined }>>;
  readonly problems?: readonly Partial<Problem>[];
}

const P = 'prod/p';
const db = selectPods(sel({ app: 'db' }));
const iso = (allows: AllowView[], policies: string[] = [P]): DirectionView => ({ policies, allows });
const any: AllowView = { peer: 'any' };
const prodAll = [IP.db, IP.web, IP.bare, IP.api];

const policyTypesCases: Case[] = [
  { name: 'no policy: both directions open', policies: [], expect: { 'prod/db': { ingress: 'open', egress: 'open' } } },
  {
    name: 'policyTypes absent with only ingress rules → Ingress only',
    policies: [makePolicy('prod', 'p', db, ingress(rule()))],
    expect: { 'prod/db': { ingress: iso([any]), egress: 'open' }, 'prod/web': { ingress: 'open', egress: 'open' } },
  },
  {
    name: 'policyTypes absent and no rules at all → isolated for ingress, nothing allowed',
    policies: [makePolicy('prod', 'p', db)],
    expect: { 'prod/db': { ingress: iso([]), egress: 'open' } },
  },
  {
    name: 'policyTypes absent with non-empty egress → Ingress and Egress',
    policies: [makePolicy('prod', 'p', db, egress(rule(undefined, [udp(53)])))],
    expect: { 'prod/db': { ingress: iso([]), egress: iso([{ peer: 'any', proto: 'udp', ports: '53' }]) } },
  },
  {
    name: 'explicit empty policyTypes is treated as absent',
    policies: [makePolicy('prod', 'p', db, types(), ingress(rule(undefined, [tcp(5432)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '5432' }]), egress: 'open' } },
  },
  {
    name: 'explicit Egress only leaves ingress open (even with ingress rules written)',
    policies: [makePolicy('prod', 'p', db, types('Egress'), ingress(rule()))],
    expect: { 'prod/db': { ingress: 'open', egress: iso([]) } },
  },
  {
    name: 'explicit Ingress only ignores egress rules',
    policies: [makePolicy('prod', 'p', db, types('Ingress'), egress(rule()))],
    expect: { 'prod/db': { ingress: iso([]), egress: 'open' } },
  },
  {
    name: 'podSelector {} selects every local pod of the namespace, none elsewhere',
    policies: [makePolicy('prod', 'p', ingress(rule()))],
    expect: {
      'prod/db': { ingress: iso([any]) },
      'prod/bare': { ingress: iso([any]) },
      'dev/web': { ingress: 'open' },
    },
  },
];

const peerCases: Case[] = [
  {
    name: 'podSelector-only peer = pods of the policy namespace',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web] }]) } },
  },
  {
    name: 'namespaceSelector-only peer = all pods in matching namespaces',
    policies: [makePolicy('prod', 'p', db, ingress(rule([nsPeer(sel({ team: 'b' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.devWeb, IP.devTool] }]) } },
  },
  {
    name: 'namespaceSelector AND podSelector in one peer',
    policies: [makePolicy('prod', 'p', db, ingress(rule([nsPodPeer(sel({ team: 'b' }), sel({ app: 'web' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.devWeb] }]) } },
  },
  {
    name: 'two peers in one rule are ORed',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' })), nsPeer(sel({ team: 'ops' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web] }, { peer: [IP.prom] }]) } },
  },
  {
    name: 'podSelector {} peer = every pod of the policy namespace',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel())])))],
    expect: { 'prod/db': { ingress: iso([{ peer: prodAll }]) } },
  },
  {
    name: 'namespaceSelector {} peer = every pod of every namespace',
    policies: [makePolicy('prod', 'p', db, ingress(rule([nsPeer(sel())])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.db, IP.web, IP.bare, IP.devWeb, IP.api, IP.devTool, IP.prom] }]) } },
  },
  {
    name: 'namespaceSelector {} with podSelector = matching pods in every namespace',
    policies: [makePolicy('prod', 'p', db, ingress(rule([nsPodPeer(sel(), sel({ app: 'web' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web, IP.devWeb] }]) } },
  },
  {
    name: 'matchExpressions In',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({}, [expr('app', 'In', 'web', 'api')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web, IP.api] }]) } },
  },
  {
    name: 'matchExpressions NotIn also matches pods without the key',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({}, [expr('app', 'NotIn', 'web')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.db, IP.bare, IP.api] }]) } },
  },
  {
    name: 'matchExpressions Exists',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({}, [expr('tier', 'Exists')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.db, IP.web] }]) } },
  },
  {
    name: 'matchExpressions DoesNotExist',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({}, [expr('tier', 'DoesNotExist')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.bare, IP.api] }]) } },
  },
  {
    name: 'matchLabels AND matchExpressions',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ tier: 'front' }, [expr('app', 'In', 'web', 'db')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web] }]) } },
  },
  {
    name: 'namespaceSelector matchExpressions on namespace labels (NotIn)',
    policies: [makePolicy('prod', 'p', db, ingress(rule([nsPeer(sel({}, [expr('team', 'NotIn', 'a', 'b')]))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.prom] }]) } },
  },
  {
    name: 'peer selector that matches nothing gives an empty set (allows nothing, still isolated)',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'nope' }))])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [] }]) } },
  },
  {
    name: 'egress peers are destinations',
    policies: [makePolicy('prod', 'p', db, types('Egress'), egress(rule([podPeer(sel({ app: 'api' }))], [tcp(443)])))],
    expect: { 'prod/db': { ingress: 'open', egress: iso([{ peer: [IP.api], proto: 'tcp', ports: '443' }]) } },
  },
];

const ipBlockCases: Case[] = [
  {
    // "IPBlock describes a particular CIDR ... with the except entries excluded": in the cidr, not in an except.
    name: 'ipBlock with except: the cidr, and the except as a set matched as "not in"',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('10.0.0.0/8', '10.244.0.0/16')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: ['10.0.0.0/8'], except: ['10.244.0.0/16'] }]) } },
  },
  {
    // Peers are OR-ed: one block's excepts must not exclude what another block of the rule allows.
    name: 'two ipBlocks with different excepts are two alternatives; one without excepts keeps the shared set',
    policies: [
      makePolicy(
        'prod',
        'p',
        db,
        ingress(
          rule([
            blockPeer('10.0.0.0/8', '10.1.0.0/16'),
            blockPeer('10.1.0.0/16', '10.1.2.0/24'),
            blockPeer('192.168.1.0/24'),
            blockPeer('10.0.0.0/12', '10.1.0.0/16'),
          ]),
        ),
      ),
    ],
    expect: {
      'prod/db': {
        ingress: iso([
          { peer: ['192.168.1.0/24'] },
          // Blocks with the same excepts share one alternative (by the excepts, in address order).
          { peer: ['10.0.0.0/8', '10.0.0.0/12'], except: ['10.1.0.0/16'] },
          { peer: ['10.1.0.0/16'], except: ['10.1.2.0/24'] },
        ]),
      },
    },
  },
  {
    name: 'an except equal to the cidr leaves nothing of the block',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('10.1.0.0/16', '10.1.0.0/16')])))],
    expect: { 'prod/db': { ingress: iso([]) } },
  },
  {
    name: 'ipBlock holding pod IPs does not exclude them',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('10.244.1.0/24')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: ['10.244.1.0/24'] }]) } },
  },
  {
    name: 'non-canonical CIDR is masked, with a warning',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('10.1.2.3/16')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: ['10.1.0.0/16'] }]) } },
    problems: [{ object: 'NetworkPolicy prod/p', field: 'spec.ingress[0].from[0].ipBlock.cidr', severity: 'warning' }],
  },
  {
    name: 'ipBlock /0 means any address (no set)',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('0.0.0.0/0')], [tcp(80)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '80' }]) } },
  },
  {
    // hash:net cannot hold a /0: only "not in the excepts" is matched.
    name: 'ipBlock /0 with except matches "not in the except" alone',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('0.0.0.0/0', '128.0.0.0/1')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', except: ['128.0.0.0/1'] }]) } },
  },
  {
    name: 'ipBlock /32 prints bare',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('192.168.1.1/32')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: ['192.168.1.1'] }]) } },
  },
  {
    name: 'ipBlock of the other family matches nothing in this one',
    policies: [makePolicy('prod', 'p', db, ingress(rule([blockPeer('fd00::/8')])))],
    expect: { 'prod/db': { ingress: iso([]) } },
  },
  {
    name: 'every ipBlock of a rule shares one set; selector peers keep their own',
    policies: [
      makePolicy('prod', 'p', db, ingress(rule([blockPeer('192.168.1.0/24'), podPeer(sel({ app: 'web' })), blockPeer('172.16.0.0/12')]))),
    ],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web] }, { peer: ['172.16.0.0/12', '192.168.1.0/24'] }]) } },
  },
];

const portCases: Case[] = [
  {
    name: 'numeric port, protocol defaults to what the port says',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [tcp(5432)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '5432' }]) } },
  },
  {
    name: 'TCP, UDP and SCTP each get their own rule',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [sctp(9), udp(53), tcp(80)])))],
    expect: {
      'prod/db': {
        ingress: iso([
          { peer: 'any', proto: 'tcp', ports: '80' },
          { peer: 'any', proto: 'udp', ports: '53' },
          { peer: 'any', proto: 'sctp', ports: '9' },
        ]),
      },
    },
  },
  {
    name: 'protocol without a port = every port of that protocol',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [udp(), udp(53)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'udp' }]) } },
  },
  {
    name: 'endPort is an inclusive multiport range',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [tcp(8000, 8100)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '8000:8100' }]) } },
  },
  {
    name: 'overlapping and adjacent ranges merge',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [tcp(85, 100), tcp(80, 90), tcp(101), tcp(7)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '7,80:101' }]) } },
  },
  {
    name: 'more than 15 multiport slots are chunked (a range costs two)',
    policies: [
      makePolicy('prod', 'p', db, ingress(rule(undefined, [tcp(1000, 1001), ...Array.from({ length: 14 }, (_, i) => tcp(2000 + 2 * i))]))),
    ],
    expect: {
      'prod/db': {
        ingress: iso([
          { peer: 'any', proto: 'tcp', ports: ['1000:1001', ...Array.from({ length: 13 }, (_, i) => `${2000 + 2 * i}`)].join(',') },
          { peer: 'any', proto: 'tcp', ports: '2026' },
        ]),
      },
    },
  },
  {
    name: 'named port on ingress resolves against the selected local pods; a pod without the name adds nothing',
    policies: [makePolicy('prod', 'p', selectPods(sel({}, [expr('tier', 'Exists')])), ingress(rule(undefined, [tcp('http')])))],
    expect: {
      'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', namedPorts: [`${IP.web},tcp:8080`] }]) },
      'prod/web': { ingress: iso([{ peer: 'any', proto: 'tcp', namedPorts: [`${IP.web},tcp:8080`] }]) },
    },
  },
  {
    name: 'named port protocol must match the container port protocol',
    policies: [makePolicy('prod', 'p', db, ingress(rule(undefined, [udp('pg')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'udp', namedPorts: [] }]) } },
  },
  {
    name: 'named port on ingress with a peer keeps the peer',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' }))], [tcp('pg')])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web], proto: 'tcp', namedPorts: [`${IP.db},tcp:5432`] }]) } },
  },
  {
    name: 'named port on egress resolves against the peer pods (each its own number)',
    policies: [
      makePolicy(
        'prod',
        'p',
        db,
        types('Egress'),
        egress(rule([nsPodPeer(sel(), sel({ app: 'web' })), podPeer(sel({ app: 'api' }))], [tcp('http')])),
      ),
    ],
    expect: {
      'prod/db': {
        egress: iso([
          { peer: 'any', proto: 'tcp', namedPorts: [`${IP.web},tcp:8080`, `${IP.devWeb},tcp:9090`] },
          { peer: 'any', proto: 'tcp', namedPorts: [`${IP.api},tcp:8081`] },
        ]),
      },
    },
  },
  {
    name: 'named port on egress to any peer covers every pod that names it',
    policies: [makePolicy('prod', 'p', db, types('Egress'), egress(rule(undefined, [tcp('http'), udp('dns')])))],
    expect: {
      'prod/db': {
        egress: iso([
          { peer: 'any', proto: 'tcp', namedPorts: [`${IP.web},tcp:8080`, `${IP.devWeb},tcp:9090`, `${IP.api},tcp:8081`] },
          { peer: 'any', proto: 'udp', namedPorts: [`${IP.api},udp:5353`] },
        ]),
      },
    },
  },
  {
    name: 'named port on egress to an ipBlock covers the pods inside it',
    policies: [makePolicy('prod', 'p', db, types('Egress'), egress(rule([blockPeer('10.244.2.0/24')], [tcp('http')])))],
    expect: { 'prod/db': { egress: iso([{ peer: 'any', proto: 'tcp', namedPorts: [`${IP.api},tcp:8081`] }]) } },
  },
  {
    name: 'named port on egress to an ipBlock leaves out the pods in its excepts',
    policies: [makePolicy('prod', 'p', db, types('Egress'), egress(rule([blockPeer('10.244.0.0/16', '10.244.2.0/24')], [tcp('http')])))],
    expect: {
      'prod/db': { egress: iso([{ peer: 'any', proto: 'tcp', namedPorts: [`${IP.web},tcp:8080`, `${IP.devWeb},tcp:9090`] }]) },
    },
  },
  {
    name: 'empty rule {} allows everything',
    policies: [makePolicy('prod', 'p', db, ingress(rule()))],
    expect: { 'prod/db': { ingress: iso([any]) } },
  },
  {
    name: 'empty peer list with ports = ports from anywhere',
    policies: [makePolicy('prod', 'p', db, ingress(rule([], [tcp(80)])))],
    expect: { 'prod/db': { ingress: iso([{ peer: 'any', proto: 'tcp', ports: '80' }]) } },
  },
  {
    name: 'empty port list with peers = every port and protocol from the peers',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' }))], [])))],
    expect: { 'prod/db': { ingress: iso([{ peer: [IP.web] }]) } },
  },
  {
    name: 'peers × ports: every peer with every port',
    policies: [makePolicy('prod', 'p', db, ingress(rule([podPeer(sel({ app: 'web' })), blockPeer('192.168.0.0/16')], [tcp(80), udp(53)])))],
    expect: {
      'prod/db': {
        ingress: iso([
          { peer: [IP.web], proto: 'tcp', ports: '80' },
          { peer: [IP.web], proto: 'udp', ports: '53' },
          { peer: ['192.168.0.0/16'], proto: 'tcp', ports: '80' },
          { peer: ['192.168.0.0/16'], proto: 'udp', ports: '53' },
        ]),
      },
    },
  },
];

const podCases: Case[] = [
  {
    name: 'several policies on one pod: the workload chain runs each (union)',
    policies: [
      makePolicy('prod', 'b', db, ingress(rule(undefined, [tcp(2)]))),
      makePolicy('prod', 'a', selectPods(sel({ tier: 'data' })), ingress(rule(undefined, [tcp(1)]))),
    ],
    expect: {
      'prod/db': {
        ingress: iso(
          [
            { peer: 'any', proto: 'tcp', ports: '1' },
            { peer: 'any', proto: 'tcp', ports: '2' },
          ],
          ['prod/a', 'prod/b'],
        ),
      },
    },
  },
  {
    name: 'hostNetwork, Succeeded, Failed and IP-less pods are neither peers nor targets',
    policies: [makePolicy('prod', 'p', ingress(rule([podPeer(sel({ app: 'web' }))])))],
    extraPods: [
      makePod('prod', 'hostnet', '192.168.0.1', labels({ app: 'web' }), hostNetwork),
      makePod('prod', 'done', '10.244.1.50', labels({ app: 'web' }), phase('Succeeded')),
      makePod('prod', 'failed', '10.244.1.51', labels({ app: 'web' }), phase('Failed')),
      makePod('prod', 'pending', '10.244.1.52', labels({ app: 'web' }), ips()),
      makePod('prod', 'starting', '10.244.1.53', labels({ app: 'web' }), phase('Pending')),
    ],
    expect: {
      'prod/db': { ingress: iso([{ peer: [IP.web, '10.244.1.53'] }]) },
      'prod/hostnet': { ingress: undefined, egress: undefined },
      'prod/done': { ingress: undefined },
      'prod/failed': { ingress: undefined },
      'prod/pending': { ingress: undefined },
      'prod/starting': { ingress: iso([{ peer: [IP.web, '10.244.1.53'] }]) },
    },
  },
  {
    name: 'pods on other nodes get no workload chains but are peers',
    policies: [makePolicy('prod', 'p', ingress(rule([podPeer(sel({ app: 'api' }))])))],
    expect: { 'prod/api': { ingress: undefined, egress: undefined }, 'prod/web': { ingress: iso([{ peer: [IP.api] }]) } },
  },
  {
    name: 'a pod scheduled on no node is a peer but not a target',
    policies: [makePolicy('prod', 'p', ingress(rule([podPeer(sel({ app: 'x' }))])))],
    extraPods: [makePod('prod', 'floating', '10.244.9.9', labels({ app: 'x' }), onNode(''))],
    expect: { 'prod/floating': { ingress: undefined }, 'prod/db': { ingress: iso([{ peer: ['10.244.9.9'] }]) } },
  },
  {
    name: 'a pod on node-2 selected by a policy does not make the policy appear here',
    policies: [makePolicy('prod', 'p', selectPods(sel({ app: 'api' })), ingress(rule()))],
    expect: { 'prod/api': { ingress: undefined }, 'prod/db': { ingress: 'open' } },
  },
];

describe.each([
  ['policyTypes', policyTypesCases],
  ['peers and selectors', peerCases],
  ['ipBlock', ipBlockCases],
  ['ports', portCases],
  ['pods', podCases],
] as const)('compile: %s', (_group, cases) => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const { desired, problems } = compile(cluster(c.policies, c.extraPods), settings());
    for (const [pod, dirs] of Object.entries(c.expect)) {
      for (const dir of ['ingress', 'egress'] as const) {
        if (dir in dirs) expect({ pod, dir, view: viewPod(desired.v4, pod, dir) }).toEqual({ pod, dir, view: dirs[dir] });
      }
    }
    expect(problems).toEqual((c.problems ?? []).map((p) => expect.objectContaining(p)));
  });
});
