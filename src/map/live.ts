// The live overlay (`netfence map --live`): what the daemons' flow logs recorded — drops, and the
// connections an audited policy would deny — placed on the pair of groups each record belongs to, and held
// against the map: a drop of a port the map allows, or a would-deny of one it does not allow, is a
// contradiction (a node not in sync with the cluster, or the map drawn from other manifests than run).
// Pure: the CLI reads the records (the same /flows path as `why --live`) and hands them in.

import type { ClusterSnapshot, L4Protocol } from '../model/index.js';
import { containsIp, parseCidrOrHost, parseIp } from '../model/address.js';
import { mapAllows, PROTOCOLS, type ConnectivityMap } from './model.js';
import { blockParts } from './outside.js';

/** One flow-log record as a daemon's /flows answers it (the fields the overlay reads; FlowRecord has them). */
export interface LiveRecord {
  readonly time: number;
  readonly lastSeen?: number;
  readonly count: number;
  readonly src: { readonly ip: string; readonly pod?: string };
  readonly dst: { readonly ip: string; readonly pod?: string };
  readonly protocol: string;
  readonly port?: number;
  readonly direction: string;
  readonly reason: string;
  readonly because: string;
}

/** What one node's daemon answered: its records, or why it could not be read. */
export interface NodeFlows {
  readonly node: string;
  readonly records?: readonly LiveRecord[];
  readonly error?: string;
}

/** One record as the overlay shows it. */
export interface LiveSample {
  readonly node: string;
  /** When it was last seen (ISO time). */
  readonly seen: string;
  readonly src: string;
  readonly dst: string;
  /** `tcp/5432`, `icmp`. */
  readonly connection: string;
  readonly direction: string;
  /** `isolated`, `invalid-policy`, `unknown-pod`, `cluster-deny`, `would-deny`. */
  readonly reason: string;
  readonly count: number;
  readonly because: string;
  /** Why the record disagrees with the map, when it does. */
  readonly contradicts?: string;
}

/** The records of one pair of groups. */
export interface LiveEdge {
  readonly from: string;
  readonly to: string;
  /** `edge`: the map lists this pair; `open`: it allows it on every port without listing it; `none`: nothing is allowed. */
  readonly onMap: 'edge' | 'open' | 'none';
  /** Packets logged as dropped (each record's count). */
  readonly drops: number;
  /** Packets an audited policy would deny (allowed now). */
  readonly wouldDeny: number;
  /** Records that disagree with the map. */
  readonly contradictions: number;
  /** At most SAMPLES records: those that disagree first, then the newest. */
  readonly samples: readonly LiveSample[];
}

export interface LiveOverlay {
  readonly nodes: readonly { readonly node: string; readonly records: number; readonly error?: string }[];
  readonly edges: readonly LiveEdge[];
  /** Records with an end the map does not draw (a pod left out, a node's address, another family): at most UNPLACED. */
  readonly unplaced: readonly (LiveSample & { readonly why: string })[];
  readonly unplacedCount: number;
}

const SAMPLES = 5;
const UNPLACED = 50;
/** The records the overlay draws: drops and audited would-deny (would-allow and allowed lines are not drops). */
const DROP_REASONS = new Set(['isolated', 'invalid-policy', 'unknown-pod', 'cluster-deny']);

export function liveOverlay(map: ConnectivityMap, snapshot: ClusterSnapshot, flows: readonly NodeFlows[]): LiveOverlay {
  const place = placer(map, snapshot);
  const edges = new Map<string, { from: string; to: string; drops: number; wouldDeny: number; samples: LiveSample[] }>();
  const unplaced: (LiveSample & { why: string })[] = [];
  let unplacedCount = 0;
  for (const { node, records } of flows) {
    for (const r of records ?? []) {
      const audit = r.reason === 'would-deny';
      if (!audit && !DROP_REASONS.has(r.reason)) continue;
      const sample = sampleOf(node, r);
      const from = place(r.src);
      const to = place(r.dst);
      if ('why' in from || 'why' in to) {
        unplacedCount++;
        if (unplaced.length < UNPLACED) unplaced.push({ ...sample, why: 'why' in from ? from.why : (to as { why: string }).why });
        continue;
      }
      const key = `${from.id}\0${to.id}`;
      const entry = edges.get(key) ?? { from: from.id, to: to.id, drops: 0, wouldDeny: 0, samples: [] };
      if (audit) entry.wouldDeny += r.count;
      else entry.drops += r.count;
      const contradicts = contradiction(map, from.id, to.id, r, audit);
      entry.samples.push(contradicts !== undefined ? { ...sample, contradicts } : sample);
      edges.set(key, entry);
    }
  }
  const listed = new Set(map.edges.map((e) => `${e.from}\0${e.to}`));
  const byId = new Map(map.groups.map((g) => [g.id, g]));
  const out: LiveEdge[] = [...edges.entries()].map(([key, e]) => {
    const src = byId.get(e.from)!;
    const dst = byId.get(e.to)!;
    const open = src.egress === 'open' && dst.ingress === 'open' && !(src.kind === 'outside' && dst.kind === 'outside');
    const ordered = [...e.samples].sort(
      (a, b) =>
        Number(b.contradicts !== undefined) - Number(a.contradicts !== undefined) || (a.seen < b.seen ? 1 : a.seen > b.seen ? -1 : 0),
    );
    return {
      from: e.from,
      to: e.to,
      onMap: listed.has(key) ? 'edge' : open ? 'open' : 'none',
      drops: e.drops,
      wouldDeny: e.wouldDeny,
      contradictions: e.samples.filter((s) => s.contradicts !== undefined).length,
      samples: ordered.slice(0, SAMPLES),
    };
  });
  out.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.to < b.to ? -1 : a.to > b.to ? 1 : 0));
  return {
    nodes: flows.map((f) => ({ node: f.node, records: f.records?.length ?? 0, ...(f.error !== undefined ? { error: f.error } : {}) })),
    edges: out,
    unplaced,
    unplacedCount,
  };
}

function sampleOf(node: string, r: LiveRecord): LiveSample {
  const end = (e: LiveRecord['src']): string => (e.pod !== undefined ? `${e.pod} (${e.ip})` : e.ip);
  return {
    node,
    seen: new Date(r.lastSeen ?? r.time).toISOString(),
    src: end(r.src),
    dst: end(r.dst),
    connection: r.port !== undefined ? `${r.protocol}/${r.port}` : r.protocol,
    direction: r.direction,
    reason: r.reason,
    count: r.count,
    because: r.because,
  };
}

/**
 * Whether the record disagrees with the map. The map answers for TCP, UDP and SCTP ports: a drop of a port it
 * allows (or would-deny of one it does not: "allowed now" is the audit record's own claim) is a disagreement.
 */
function contradiction(map: ConnectivityMap, from: string, to: string, r: LiveRecord, audit: boolean): string | undefined {
  const proto = PROTOCOLS.find((p) => p === r.protocol) as L4Protocol | undefined;
  if (proto === undefined || r.port === undefined) return undefined;
  const allowed = mapAllows(map, from, to, proto, r.port);
  if (!audit && allowed) return `the map allows ${proto}/${r.port} here, but ${r.direction} dropped it`;
  if (audit && !allowed) return `the map denies ${proto}/${r.port} here, but the record says it is allowed now`;
  return undefined;
}

/** Which group an end of a record is drawn in: its pod's group, or the outside block holding its address. */
function placer(map: ConnectivityMap, snapshot: ClusterSnapshot): (end: LiveRecord['src']) => { id: string } | { why: string } {
  const podGroup = new Map<string, string>();
  for (const g of map.groups) for (const p of g.pods) podGroup.set(p, g.id);
  const blocks = map.groups.flatMap((g) =>
    (g.cidrs ?? []).map((text) => {
      const { base, except } = blockParts(text);
      return { id: g.id, base: parseCidrOrHost(base), except: except.flatMap((t) => parseCidrOrHost(t) ?? []) };
    }),
  );
  const cluster = [...snapshot.nodes.flatMap((n) => [...n.podCidrs, ...n.addresses])].flatMap((t) => parseCidrOrHost(t) ?? []);
  return (end) => {
    if (end.pod !== undefined) {
      const id = podGroup.get(end.pod);
      return id !== undefined ? { id } : { why: `${end.pod} is not on the map (left out, or not in the cluster it was drawn from)` };
    }
    const ip = parseIp(end.ip);
    if (!ip) return { why: `${end.ip} is not an address` };
    if (ip.family !== map.family) return { why: `${end.ip} is not IPv${map.family} (the map's family)` };
    if (cluster.some((c) => containsIp(c, ip.family, ip.value)))
      return { why: `${end.ip} is a node's address or in a pod CIDR with no pod on the map` };
    const hit = blocks.find(
      (b) => b.base !== undefined && containsIp(b.base, ip.family, ip.value) && !b.except.some((c) => containsIp(c, ip.family, ip.value)),
    );
    return hit ? { id: hit.id } : { why: `${end.ip} is in no block of the map` };
  };
}
