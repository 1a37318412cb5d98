// The verdicts, traced: one packet per port interval through the compiled ruleset of the node that judges it,
// with the same tracer `trace` and `why` use. A connection between pods on two nodes crosses FORWARD twice —
// the sender's node judges its egress (bridge → uplink), the receiver's its ingress (uplink → bridge) — and
// one between pods of one node is judged in one pass whose workload chains clear the mark on entry and
// decide each direction alone (compile/static-chains.ts), so it is the same two verdicts ANDed. The
// outcome of one direction depends only on the judging pod's profile and on what that profile's chains
// see of the peer and of the pod itself (their address classes projected on the sets they match: a named-port
// set holds the destination's own address), and is traced once per such triple.

import { tracePacket, type TraceResult } from '../trace/index.js';
import { compiledKey } from '../why/index.js';
import { PROTOCOLS, type PortRange } from './model.js';
import { intervalsOf } from './ports.js';
import type { PodView, Prepared } from './prepare.js';
import type { Profile } from './profiles.js';

/** One port interval of one direction: allowed or not, and what decided, in words. */
export interface Judged extends PortRange {
  readonly allowed: boolean;
  readonly by: string;
}

/** An end of a connection: a pod, or an outside address (judged by nobody on its side). `cls`: its address class's id. */
export type End =
  | { readonly kind: 'pod'; readonly pod: PodView; readonly cls: number }
  | { readonly kind: 'outside'; readonly ip: string; readonly cls: number };

/** One direction's verdicts for one kind of peer, per port interval. */
export interface Outcome {
  readonly intervals: readonly Judged[];
  /** Some interval is allowed. */
  readonly any: boolean;
}

/** The verdicts of one pod's profile in one direction, peer by peer (`row`), and how it sees each address class. */
export interface Side {
  readonly direction: 'egress' | 'ingress';
  readonly pod: PodView;
  readonly profile: Profile;
  /** What this profile sees of each address class (`seenId`). */
  readonly view: SeenView;
  readonly row: (Outcome | undefined)[];
}

/**
 * What one profile sees of the address classes: an id per class, stored plus one (0: not worked out yet), and
 * each id's text. Worked out class by class while few are asked (a diff asks a profile about a class or two), for every class
 * at once after that (a map asks every sender about every receiver).
 */
interface SeenView {
  readonly profile: Profile;
  readonly seen: Int32Array;
  readonly ids: Map<string, number>;
  readonly texts: string[];
  /** Classes worked out one by one so far; Infinity once every class is. */
  asked: number;
}

const open = (what: string): Outcome => ({
  intervals: PROTOCOLS.map((proto) => ({ proto, from: 1, to: 65535, allowed: true, by: what })),
  any: true,
});
/** Classes asked of one profile one by one before its whole view is worked out. */
const SEEN_ONE_BY_ONE = 8;
const FROM_OUTSIDE = open('from outside the cluster: no egress judged');
const TO_OUTSIDE = open('to outside the cluster: no ingress judged');

export class Judge {
  private readonly classEntries: readonly (readonly string[])[];
  /** Each class's entries' set names (an entry's part before `@`), in the order of classEntries. */
  private readonly classSets: readonly (readonly string[])[];
  /** Set name → the classes holding it, each with its entry (`set` or `set@tcp:80`). */
  private readonly holders = new Map<string, { cls: number; entry: string }[]>();
  private readonly seenBy = new Map<string, SeenView>();
  private readonly rows = new Map<string, (Outcome | undefined)[]>();
  private readonly sides = new Map<PodView, { egress?: Side; ingress?: Side }>();
  /** Traces run, for the benchmark's account. */
  traces = 0;

  /** `classes`: every address class of the map, by id. */
  constructor(
    private readonly prepared: Prepared,
    private readonly classTexts: readonly string[],
  ) {
    const classes = classTexts;
    this.classEntries = classes.map((c) => (c === '' ? [] : c.split(' ')));
    this.classSets = this.classEntries.map((entries) => entries.map((entry) => entry.split('@')[0]!));
    this.classEntries.forEach((entries, cls) => {
      const sets = this.classSets[cls]!;
      for (let i = 0; i < entries.length; i++) {
        const entry = entries[i]!;
        const set = sets[i]!;
        const list = this.holders.get(set);
        if (list) list.push({ cls, entry });
        else this.holders.set(set, [{ cls, entry }]);
      }
    });
  }

  /** A pod's profile of one direction, with what it sees of every address class. */
  side(pod: PodView, direction: 'egress' | 'ingress', cls: number): Side {
    let entry = this.sides.get(pod);
    if (!entry) this.sides.set(pod, (entry = {}));
    const known = entry[direction];
    if (known) return known;
    const profile = pod[direction];
    const view = this.viewOf(profile);
    // The judged pod's own memberships count too: a named-port set holds the destination's address and port.
    const rowKey = `${direction}\0${profile.key}\0${this.seenId(view, cls)}`;
    let row = this.rows.get(rowKey);
    if (!row) this.rows.set(rowKey, (row = []));
    const side = { direction, pod, profile, view, row };
    entry[direction] = side;
    return side;
  }

  /**
   * What a profile sees of an address class, in words (the entries of the sets its chains match, sorted):
   * comparable between two judges, where the ids are not.
   */
  seenText(profile: Profile, cls: number): string {
    const view = this.viewOf(profile);
    return view.texts[this.seenId(view, cls)]!;
  }

  /** An address class by id, as the map's Classes list holds it. */
  classText(cls: number): string {
    return this.classTexts[cls]!;
  }

  /** A profile's view, nothing worked out yet (one per profile key: profiles of one key match the same sets). */
  private viewOf(profile: Profile): SeenView {
    let view = this.seenBy.get(profile.key);
    if (!view) {
      view = { profile, seen: new Int32Array(this.classEntries.length), ids: new Map([['', 0]]), texts: [''], asked: 0 };
      this.seenBy.set(profile.key, view);
    }
    return view;
  }

  /** The id of what `view`'s profile sees of class `cls`: the entries of the sets its chains match, sorted (0: none of them). */
  private seenId(view: SeenView, cls: number): number {
    const known = view.seen[cls]!;
    if (known > 0) return known - 1;
    if (++view.asked > SEEN_ONE_BY_ONE) {
      this.seeAll(view);
      return view.seen[cls]! - 1;
    }
    const entries = this.classEntries[cls]!;
    const sets = this.classSets[cls]!;
    const mine: string[] = [];
    for (let i = 0; i < entries.length; i++) if (view.profile.sets.has(sets[i]!)) mine.push(entries[i]!);
    const id = idOf(view, mine.sort().join(' '));
    view.seen[cls] = id + 1;
    return id;
  }

  /** Every class of `view` worked out at once, from the holders of the sets its profile matches. */
  private seeAll(view: SeenView): void {
    const parts = new Map<number, string[]>();
    for (const set of view.profile.sets)
      for (const { cls, entry } of this.holders.get(set) ?? []) {
        const list = parts.get(cls);
        if (list) list.push(entry);
        else parts.set(cls, [entry]);
      }
    const seen = view.seen;
    for (let cls = 0; cls < seen.length; cls++) {
      if (seen[cls]! > 0) continue;
      const entries = parts.get(cls);
      seen[cls] = (entries ? idOf(view, entries.sort().join(' ')) : 0) + 1;
    }
    view.asked = Infinity;
  }

  /** `src` → `dst` as the egress side `side` judges it (side.pod is the sender). */
  egress(side: Side, dst: End): Outcome {
    return this.cell(side, dst.cls, side.pod.ip, dst.kind === 'pod' ? dst.pod.ip : dst.ip);
  }

  /** `src` → `side.pod` as its ingress side judges it. */
  ingress(side: Side, src: End): Outcome {
    return this.cell(side, src.cls, src.kind === 'pod' ? src.pod.ip : src.ip, side.pod.ip);
  }

  /** Both directions of `src` → `dst`. */
  both(src: End, dst: End): { egress: Outcome; ingress: Outcome } {
    const egress = src.kind === 'pod' ? this.egress(this.side(src.pod, 'egress', src.cls), dst) : FROM_OUTSIDE;
    const ingress = dst.kind === 'pod' ? this.ingress(this.side(dst.pod, 'ingress', dst.cls), src) : TO_OUTSIDE;
    return { egress, ingress };
  }

  static readonly fromOutside = FROM_OUTSIDE;
  static readonly toOutside = TO_OUTSIDE;

  private cell(side: Side, peerCls: number, srcIp: string, dstIp: string): Outcome {
    const seen = this.seenId(side.view, peerCls);
    const known = side.row[seen];
    if (known) return known;
    const outcome = this.traceAll(side, srcIp, dstIp);
    side.row[seen] = outcome;
    return outcome;
  }

  private traceAll(side: Side, srcIp: string, dstIp: string): Outcome {
    const { direction, pod: judged, profile } = side;
    const out: Judged[] = [];
    const rules = this.prepared.compiled.get(compiledKey(this.prepared.family, judged.node));
    if (!rules) throw new Error(`node ${judged.node} was not compiled`);
    const { layout } = rules;
    const chainPrefix = this.prepared.settingsFor(judged.node).chainPrefix;
    for (const proto of PROTOCOLS) {
      for (const [from, to] of intervalsOf(profile.cuts, proto)) {
        const packet = {
          src: srcIp,
          dst: dstIp,
          proto,
          dport: from,
          inIface: direction === 'egress' ? layout.bridge : layout.uplink,
          outIface: direction === 'egress' ? layout.uplink : layout.bridge,
          ctstate: 'NEW' as const,
        };
        this.traces++;
        const t = tracePacket(rules.ruleset, rules.ipsets, packet, { chainPrefix, steps: false });
        const allowed = finalVerdict(t) === 'ACCEPT';
        out.push({ proto, from, to, allowed, by: reason(t, direction, allowed) });
      }
    }
    const intervals = joinSame(out);
    return { intervals, any: intervals.some((j) => j.allowed) };
  }
}

/** The id of one text of what a profile sees, made when new. */
function idOf(view: SeenView, text: string): number {
  let id = view.ids.get(text);
  if (id === undefined) {
    view.ids.set(text, (id = view.texts.length));
    view.texts.push(text);
  }
  return id;
}

const finalVerdict = (t: TraceResult): 'ACCEPT' | 'DROP' => (t.verdict !== 'NO-VERDICT' ? t.verdict : (t.after?.verdict ?? 'ACCEPT'));

/** What decided, in why's words: the policy rule that allowed or denied, the isolating policies, or "not isolated". */
function reason(t: TraceResult, direction: 'egress' | 'ingress', allowed: boolean): string {
  const named = (policy: string, rule: string): string =>
    policy.startsWith('ClusterNetworkPolicy ') ? `${policy} rule ${rule}` : `NetworkPolicy ${policy} rule ${rule}`;
  if (allowed) {
    const mine = t.allowedBy.filter((a) => a.direction === direction && !(a.rule?.endsWith(' Pass') ?? false));
    const who = mine[mine.length - 1];
    if (who?.policy !== undefined && who.rule !== undefined) return named(who.policy, who.rule);
    if (who?.pod !== undefined)
      return `not isolated for ${direction}${who.comment?.includes('no tier decided') === true ? ' (no tier decided)' : ''}`;
    return `no netfence rule for ${direction}`;
  }
  const d = t.decidedBy ?? t.after?.decidedBy;
  if (d?.policy !== undefined && d.rule !== undefined) return named(d.policy, d.rule);
  if (d?.pod !== undefined) {
    const by = (d.policies ?? []).filter((p) => !p.startsWith('ClusterNetworkPolicy '));
    const invalid = d.invalidPolicies ?? [];
    return `isolated for ${direction}${by.length > 0 ? ` by ${by.join(', ')}` : ''}; no rule admits it${invalid.length > 0 ? ` (${invalid.join(', ')} invalid)` : ''}`;
  }
  return d?.comment ?? d?.text ?? 'dropped';
}

/** Neighbouring intervals with the same verdict and reason, joined. */
function joinSame(list: readonly Judged[]): Judged[] {
  const out: Judged[] = [];
  for (const j of list) {
    const last = out[out.length - 1];
    if (last && last.proto === j.proto && last.allowed === j.allowed && last.by === j.by && last.to + 1 === j.from)
      out[out.length - 1] = { ...last, to: j.to };
    else out.push(j);
  }
  return out;
}

/** One port range of a connection: each direction's verdict and reason. */
export interface Cell extends PortRange {
  readonly allowed: boolean;
  readonly egressAllowed: boolean;
  readonly ingressAllowed: boolean;
  readonly egress: string;
  readonly ingress: string;
}

/** The two directions' intervals laid over each other: allowed where both allow. */
export function combine(egress: readonly Judged[], ingress: readonly Judged[]): Cell[] {
  const out: Cell[] = [];
  for (const e of egress)
    for (const i of ingress) {
      if (e.proto !== i.proto) continue;
      const from = Math.max(e.from, i.from);
      const to = Math.min(e.to, i.to);
      if (from > to) continue;
      out.push({
        proto: e.proto,
        from,
        to,
        allowed: e.allowed && i.allowed,
        egressAllowed: e.allowed,
        ingressAllowed: i.allowed,
        egress: e.by,
        ingress: i.by,
      });
    }
  return out;
}
