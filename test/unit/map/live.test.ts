// The live overlay: each flow-log record is placed on the pair of groups its two ends are drawn in, counted
// there, and held against the map: a drop of a port the map allows, or an audit would-deny ("allowed now") of
// one it does not, disagrees with it; a record with an end the map does not draw is listed on its own.

import { describe, expect, it } from '@jest/globals';
import { buildMap, formatDot, formatHtml, formatMarkdown, formatSvg, liveOverlay, type NodeFlows } from '../../../src/map/index.js';
import {
  blockPeer,
  egress,
  ingress,
  labels,
  makeNamespace,
  makePod,
  makePolicy,
  onNode,
  podPeer,
  rule,
  sel,
  selectPods,
  snapshot,
  tcp,
  types,
} from '../../helpers/builders.js';
import { MAP_NODES, mapSettingsFor } from '../../helpers/map-cluster.js';

// shop/db admits shop/web on TCP 5432 only; shop/web may send only to 8.8.8.0/24 and inside the cluster.
const cluster = snapshot({
  nodes: MAP_NODES,
  namespaces: [makeNamespace('shop'), makeNamespace('other')],
  pods: [
    makePod('shop', 'web', '10.244.1.10', onNode('n1'), labels({ app: 'web' })),
    makePod('shop', 'db', '10.244.2.20', onNode('n2'), labels({ app: 'db' })),
    makePod('other', 'client', '10.244.2.30', onNode('n2'), labels({ app: 'client' })),
  ],
  policies: [
    makePolicy('shop', 'db', selectPods(sel({ app: 'db' })), ingress(rule([podPeer(sel({ app: 'web' }))], [tcp(5432)]))),
    makePolicy(
      'shop',
      'web-out',
      selectPods(sel({ app: 'web' })),
      types('Egress'),
      egress(rule([blockPeer('8.8.8.0/24'), podPeer(sel({}))])),
    ),
  ],
});
const map = buildMap(cluster, mapSettingsFor).map;

const WEB = { ip: '10.244.1.10', pod: 'shop/web' };
const DB = { ip: '10.244.2.20', pod: 'shop/db' };
const CLIENT = { ip: '10.244.2.30', pod: 'other/client' };
const record = (over: Partial<NonNullable<NodeFlows['records']>[number]>) => ({
  time: Date.UTC(2026, 0, 1),
  count: 1,
  src: CLIENT,
  dst: DB,
  protocol: 'tcp',
  port: 5432,
  direction: 'ingress',
  reason: 'isolated',
  because: 'shop/db is isolated for ingress',
  ...over,
});

describe('the live overlay', () => {
  it('places drops and would-deny records on their pair of groups and flags those the map disagrees with', () => {
    const flows: NodeFlows[] = [
      {
        node: 'n2',
        records: [
          // Consistent: the map has no connection other/client -> shop/db.
          record({ count: 3 }),
          // On a listed connection, a port it does not allow: consistent.
          record({ src: WEB, port: 5433, time: Date.UTC(2026, 0, 2) }),
          // On a listed connection, the port it allows: the kernel disagrees with the map.
          record({ src: WEB, port: 5432, time: Date.UTC(2026, 0, 3) }),
          // An audited policy would deny a connection the map allows (open egress to open ingress): consistent.
          record({ src: DB, dst: CLIENT, reason: 'would-deny', direction: 'ingress', port: 80, count: 2 }),
          // Allowed-connection and would-allow lines are not drops.
          record({ reason: 'allowed' }),
          record({ reason: 'would-allow' }),
        ],
      },
      {
        node: 'n1',
        records: [
          // To the outside: 9.9.9.9 is in the block shop/web may not reach; 8.8.8.8 in the one it may.
          record({ src: WEB, dst: { ip: '9.9.9.9' }, direction: 'egress', port: 443 }),
          record({ src: WEB, dst: { ip: '8.8.8.8' }, direction: 'egress', port: 443 }),
          // A node's address and a pod the map does not draw: on no pair.
          record({ src: { ip: '192.168.0.1' }, dst: WEB, direction: 'ingress', port: 22 }),
          record({ src: { ip: '10.244.1.99', pod: 'shop/gone' }, dst: WEB, direction: 'ingress', port: 22 }),
        ],
      },
      { node: 'n3', error: 'n3 /flows answered 401: Unauthorized' },
    ];
    const live = liveOverlay(map, cluster, flows);
    const world = (ip: string) => {
      const g = map.groups.find((x) => x.kind === 'outside' && (x.cidrs ?? []).some((c) => c.startsWith(ip)));
      return g!.id;
    };
    const summary = live.edges.map((e) => [e.from, e.to, e.onMap, e.drops, e.wouldDeny, e.contradictions]);
    expect(summary).toEqual(
      [
        ['other/client', 'shop/db', 'none', 3, 0, 0],
        ['shop/db', 'other/client', 'open', 0, 2, 0],
        ['shop/web', 'shop/db', 'edge', 2, 0, 1],
        ['shop/web', world('0.0.0.0/0'), 'none', 1, 0, 0],
        ['shop/web', world('8.8.8.0/24'), 'edge', 1, 0, 1],
      ].sort((a, b) => (`${a[0]}\0${a[1]}` < `${b[0]}\0${b[1]}` ? -1 : 1)),
    );
    const webDb = live.edges.find((e) => e.from === 'shop/web' && e.to === 'shop/db')!;
    // The record that disagrees comes first.
    expect(webDb.samples[0]).toMatchObject({ connection: 'tcp/5432', contradicts: 'the map allows tcp/5432 here, but ingress dropped it' });
    expect(webDb.samples[1]).toMatchObject({ connection: 'tcp/5433' });
    expect(webDb.samples[1]!.contradicts).toBeUndefined();
    expect(live.unplacedCount).toBe(2);
    expect(live.unplaced.map((u) => u.why)).toEqual([
      "192.168.0.1 is a node's address or in a pod CIDR with no pod on the map",
      'shop/gone is not on the map (left out, or not in the cluster it was drawn from)',
    ]);
    expect(live.nodes).toEqual([
      { node: 'n2', records: 6 },
      { node: 'n1', records: 4 },
      { node: 'n3', records: 0, error: 'n3 /flows answered 401: Unauthorized' },
    ]);
  });

  it('a ClusterNetworkPolicy Deny drop is a drop like any other', () => {
    const live = liveOverlay(map, cluster, [
      { node: 'n2', records: [record({ reason: 'cluster-deny', because: 'dropped by ClusterNetworkPolicy lock rule ingress:0 Deny' })] },
    ]);
    expect(live.edges[0]).toMatchObject({ from: 'other/client', to: 'shop/db', drops: 1, wouldDeny: 0 });
  });

  it('an audit would-deny of a connection the map denies disagrees with it', () => {
    const live = liveOverlay(map, cluster, [{ node: 'n2', records: [record({ reason: 'would-deny' })] }]);
    expect(live.edges[0]).toMatchObject({ from: 'other/client', to: 'shop/db', wouldDeny: 1, contradictions: 1 });
    expect(live.edges[0]!.samples[0]!.contradicts).toBe('the map denies tcp/5432 here, but the record says it is allowed now');
  });

  it('every format carries the overlay: counts per pair, the records, the disagreement', () => {
    const live = liveOverlay(map, cluster, [
      { node: 'n2', records: [record({ count: 3 }), record({ src: WEB, port: 5432 })] },
      { node: 'n1', error: 'answered 401' },
    ]);
    const md = formatMarkdown(map, live);
    expect(md).toContain('| other/client | shop/db | nothing allowed | 3 | 0 | 0 |');
    expect(md).toMatch(
      /\| shop\/web \| shop\/db \| listed connection \| 1 \| 0 \| \*\*1\*\* \| tcp\/5432 isolated on n2 at .*: the map allows tcp\/5432 here/,
    );
    expect(md).toContain('- n1: **not read**: answered 401');
    const dot = formatDot(map, live);
    expect(dot).toContain('"other/client" -> "shop/db" [style=dashed, label="dropped 3", color=red, fontcolor=red];');
    expect(dot).toMatch(
      /"shop\/web" -> "shop\/db" \[label="tcp\/5432\\ndropped 1, 1 disagrees with the map", color=red, fontcolor=red, penwidth=3\];/,
    );
    const svg = formatSvg(map, true, live);
    expect(svg).toMatch(/class="edge live dropped unlisted" data-live="0" data-from="other\/client" data-to="shop\/db"/);
    expect(svg).toMatch(/class="edge live dropped disagrees" data-edge="\d+" data-live="1" data-from="shop\/web" data-to="shop\/db"/);
    const html = formatHtml(map, live);
    expect(html).toContain('n1: not read: answered 401');
    expect(html).toContain('"live":{"nodes"');
    // Without the overlay nothing of it is drawn.
    expect(formatSvg(map)).not.toContain('live');
    expect(formatMarkdown(map)).not.toContain('## Live');
  });
});
