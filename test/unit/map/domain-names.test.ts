// ClusterNetworkPolicy `domainNames` peers on the map: drawn as an outside group named by the names, with the
// connections the rules allow after a lookup. The cluster is the golden case's (rules/domain-names-egress): an
// Admin Accept of good.example and *.cdn.example on TCP 443 for the `app: client` pods, above a Deny of
// 0.0.0.0/0. "Accept: Accepts the selected traffic, allowing it into the destination" (the learned addresses);
// everything else those pods send outside meets the Deny.

import { describe, expect, it } from '@jest/globals';
import { loadManifests } from '../../../src/cluster/manifests.js';
import { buildMap, defaultFamily, mapAllows, nameLookups, withLookups } from '../../../src/map/index.js';
import { defaultNodeSettings, DEFAULT_MANIFEST_LIMITS } from '../../../src/model/index.js';

const { snapshot } = loadManifests(['rules/domain-names-egress/cluster.yaml'], DEFAULT_MANIFEST_LIMITS);
const settingsFor = (node: string) => defaultNodeSettings(node, ['10.244.1.0/24']);

describe('domainNames peers', () => {
  const lookups = withLookups(snapshot, settingsFor, defaultFamily(snapshot));
  const map = nameLookups(buildMap(snapshot, settingsFor, { extraCidrs: lookups.cidrs }, lookups.compiled).map, lookups);

  it('are an outside group named by the names, reached as the rule allows after a lookup', () => {
    const dns = map.groups.find((g) => g.domainNames !== undefined);
    expect(dns).toMatchObject({ id: 'dns:0', kind: 'outside', domainNames: ['*.cdn.example', 'good.example'] });
    expect(mapAllows(map, 'shop/client', 'dns:0', 'tcp', 443)).toBe(true);
    expect(mapAllows(map, 'shop/client', 'dns:0', 'tcp', 80)).toBe(false);
    expect(map.edges.find((e) => e.to === 'dns:0')?.because[0]?.egress).toBe(
      'ClusterNetworkPolicy shop-egress rule egress:0 payment-api Accept',
    );
    // The rest of the world: the Deny.
    const world = map.groups.find((g) => g.kind === 'outside' && g.domainNames === undefined)!;
    expect(world.cidrs).toEqual(['0.0.0.0/0']);
    expect(mapAllows(map, 'shop/client', world.id, 'tcp', 443)).toBe(false);
    // Pods no policy selects reach it as anywhere else.
    expect(mapAllows(map, 'shop/other', 'dns:0', 'tcp', 80)).toBe(true);
  });

  it('without a domainNames peer nothing changes', () => {
    const plain = { ...snapshot, clusterPolicies: [] };
    const none = withLookups(plain, settingsFor, 4);
    expect(none.peers).toEqual([]);
    expect(nameLookups(buildMap(plain, settingsFor).map, none).groups.map((g) => g.id)).toEqual(['shop/client', 'shop/other', 'world:0']);
  });
});
