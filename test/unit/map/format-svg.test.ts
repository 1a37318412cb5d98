// The drawing's connections carry the namespaces of their two groups (the page hides a connection when
// either namespace is unticked); the outside world's blocks are in "outside the cluster".

import { describe, expect, it } from '@jest/globals';
import { buildMap, formatSvg } from '../../../src/map/index.js';
import { mapSettingsFor, tenNamespaces } from '../../helpers/map-cluster.js';

describe('formatSvg', () => {
  it('marks each connection with the namespaces of the groups it joins', () => {
    const map = buildMap(tenNamespaces(), mapSettingsFor).map;
    const ns = new Map(map.groups.map((g) => [g.id, g.namespace ?? 'outside the cluster']));
    const drawn = [...formatSvg(map).matchAll(/data-from="([^"]*)" data-to="([^"]*)" data-ns-from="([^"]*)" data-ns-to="([^"]*)"/g)];
    expect(drawn.map((m) => [m[1], m[2]])).toEqual(map.edges.map((e) => [e.from, e.to]));
    expect(drawn.map((m) => [m[3], m[4]])).toEqual(map.edges.map((e) => [ns.get(e.from), ns.get(e.to)]));
    expect(new Set(drawn.map((m) => m[3]))).toContain('outside the cluster');
    expect(new Set(drawn.map((m) => m[4]))).toContain('team-3');
  });
});
