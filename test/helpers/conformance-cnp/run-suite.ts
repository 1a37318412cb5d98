// The ported ClusterNetworkPolicy conformance suite as a runner, shared by the IPv4 and IPv6 test files
// (test/kernel/conformance/cnp-upstream*.test.ts, whose header says what is run and how).

import { describeKernel } from '../netns.js';
import { HouseDaemons } from './house-daemons.js';
import { HOUSE_PODS, HOUSES, HouseCluster, NODES, ns, pod, type HouseFamily } from './houses.js';
import { UPSTREAM_TESTS, poke, type Poke, type Step } from './upstream-suite.js';
import { Oracle } from '../oracle.js';
import { defaultNodeSettings, type Protocol } from '../../../src/model/index.js';
import { whyDisagreements } from '../why-cross-check.js';

/**
 * Pod → the centaur on its own node goes through the node's INPUT chain, which CNP's host side polices on
 * both families (IPv6 after letting the pod's ND/MLD to the node through). Kept as a switch: when false,
 * those cells are listed as it.skip, by name, and only their cross-node twins (FORWARD) are asserted.
 */
const LOCAL_NODE_PEERS_ENFORCED = true;

interface Cell {
  readonly from: string;
  readonly to: string;
  readonly protocol: Protocol;
  readonly port: number;
  readonly connect: boolean;
  /** What the cell is: upstream's poke, or its twin from the client's other replica. */
  readonly origin: string;
}

const centaurNode = (server: string): string | undefined => {
  const m = /^centaur-(\d)$/.exec(server);
  return m ? NODES[Number(m[1])]!.name : undefined;
};
const nodeOfPod = (name: string): string => HOUSE_PODS.find((p) => p.name === name)!.node;
const endpoint = (server: string): string => {
  const node = centaurNode(server);
  return node ? `node:${node}` : pod(server);
};
const otherReplica = (name: string): string => name.replace(/-(\d)$/, (_, i: string) => `-${1 - Number(i)}`);
const describePoke = (p: Poke) => `${p.client} → ${p.server} ${p.protocol}/${p.port} ${p.connect ? 'connects' : 'times out'}`;

/** Upstream's poke, then the same from the client's other replica (the other node). */
function cellsOf(pokes: readonly Poke[]): Cell[] {
  return pokes.flatMap((p) =>
    [p, { ...p, client: otherReplica(p.client) }].map((q, twin) => ({
      from: pod(q.client),
      to: endpoint(q.server),
      protocol: q.protocol.toUpperCase() as Protocol,
      port: q.port,
      connect: q.connect,
      origin: twin === 0 ? describePoke(p) : `twin of ${describePoke(p)}`,
    })),
  );
}

/** A pod poking the centaur on its own node (INPUT, not FORWARD). */
const isLocalNodePeer = (c: Cell): boolean => c.to === `node:${nodeOfPod(c.from.split('/')[1]!)}`;

/** The whole ported suite on one family's addresses (houses.ts: family 6 lists IPv6 first everywhere). */
export function describeCnpConformance(family: HouseFamily): void {
  describeKernel(`ClusterNetworkPolicy conformance (network-policy-api, ported), IPv${family}`, () => {
    let cluster: HouseCluster | undefined;
    let daemons: HouseDaemons | undefined;
    const c = (): HouseCluster => cluster!;

    beforeAll(async () => {
      cluster = await HouseCluster.create(family);
      daemons = await HouseDaemons.start(cluster);
    }, 120_000);
    afterAll(async () => {
      try {
        await daemons?.stop();
      } finally {
        await cluster?.destroy();
      }
    }, 120_000);

    /** Makes each step's change in the API server, then probes the step's cells, all in parallel. */
    async function runSteps(steps: readonly Step[]): Promise<void> {
      const failures: string[] = [];
      for (const [i, step] of steps.entries()) {
        step.change?.(c());
        const written = Date.now();
        // The change must be in force within upstream's 10 s poke window; only then are the pokes judged.
        const stale = await daemons!.publishAndWait(written + 10_000);
        if (stale) {
          failures.push(`step ${i + 1}: the daemons had not programmed the change 10 s after it was written:\n${stale}`);
          break;
        }
        const snap = c().snapshot();
        const oracle = new Oracle(snap);
        const ipOf = (key: string) =>
          key.startsWith('node:')
            ? snap.nodes.find((n) => n.name === key.slice('node:'.length))!.addresses[0]!
            : snap.pods.find((p) => `${p.namespace}/${p.name}` === key)!.ips[0]!;
        const cells = cellsOf(step.pokes).filter((cell) => LOCAL_NODE_PEERS_ENFORCED || !isLocalNodePeer(cell));
        const groups = new Map<string, Cell[]>();
        for (const cell of cells) {
          if (
            oracle.allows({ src: ipOf(cell.from), dst: ipOf(cell.to), proto: cell.protocol.toLowerCase() as 'tcp', port: cell.port }) !==
            cell.connect
          ) {
            failures.push(`step ${i + 1}: the spec oracle disagrees with ${cell.origin}`);
          }
          const key = `${cell.protocol}/${cell.port}`;
          groups.set(key, [...(groups.get(key) ?? []), cell]);
        }
        const reports = await Promise.all(
          [...groups.values()].map((group) =>
            c().expect(
              group[0]!.protocol,
              group[0]!.port,
              group.map((cell) => [cell.from, cell.to, cell.connect] as const),
            ),
          ),
        );
        for (const report of reports) if (report) failures.push(`step ${i + 1}:\n${report}`);
        // `netfence why` must give each cell the answer its probe just confirmed (a probe that did not is reported above).
        const why = await whyDisagreements(
          snap,
          cells.map((cell) => ({ from: cell.from, to: cell.to, protocol: cell.protocol, port: cell.port, reachable: cell.connect })),
          {
            family,
            nodes: c()
              .sandbox.nodes()
              .map((n) => ({ name: n.name, netns: n.netns })),
            settingsFor: (node) => defaultNodeSettings(node, snap.nodes.find((n) => n.name === node)?.podCidrs ?? []),
          },
        );
        if (why.length > 0) failures.push(`step ${i + 1}: netfence why disagrees:\n${why.join('\n')}`);
      }
      if (failures.length > 0) throw new Error(`${failures.join('\n')}\n\ndaemon logs:\n${daemons!.logs()}`);
    }

    for (const test of UPSTREAM_TESTS) {
      describe(`${test.shortName} (${test.manifest})`, () => {
        // MustApplyWithCleanup: this test's manifests on the base namespaces, nothing left of the previous test.
        beforeAll(() => {
          for (const house of HOUSES) c().setNamespaceLabels(ns(house), { 'conformance-house': house });
          c().setClusterPolicies(test.clusterPolicies);
          c().setPolicies(test.policies ?? []);
        });

        for (const subtest of test.subtests) {
          it(subtest.title, () => runSteps(subtest.steps));
          const local = subtest.steps.flatMap((s) => cellsOf(s.pokes)).filter(isLocalNodePeer);
          if (local.length > 0 && !LOCAL_NODE_PEERS_ENFORCED) {
            it.skip(`${subtest.title} — pod to the centaur on its own node (${local.map((l) => l.origin).join('; ')}): egress to the local node goes through INPUT, which this run does not assert (LOCAL_NODE_PEERS_ENFORCED); the cross-node twins are asserted above`, () =>
              undefined);
          }
        }
      });
    }

    // Not upstream: the tiers around a NetworkPolicy when a relabel brings a namespace *into* the selectors.
    describe('beyond upstream: Admin Pass → NetworkPolicy → Baseline, a NetworkPolicy deleted, a namespace relabelled in', () => {
      const house = (h: string) => ({ matchLabels: { 'conformance-house': h } });
      beforeAll(() => {
        for (const h of HOUSES) c().setNamespaceLabels(ns(h), { 'conformance-house': h });
        c().setClusterPolicies([
          {
            apiVersion: 'policy.networking.k8s.io/v1alpha2',
            kind: 'ClusterNetworkPolicy',
            metadata: { name: 'admin-pass-slytherin' },
            spec: {
              tier: 'Admin',
              priority: 5,
              subject: { namespaces: house('gryffindor') },
              ingress: [{ name: 'pass-slytherin', action: 'Pass', from: [{ namespaces: house('slytherin') }] }],
            },
          },
          {
            apiVersion: 'policy.networking.k8s.io/v1alpha2',
            kind: 'ClusterNetworkPolicy',
            metadata: { name: 'baseline-deny-slytherin' },
            spec: {
              tier: 'Baseline',
              priority: 5,
              subject: { namespaces: house('gryffindor') },
              ingress: [{ name: 'deny-slytherin', action: 'Deny', from: [{ namespaces: house('slytherin') }] }],
            },
          },
        ]);
        c().setPolicies([
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'NetworkPolicy',
            metadata: { namespace: ns('gryffindor'), name: 'allow-slytherin-web' },
            spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: house('slytherin') }], ports: [{ port: 80 }] }] },
          },
        ]);
      });

      it('passed to the NetworkPolicy, which allows slytherin on 80 and, isolating, nothing else; Baseline is never reached', () =>
        runSteps([
          {
            pokes: [
              poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, true),
              poke('draco-malfoy-0', 'tcp', 'harry-potter-1', 8080, false),
              poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 8080, false),
            ],
          },
        ]));
      it('the NetworkPolicy deleted: Baseline denies slytherin, the rest is back to default allow', () =>
        runSteps([
          {
            change: (cl) => cl.setPolicies([]),
            pokes: [poke('draco-malfoy-0', 'tcp', 'harry-potter-0', 80, false), poke('luna-lovegood-0', 'tcp', 'harry-potter-0', 80, true)],
          },
        ]));
      it('ravenclaw relabelled conformance-house=slytherin: the selectors take it in', () =>
        runSteps([
          {
            change: (cl) => cl.setNamespaceLabels(ns('ravenclaw'), { 'conformance-house': 'slytherin' }),
            pokes: [
              poke('luna-lovegood-0', 'udp', 'harry-potter-0', 53, false),
              poke('cedric-diggory-0', 'udp', 'harry-potter-0', 53, true),
            ],
          },
        ]));
    });
  });
}
