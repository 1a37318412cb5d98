// `netfence map --diff OLD NEW`: the connections a change opens and closes, with the rule responsible. Both
// clusters are mapped (each compiled and traced on its own) with the outside world cut at the blocks either
// side names; then the pods are split by the pair (group before, group after), so every pair of such
// classes is one question asked of both maps, and the answers are compared port range by port range.

import type { ClusterSnapshot, IpFamily, NodeSettings } from '../model/index.js';
import { finishMap, endsOf, type GroupState, type MapModel, type MapOptions } from './build.js';
import { combine, Judge, type Cell, type End } from './judge.js';
import type { Profile } from './profiles.js';
import { PROTOCOLS, type PortRange } from './model.js';
import { intersect, joinRanges, rangesText, subtract } from './ports.js';
import { carryOver } from './carry-over.js';
import { defaultFamily, prepareAll, type Prepared } from './prepare.js';

export interface EdgeChange {
  /** Group ids in the new map (in the old one for pods the new cluster no longer has). */
  readonly from: string;
  readonly to: string;
  readonly opened: readonly PortRange[];
  readonly closed: readonly PortRange[];
  /** The rules responsible: what allows what opened, what denies what closed (and what allowed it before). */
  readonly because: readonly string[];
}

export interface MapDiff {
  readonly family: IpFamily;
  readonly changes: readonly EdgeChange[];
  /** Pods only one side has (their connections are not compared). */
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

export interface DiffSide {
  readonly snapshot: ClusterSnapshot;
  readonly settingsFor: (node: string) => NodeSettings;
}

export function diffClusters(
  before: DiffSide,
  after: DiffSide,
  options: MapOptions = {},
): { diff: MapDiff; before: MapModel; after: MapModel } {
  const family = options.family ?? defaultFamily(after.snapshot);
  const [old, neu] = carryOver(before.snapshot, after.snapshot);
  const [p0, p1] = prepareAll(
    [
      { snapshot: old, settingsFor: before.settingsFor, compiled: new Map() },
      { snapshot: neu, settingsFor: after.settingsFor, compiled: new Map() },
    ],
    family,
  ) as [Prepared, Prepared];
  const cidrs = [...p0.addresses.netCidrs(), ...p1.addresses.netCidrs()];
  const m0 = finishMap(p0, { ...options, extraCidrs: cidrs, listEdges: false });
  const m1 = finishMap(p1, { ...options, extraCidrs: cidrs, listEdges: false });
  return { diff: diffMaps(m0, m1), before: m0, after: m1 };
}

interface DiffClass {
  readonly before: GroupState;
  readonly after: GroupState;
  readonly size: number;
}

export function diffMaps(before: MapModel, after: MapModel): MapDiff {
  const classes = diffClasses(before, after);
  const same = sameJudging(before.judge, after.judge, classes);
  const changes = new Map<string, { from: string; to: string; opened: PortRange[]; closed: PortRange[]; because: Set<string> }>();
  const all = classes.map((_, j) => j);
  for (let i = 0; i < classes.length; i++)
    for (const j of same.rowChanged(i) ? all : same.columns) {
      const a = classes[i]!;
      const b = classes[j]!;
      if (a === b && a.size < 2) continue;
      // Judged by the same rules seeing the same of each other on both sides: the same answer (the
      // judge's own premise, judge.ts), so nothing to compare.
      if (same.unchanged(i, j)) continue;
      const was = allowed(before.judge, a.before, b.before);
      const now = allowed(after.judge, a.after, b.after);
      if (was === 'none' && now === 'none') continue;
      if (was === 'all' && now === 'all') continue;
      const wasCells = cellsOf(before.judge, a.before, b.before, was);
      const nowCells = cellsOf(after.judge, a.after, b.after, now);
      const wasPorts = allowedPorts(wasCells);
      const nowPorts = allowedPorts(nowCells);
      const opened = subtract(nowPorts, wasPorts);
      const closed = subtract(wasPorts, nowPorts);
      if (opened.length === 0 && closed.length === 0) continue;
      const key = `${a.after.group.id}\0${b.after.group.id}`;
      const entry = changes.get(key) ?? {
        from: a.after.group.id,
        to: b.after.group.id,
        opened: [],
        closed: [],
        because: new Set<string>(),
      };
      entry.opened.push(...opened);
      entry.closed.push(...closed);
      for (const why of reasons(opened, closed, wasCells, nowCells)) entry.because.add(why);
      changes.set(key, entry);
    }
  const podsOf = (m: MapModel) => new Set(m.prepared.pods.map((p) => p.key));
  const [was, now] = [podsOf(before), podsOf(after)];
  return {
    family: after.prepared.family,
    changes: [...changes.values()].map((c) => ({
      ...c,
      opened: joinRanges(c.opened),
      closed: joinRanges(c.closed),
      because: [...c.because],
    })),
    added: [...now].filter((k) => !was.has(k)),
    removed: [...was].filter((k) => !now.has(k)),
  };
}

/** Pods split by (group before, group after); outside blocks likewise, by their text (both maps cut alike). */
function diffClasses(before: MapModel, after: MapModel): DiffClass[] {
  const groupOf = (m: MapModel) => {
    const byPod = new Map<string, GroupState>();
    for (const g of m.groups) {
      const pods = g.group.pods;
      for (let i = 0; i < pods.length; i++) byPod.set(pods[i]!, g);
    }
    for (const g of m.groups) for (const block of g.group.cidrs ?? []) byPod.set(`outside ${block}`, g);
    return byPod;
  };
  const [was, now] = [groupOf(before), groupOf(after)];
  // By the two groups themselves (each map's group ids are unique), in the order each pair is first met.
  type Counting = { before: GroupState; after: GroupState; size: number };
  const byPair = new Map<GroupState, Map<GroupState, Counting>>();
  const classes: Counting[] = [];
  was.forEach((b, member) => {
    const a = now.get(member);
    if (!a) return;
    let byAfter = byPair.get(b);
    if (!byAfter) byPair.set(b, (byAfter = new Map<GroupState, Counting>()));
    let c = byAfter.get(a);
    if (!c) {
      byAfter.set(a, (c = { before: b, after: a, size: 0 }));
      classes.push(c);
    }
    c.size++;
  });
  return classes;
}

/**
 * Which pairs of classes both maps judge alike without tracing either. One direction of a connection is
 * decided by the judging pod's profile (its chains' content), by what those chains see of the peer's
 * address and of the pod's own (judge.ts); when all three are the same text in both maps, so are the
 * verdicts and their reasons. A policy change touches the profiles of the pods it selects and the address
 * classes of the pods its peers name: only their rows and columns are traced again.
 */
function sameJudging(
  before: Judge,
  after: Judge,
  classes: readonly DiffClass[],
): { unchanged: (src: number, dst: number) => boolean; rowChanged: (src: number) => boolean; columns: readonly number[] } {
  const end = (g: GroupState): End => g.ends[0]!;
  const profileOf = (e: End, direction: 'egress' | 'ingress'): Profile | undefined => (e.kind === 'pod' ? e.pod[direction] : undefined);
  // A class's own side, before and after: the same profile (or both outside, judged by nobody) seeing the same of itself.
  const sameSide = (c: DiffClass, direction: 'egress' | 'ingress'): boolean => {
    const [was, now] = [end(c.before), end(c.after)];
    const [p0, p1] = [profileOf(was, direction), profileOf(now, direction)];
    if (!p0 || !p1) return p0 === p1;
    return p0.key === p1.key && before.seenText(p0, was.cls) === after.seenText(p1, now.cls);
  };
  const egress = classes.map((c) => sameSide(c, 'egress'));
  const ingress = classes.map((c) => sameSide(c, 'ingress'));
  // The same address class on both sides: every profile sees the same of it.
  const address = classes.map((c) => before.classText(end(c.before).cls) === after.classText(end(c.after).cls));
  const seesAlike = (judging: DiffClass, direction: 'egress' | 'ingress', peer: DiffClass): boolean => {
    const p0 = profileOf(end(judging.before), direction);
    const p1 = profileOf(end(judging.after), direction);
    if (!p0 || !p1) return true;
    return before.seenText(p0, end(peer.before).cls) === after.seenText(p1, end(peer.after).cls);
  };
  // A pair can differ only where its sender's egress or address changed (the row) or its receiver's ingress
  // or address did (the column): other pairs are not even looked at.
  const columns = classes.flatMap((_, j) => (ingress[j]! && address[j]! ? [] : [j]));
  return {
    rowChanged: (i) => !egress[i]! || !address[i]!,
    columns,
    unchanged: (i, j) =>
      egress[i]! &&
      ingress[j]! &&
      (address[j]! || seesAlike(classes[i]!, 'egress', classes[j]!)) &&
      (address[i]! || seesAlike(classes[j]!, 'ingress', classes[i]!)),
  };
}

/** Cheap first: nothing (one side refuses everything), everything (open to open), or some. */
function allowed(judge: Judge, src: GroupState, dst: GroupState): 'none' | 'all' | 'some' {
  if (src.group.kind === 'outside' && dst.group.kind === 'outside') return 'none';
  if (src.group.egress === 'open' && dst.group.ingress === 'open') return 'all';
  const ends = endsOf(src, dst);
  if (!ends) return 'none';
  const [from, to] = ends;
  // A sender whose egress allows nothing: no need to ask the receiver.
  if (from.kind === 'pod' && !judge.egress(judge.side(from.pod, 'egress', from.cls), to).any) return 'none';
  const { egress, ingress } = judge.both(from, to);
  return egress.any && ingress.any ? 'some' : 'none';
}

/** Open egress to open ingress: every port, with the words the tracer gives those sides. */
const everything = (src: GroupState, dst: GroupState): Cell[] =>
  PROTOCOLS.map((proto) => ({
    proto,
    from: 1,
    to: 65535,
    allowed: true,
    egressAllowed: true,
    ingressAllowed: true,
    egress: src.group.kind === 'outside' ? Judge.fromOutside.intervals[0]!.by : 'not isolated for egress',
    ingress: dst.group.kind === 'outside' ? Judge.toOutside.intervals[0]!.by : 'not isolated for ingress',
  }));

function cellsOf(judge: Judge, src: GroupState, dst: GroupState, verdict: 'none' | 'all' | 'some'): Cell[] {
  if (verdict === 'all') return everything(src, dst);
  const ends = endsOf(src, dst);
  if (!ends || (src.group.kind === 'outside' && dst.group.kind === 'outside')) return [];
  const { egress, ingress } = judge.both(ends[0], ends[1]);
  return combine(egress.intervals, ingress.intervals);
}

const allowedPorts = (cells: readonly Cell[]): PortRange[] =>
  joinRanges(cells.filter((c) => c.allowed).map((c) => ({ proto: c.proto, from: c.from, to: c.to })));

function reasons(opened: readonly PortRange[], closed: readonly PortRange[], was: readonly Cell[], now: readonly Cell[]): string[] {
  // One line per reason, with every port range it covers.
  const lines = new Map<string, { verb: string; why: string; ports: PortRange[] }>();
  const add = (verb: string, why: string, ports: readonly PortRange[]) => {
    const key = `${verb}\0${why}`;
    const line = lines.get(key) ?? { verb, why, ports: [] };
    line.ports.push(...ports);
    lines.set(key, line);
  };
  for (const c of now) {
    const o = intersect(opened, [c]);
    if (o.length > 0 && c.allowed) add('opened', `egress ${c.egress}; ingress ${c.ingress}`, o);
    const x = intersect(closed, [c]);
    if (x.length > 0 && !c.allowed) {
      const denied = [...(c.egressAllowed ? [] : [`egress ${c.egress}`]), ...(c.ingressAllowed ? [] : [`ingress ${c.ingress}`])];
      const before = was.filter((w) => w.allowed && intersect(x, [w]).length > 0).map((w) => `egress ${w.egress}; ingress ${w.ingress}`);
      add('closed', `${denied.join('; ')}${before.length > 0 ? ` (allowed before by ${[...new Set(before)].join(' / ')})` : ''}`, x);
    }
  }
  const out = [...lines.values()].map((l) => `${l.verb} ${rangesText(joinRanges(l.ports))}: ${l.why}`);
  // Where the new cluster has no cells (a pair it cannot trace), the closing is still said.
  if (closed.length > 0 && now.length === 0) out.push(`closed ${rangesText(closed)}`);
  return out;
}

export function formatDiff(diff: MapDiff, format: 'md' | 'json' | 'text'): string {
  if (format === 'json') return `${JSON.stringify(diff, null, 2)}\n`;
  const opened = diff.changes.filter((c) => c.opened.length > 0).length;
  const closed = diff.changes.filter((c) => c.closed.length > 0).length;
  const lines: string[] = [];
  if (format === 'md') lines.push(`### netfence map --diff (IPv${diff.family})`, '');
  lines.push(
    diff.changes.length === 0
      ? 'No connection opened or closed.'
      : `${opened} connection${opened === 1 ? '' : 's'} opened, ${closed} closed (groups of the new cluster).`,
  );
  if (diff.changes.length > 0) {
    lines.push('');
    if (format === 'md') lines.push('| from | to | opened | closed | because |', '|---|---|---|---|---|');
    for (const c of diff.changes) {
      const cells = [c.from, c.to, c.opened.length > 0 ? rangesText(c.opened) : '', c.closed.length > 0 ? rangesText(c.closed) : ''];
      if (format === 'md') lines.push(`| ${[...cells, c.because.join('; ')].map((t) => t.replace(/\|/g, '\\|')).join(' | ')} |`);
      else {
        lines.push(`${c.from} -> ${c.to}`);
        if (c.opened.length > 0) lines.push(`  + opened ${rangesText(c.opened)}`);
        if (c.closed.length > 0) lines.push(`  - closed ${rangesText(c.closed)}`);
        for (const b of c.because) lines.push(`    ${b}`);
      }
    }
  }
  if (diff.added.length > 0) lines.push('', `Pods only in the new cluster (not compared): ${diff.added.join(', ')}`);
  if (diff.removed.length > 0) lines.push('', `Pods only in the old cluster (not compared): ${diff.removed.join(', ')}`);
  return `${lines.join('\n')}\n`;
}
