// The map lists its connections from a pass over every pair of groups that asks each side's verdict once
// and makes an edge's ports and reasons once per pair of verdicts (shared by every edge with that pair).
// Whatever it skips or shares, the edges must be those of the pairs judged one by one, in the same order.

import { describe, expect, it } from '@jest/globals';
import { edgeOf, type MapModel } from '../../../src/map/build.js';
import { buildMap } from '../../../src/map/index.js';
import { defaultNodeSettings } from '../../../src/model/index.js';
import { generateCluster } from '../../../scripts/bench-lib/generator.js';
import { mapSettingsFor, tenNamespaces } from '../../helpers/map-cluster.js';

/** Every pair of groups judged on its own, sender by sender in the groups' order. */
function pairByPair(model: MapModel): unknown[] {
  const edges: unknown[] = [];
  for (const src of model.groups)
    for (const dst of model.groups) {
      const edge = edgeOf(model.judge, src, dst);
      if (edge) edges.push(edge);
    }
  return edges;
}

describe('the map’s edges', () => {
  it('are the pairs judged one by one (ten namespaces)', () => {
    const model = buildMap(tenNamespaces(), mapSettingsFor);
    expect(model.map.edges.length).toBeGreaterThan(10);
    expect(model.map.edges).toEqual(pairByPair(model));
  });

  it('are the pairs judged one by one (a generated cluster of 1,000 pods and 100 policies)', () => {
    const { snapshot } = generateCluster({ tier: 'medium', seed: 3, node: 'node-1' });
    const cidrs = new Map(snapshot.nodes.map((n) => [n.name, n.podCidrs]));
    const model = buildMap(snapshot, (node) => defaultNodeSettings(node, cidrs.get(node) ?? []));
    expect(model.map.edges.length).toBeGreaterThan(500);
    expect(model.map.edges).toEqual(pairByPair(model));
  });
});
