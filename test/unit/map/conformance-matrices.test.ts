// The map agrees with packets: every expected matrix of the upstream conformance cases (the same matrices
// the kernel suites prove with real packets between namespaces, each also held against the spec oracle)
// is compared cell by cell with the map of the same cluster, IPv4 and IPv6. The map comes from compiling
// each node and tracing representative packets; the matrices come from the spec.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { cellOf } from '../../../sandbox/index.js';
import { buildMap, groupOfPod, mapAllows } from '../../../src/map/index.js';
import { defaultNodeSettings, type ClusterSnapshot } from '../../../src/model/index.js';
import { ConformanceCluster } from '../../helpers/conformance/cluster.js';
import { upstreamCases } from '../../helpers/conformance/upstream-cases.js';
import { NODES, nodePodCidr, type Family } from '../../helpers/conformance/model.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The cases' cluster driver without a sandbox: their changes edit the manifests only. */
function paperCluster(family: Family): ConformanceCluster {
  const dir = mkdtempSync(join(tmpdir(), 'nft-map-conformance-'));
  dirs.push(dir);
  const sandbox = { addPod: () => Promise.resolve(), removePod: () => Promise.resolve() };
  return Reflect.construct(ConformanceCluster, [sandbox, dir, undefined, family]) as ConformanceCluster;
}

const cidrsOf = (node: string, family: Family): string[] =>
  family === 6 ? [nodePodCidr(node, 4), nodePodCidr(node, 6)] : [nodePodCidr(node, 4)];

function withNodes(snapshot: ClusterSnapshot, family: Family): ClusterSnapshot {
  return { ...snapshot, nodes: NODES.map((n) => ({ name: n.name, podCidrs: cidrsOf(n.name, family), addresses: [] })) };
}

describe.each([4, 6] as const)('the map of each upstream conformance step, IPv%s', (family) => {
  it.each(upstreamCases(family).map((c) => [c.name, c] as const))('%s', async (_name, kase) => {
    const cluster = paperCluster(family);
    const wrong: string[] = [];
    for (const [i, step] of kase.steps.entries()) {
      await step.change(cluster);
      const snapshot = withNodes(cluster.snapshot(), family);
      const { map } = buildMap(snapshot, (node) => defaultNodeSettings(node, cidrsOf(node, family)), { family });
      for (const check of step.checks) {
        const proto = check.protocol.toLowerCase() as 'tcp' | 'udp' | 'sctp';
        for (const from of check.expect.froms)
          for (const to of check.expect.tos) {
            if (from === to) continue;
            const expected = cellOf(check.expect, from, to);
            const src = groupOfPod(map, from);
            const dst = groupOfPod(map, to);
            if (!src || !dst) {
              wrong.push(`step ${i + 1}: ${from} or ${to} is in no group`);
              continue;
            }
            // Two pods of one group: the group's edge to itself.
            const allowed = mapAllows(map, src.id, dst.id, proto, check.port);
            if (allowed !== expected)
              wrong.push(
                `step ${i + 1} (${step.title}) ${check.protocol}/${check.port} ${from} -> ${to}: expected ${expected ? 'reachable' : 'blocked'}, the map says ${allowed ? 'reachable' : 'blocked'} (${src.id} -> ${dst.id})`,
              );
          }
      }
    }
    expect(wrong).toEqual([]);
  });
});
