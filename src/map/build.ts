// `netfence map`: the groups (pods of one workload the compiled rules cannot tell apart; outside blocks with
// the same set memberships) and every connection allowed between them, traced (judge.ts). A workload whose
// pods the rules treat differently is drawn as several groups, and the map says why.

import { podKey, type ClusterSnapshot, type IpFamily, type NodeSettings } from '../model/index.js';
import { formatAnswer, whyConnection, type CompiledRules } from '../why/index.js';
import { combine, Judge, type End, type Outcome } from './judge.js';
import type { ConnectivityMap, EdgeReason, MapEdge, MapGroup, PortRange, Split } from './model.js';
import { outsideBlocks } from './outside.js';
import { joinRanges, rangeText } from './ports.js';
import { defaultFamily, prepare, workloadOf, type PodView, type Prepared, type Workload } from './prepare.js';

export interface MapOptions {
  readonly family?: IpFamily;
  /** `owner` (default): a pod's controller, else its label set, is its workload; `labels`: its label set; or a label key (`app`): its value. */
  readonly groupBy?: string;
  /** Fill each edge's `why` (the text `netfence why` prints) for at most this many edges. */
  readonly explain?: number;
  /** CIDRs to cut the outside world at besides the map's own (a diff cuts both sides alike). */
  readonly extraCidrs?: readonly string[];
  /** False: groups only (a diff asks its own questions of the judge). Default true. */
  readonly listEdges?: boolean;
}

/** A group with what the map needs to judge it: its pods, and the end traced for it. */
export interface GroupState {
  readonly group: MapGroup;
  /** Two different members when there are (a group's connections to itself are between two of its pods). */
  readonly ends: readonly End[];
}

/** A map, and what it was computed from (for a diff and for `why` on one of its edges). */
export interface MapModel {
  readonly map: ConnectivityMap;
  readonly groups: readonly GroupState[];
  readonly prepared: Prepared;
  readonly judge: Judge;
}

export function buildMap(
  snapshot: ClusterSnapshot,
  settingsFor: (node: string) => NodeSettings,
  options: MapOptions = {},
  compiled: CompiledRules = new Map(),
): MapModel {
  const family = options.family ?? defaultFamily(snapshot);
  return finishMap(prepare(snapshot, settingsFor, family, compiled), options);
}

/** The groups and edges of a prepared cluster. */
export function finishMap(prepared: Prepared, options: MapOptions = {}): MapModel {
  const classes = new Classes();
  const { groups, splits } = podGroups(prepared, options.groupBy, classes);
  const outside = outsideGroups(prepared, options.extraCidrs ?? [], classes);
  const all = [...groups, ...outside];
  const judge = new Judge(prepared, classes.list);
  const edges = options.listEdges === false ? [] : listEdges(judge, all);
  if (options.explain !== undefined) explain(prepared, all, edges, options.explain);
  const map: ConnectivityMap = {
    family: prepared.family,
    groups: all.map((g) => g.group),
    edges,
    openToOpen: true,
    splits,
    skipped: prepared.skipped,
  };
  return { map, groups: all, prepared, judge };
}

/**
 * Every connection between two groups, sender by sender, in the groups' order. Of the millions of pairs at
 * 2,000 groups most are refused by one side: each side's verdict is one look-up in the judge's tables (each
 * group's receiving side is found once), and an edge is built only for a pair both sides allow. Its ports and
 * reasons depend only on the two verdicts, which the judge hands out as shared objects: made once per pair of
 * verdicts (EdgeShapes) and shared by every edge with those verdicts, not made again for each of 100,000 edges.
 */
function listEdges(judge: Judge, all: readonly GroupState[]): MapEdge[] {
  const edges: MapEdge[] = [];
  const shapes = new EdgeShapes();
  const receivers = all.map((g) => {
    const end = g.ends[0]!;
    return end.kind === 'pod' ? judge.side(end.pod, 'ingress', end.cls) : undefined;
  });
  for (const src of all) {
    const srcEnd = src.ends[0]!;
    const sender = srcEnd.kind === 'pod' ? judge.side(srcEnd.pod, 'egress', srcEnd.cls) : undefined;
    const openSender = src.group.egress === 'open';
    const outsideSender = src.group.kind === 'outside';
    all.forEach((dst, d) => {
      if (openSender && dst.group.ingress === 'open') return;
      if (src === dst) {
        // Two pods of one group: its second member receives.
        const edge = edgeOf(judge, src, dst);
        if (edge) edges.push(edge);
        return;
      }
      if (outsideSender && dst.group.kind === 'outside') return;
      const egress = sender ? judge.egress(sender, dst.ends[0]!) : Judge.fromOutside;
      if (!egress.any) return;
      const receiver = receivers[d];
      const ingress = receiver ? judge.ingress(receiver, srcEnd) : Judge.toOutside;
      if (!ingress.any) return;
      const shape = shapes.of(egress, ingress);
      if (shape) edges.push({ from: src.group.id, to: dst.group.id, ports: shape.ports, because: shape.because });
    });
  }
  return edges;
}

/** What an edge allows and why, for one pair of verdicts; undefined: nothing is allowed. */
interface EdgeShape {
  readonly ports: readonly PortRange[];
  readonly because: readonly EdgeReason[];
}

/** Edge shapes by the pair of verdicts (the judge's shared Outcome objects) they come from. */
class EdgeShapes {
  private readonly known = new Map<Outcome, Map<Outcome, EdgeShape | undefined>>();

  of(egress: Outcome, ingress: Outcome): EdgeShape | undefined {
    let byIngress = this.known.get(egress);
    if (!byIngress) this.known.set(egress, (byIngress = new Map<Outcome, EdgeShape | undefined>()));
    if (byIngress.has(ingress)) return byIngress.get(ingress);
    const shape = shapeOf(egress, ingress);
    byIngress.set(ingress, shape);
    return shape;
  }
}

function shapeOf(egress: Outcome, ingress: Outcome): EdgeShape | undefined {
  if (!egress.any || !ingress.any) return undefined;
  const cells = combine(egress.intervals, ingress.intervals).filter((c) => c.allowed);
  if (cells.length === 0) return undefined;
  const reasons = new Map<string, { ports: PortRange[]; egress: string; ingress: string }>();
  for (const c of cells) {
    const k = `${c.egress}\0${c.ingress}`;
    const r = reasons.get(k) ?? { ports: [], egress: c.egress, ingress: c.ingress };
    r.ports.push({ proto: c.proto, from: c.from, to: c.to });
    reasons.set(k, r);
  }
  const because: EdgeReason[] = [...reasons.values()].map((r) => ({ ...r, ports: joinRanges(r.ports) }));
  return { ports: joinRanges(cells.map((c) => ({ proto: c.proto, from: c.from, to: c.to }))), because };
}

/** The connection from one group to another, unless nothing is allowed or both ends are open (implied). */
export function edgeOf(judge: Judge, src: GroupState, dst: GroupState): MapEdge | undefined {
  if (src.group.kind === 'outside' && dst.group.kind === 'outside') return undefined;
  if (src.group.egress === 'open' && dst.group.ingress === 'open') return undefined;
  const ends = endsOf(src, dst);
  if (!ends) return undefined;
  const { egress, ingress } = judge.both(ends[0], ends[1]);
  const shape = shapeOf(egress, ingress);
  return shape ? { from: src.group.id, to: dst.group.id, ports: shape.ports, because: shape.because } : undefined;
}

/** The two ends traced for a pair of groups: a group to itself is two of its pods (a pod to itself is always allowed). */
export function endsOf(src: GroupState, dst: GroupState): [End, End] | undefined {
  if (src !== dst) return [src.ends[0]!, dst.ends[0]!];
  return src.ends.length >= 2 ? [src.ends[0]!, src.ends[1]!] : undefined;
}

/** Address classes by id, for the judge's tables. */
class Classes {
  readonly list: string[] = [];
  private readonly ids = new Map<string, number>();

  id(cls: string): number {
    let id = this.ids.get(cls);
    if (id === undefined) {
      id = this.list.length;
      this.list.push(cls);
      this.ids.set(cls, id);
    }
    return id;
  }
}

function podGroups(prepared: Prepared, groupBy: string | undefined, classes: Classes): { groups: GroupState[]; splits: Split[] } {
  const workloads = new Map<string, Workload & { namespace: string; pods: PodView[] }>();
  // Indexed loops over the pods: the one-shot commands run unoptimised (cli/main.ts), where `for…of` costs more than the body.
  const { pods } = prepared;
  for (let i = 0; i < pods.length; i++) {
    const view = pods[i]!;
    const w = workloadOf(view.pod, groupBy);
    const entry = workloads.get(w.key);
    if (entry) entry.pods.push(view);
    else workloads.set(w.key, { ...w, namespace: view.pod.namespace, pods: [view] });
  }
  // Two workloads with one display name in a namespace: name both by their other name (kind and owner, label set).
  const names = new Map<string, number>();
  for (const w of workloads.values()) names.set(`${w.namespace}/${w.name}`, (names.get(`${w.namespace}/${w.name}`) ?? 0) + 1);
  const groups: GroupState[] = [];
  const splits: Split[] = [];
  for (const w of workloads.values()) {
    const name = names.get(`${w.namespace}/${w.name}`)! > 1 ? w.alt : w.name;
    const workload = `${w.namespace}/${name}`;
    // Pods by signature (egress profile, ingress profile, address class), in the order each is first met.
    // Nested maps: no text per pod joining the three (an address class is every set holding the address).
    const bySignature = new Map<string, Map<string, Map<string, PodView[]>>>();
    const parts: PodView[][] = [];
    for (let i = 0; i < w.pods.length; i++) {
      const p = w.pods[i]!;
      let byIngress = bySignature.get(p.egress.key);
      if (!byIngress) bySignature.set(p.egress.key, (byIngress = new Map<string, Map<string, PodView[]>>()));
      let byClass = byIngress.get(p.ingress.key);
      if (!byClass) byIngress.set(p.ingress.key, (byClass = new Map<string, PodView[]>()));
      const list = byClass.get(p.addressClass);
      if (list) list.push(p);
      else {
        const part = [p];
        byClass.set(p.addressClass, part);
        parts.push(part);
      }
    }
    const ids = parts.map((_, i) => (i === 0 ? workload : `${workload}#${i + 1}`));
    parts.forEach((members, i) => {
      const first = members[0]!;
      groups.push({
        group: {
          id: ids[i]!,
          kind: 'pods',
          namespace: w.namespace,
          workload,
          ...(w.owner ? { owner: w.owner } : {}),
          labels: w.labels,
          pods: members.map((m) => m.key),
          egress: first.egress.open ? 'open' : 'policed',
          ingress: first.ingress.open ? 'open' : 'policed',
          policies: { egress: first.egress.policies, ingress: first.ingress.policies },
        },
        ends: members.slice(0, 2).map((pod) => ({ kind: 'pod', pod, cls: classes.id(pod.addressClass) })),
      });
    });
    if (parts.length > 1) splits.push({ workload, groups: ids, why: splitReason(parts.map((p) => p[0]!)) });
  }
  return { groups, splits };
}

/** Why the rules tell a workload's pods apart, from the first pod of each part. */
function splitReason(firsts: readonly PodView[]): string {
  const reasons: string[] = [];
  const differ = (f: (p: PodView) => string) => new Set(firsts.map(f)).size > 1;
  const policyText = (ps: readonly string[]) => (ps.length === 0 ? 'none' : ps.join(', '));
  if (differ((p) => p.egress.key))
    reasons.push(`their egress is judged differently (policies: ${firsts.map((p) => policyText(p.egress.policies)).join(' / ')})`);
  if (differ((p) => p.ingress.key))
    reasons.push(`their ingress is judged differently (policies: ${firsts.map((p) => policyText(p.ingress.policies)).join(' / ')})`);
  if (differ((p) => p.addressClass)) {
    const sets = firsts.map((p) => new Set(p.addressClass.split(' ').filter((e) => e !== '')));
    const all = new Set(sets.flatMap((s) => [...s]));
    const notShared = [...all].filter((e) => !sets.every((s) => s.has(e)));
    const ports = notShared.filter((e) => e.includes('@'));
    reasons.push(
      ports.length > 0
        ? `a named port resolves differently (${ports.map((e) => e.split('@')[1]).join(' vs ')})`
        : `policies select them differently as peers (${notShared.length} address set${notShared.length === 1 ? '' : 's'} hold some and not others)`,
    );
  }
  return reasons.join('; ');
}

function outsideGroups(prepared: Prepared, extra: readonly string[], classes: Classes): GroupState[] {
  const blocks = outsideBlocks(prepared.snapshot, prepared.family, [...prepared.addresses.netCidrs(), ...extra]);
  const byClass = new Map<string, { cidrs: string[]; ip: string }>();
  for (const b of blocks) {
    const cls = prepared.addresses.classOf(b.ip);
    const entry = byClass.get(cls) ?? { cidrs: [], ip: b.ip };
    entry.cidrs.push(b.text);
    byClass.set(cls, entry);
  }
  return [...byClass.entries()].map(([addressClass, { cidrs, ip }], i) => ({
    group: {
      id: `world:${i}`,
      kind: 'outside',
      workload: 'outside the cluster',
      pods: [],
      cidrs,
      egress: 'open',
      ingress: 'open',
      policies: { egress: [], ingress: [] },
    },
    ends: [{ kind: 'outside', ip, cls: classes.id(addressClass) }],
  }));
}

/** Each edge's reasons as `netfence why` words them, for one port of each (the first `limit` edges). */
function explain(prepared: Prepared, groups: readonly GroupState[], edges: MapEdge[], limit: number): void {
  const byId = new Map(groups.map((g) => [g.group.id, g]));
  const refOf = (e: End): string => (e.kind === 'pod' ? podKey(e.pod.pod) : e.ip);
  edges.slice(0, limit).forEach((edge, i) => {
    const ends = endsOf(byId.get(edge.from)!, byId.get(edge.to)!);
    if (!ends) return;
    const why = edge.because.map((r) => {
      const port = r.ports[0]!;
      const answer = whyConnection(
        prepared.snapshot,
        prepared.settingsFor,
        { src: refOf(ends[0]), dst: refOf(ends[1]), proto: port.proto, port: port.from, family: prepared.family },
        prepared.compiled,
      );
      return `${rangeText(port)}:\n${formatAnswer(answer)}`;
    });
    edges[i] = { ...edge, why };
  });
}
