// The verdicts, traced: one packet per port interval through the compiled ruleset of the node that judges it,
// with the same tracer `trace` and `why` use. A connection between pods on two nodes crosses FORWARD twice —
// the sender's node judges its egress (bridge → uplink), the receiver's its ingress (uplink → bridge) — and
// one between pods of one node is judged in one pass whose workload chains clear the mark on entry and
// decide each direction alone (compile/static-chains.ts), so it is the same two verdicts ANDed. The
// outcome of one direction depends only on the judging pod's profile and on what that profile's chains
// see of the peer and of the pod itself (their address classes projected on the sets they match: a named-port
// set holds the destination's own address), and is traced once per such triple.

import type { L4Protocol } from '../model/index.js';
import { tracePacket, type TraceResult } from '../trace/index.js';
import { compiledKey } from '../why/index.js';
import { project } from './addresses.js';
import { PROTOCOLS, type PortRange } from './model.js';
import { intervalsOf } from './ports.js';
import type { PodView, Prepared } from './prepare.js';
import type { Profile } from './profiles.js';

/** One port interval of one direction: allowed or not, and what decided, in words. */
export interface Judged extends PortRange {
  readonly allowed: boolean;
  readonly by: string;
}

/** An end of a connection: a pod, or an outside address (judged by nobody on its side). */
export type End = { readonly kind: 'pod'; readonly pod: PodView } | { readonly kind: 'outside'; readonly ip: string; readonly addressClass: string };

const OPEN_OUTSIDE = (what: string): Judged[] => PROTOCOLS.map((proto) => ({ proto, from: 1, to: 65535, allowed: true, by: what }));

export class Judge {
  private readonly memo = new Map<string, Judged[]>();
  /** Traces run, for the benchmark's account. */
  traces = 0;

  constructor(private readonly prepared: Prepared) {}

  /** The egress verdicts of `src` towards `dst`, per port interval. */
  egress(src: PodView, dst: End): Judged[] {
    const dstClass = dst.kind === 'pod' ? dst.pod.addressClass : dst.addressClass;
    const dstIp = dst.kind === 'pod' ? dst.pod.ip : dst.ip;
    return this.direction('egress', src, src.egress, dstClass, src.ip, dstIp);
  }

  /** The ingress verdicts of `dst` for packets from `src`, per port interval. */
  ingress(src: End, dst: PodView): Judged[] {
    const srcClass = src.kind === 'pod' ? src.pod.addressClass : src.addressClass;
    const srcIp = src.kind === 'pod' ? src.pod.ip : src.ip;
    return this.direction('ingress', dst, dst.ingress, srcClass, srcIp, dst.ip);
  }

  /** Both directions of `src` → `dst`, intersected: `[]` when nothing is allowed. */
  both(src: End, dst: End): { egress: Judged[]; ingress: Judged[] } {
    const egress = src.kind === 'pod' ? this.egress(src.pod, dst) : OPEN_OUTSIDE('from outside the cluster: no egress judged');
    const ingress = dst.kind === 'pod' ? this.ingress(src, dst.pod) : OPEN_OUTSIDE('to outside the cluster: no ingress judged');
    return { egress, ingress };
  }

  private direction(
    direction: 'egress' | 'ingress',
    judged: PodView,
    profile: Profile,
    peerClass: string,
    srcIp: string,
    dstIp: string,
  ): Judged[] {
    // The judged pod's own memberships count too: a named-port set holds the destination's address and port.
    const key = `${direction}\0${profile.key}\0${project(peerClass, profile.sets)}\0${project(judged.addressClass, profile.sets)}`;
    let out = this.memo.get(key);
    if (out) return out;
    out = [];
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
        const t = tracePacket(rules.ruleset, rules.ipsets, packet, { chainPrefix });
        const allowed = finalVerdict(t) === 'ACCEPT';
        out.push({ proto, from, to, allowed, by: reason(t, direction, allowed) });
      }
    }
    out = joinSame(out);
    this.memo.set(key, out);
    return out;
  }
}

const finalVerdict = (t: TraceResult): 'ACCEPT' | 'DROP' =>
  t.verdict !== 'NO-VERDICT' ? t.verdict : (t.after?.verdict ?? 'ACCEPT');

/** What decided, in why's words: the policy rule that allowed or denied, the isolating policies, or "not isolated". */
function reason(t: TraceResult, direction: 'egress' | 'ingress', allowed: boolean): string {
  const named = (policy: string, rule: string): string => (policy.startsWith('ClusterNetworkPolicy ') ? `${policy} rule ${rule}` : `NetworkPolicy ${policy} rule ${rule}`);
  if (allowed) {
    const mine = t.allowedBy.filter((a) => a.direction === direction && !(a.rule?.endsWith(' Pass') ?? false));
    const who = mine[mine.length - 1];
    if (who?.policy !== undefined && who.rule !== undefined) return named(who.policy, who.rule);
    if (who?.pod !== undefined) return `not isolated for ${direction}${who.comment?.includes('no tier decided') === true ? ' (no tier decided)' : ''}`;
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
    if (last && last.proto === j.proto && last.allowed === j.allowed && last.by === j.by && last.to + 1 === j.from) out[out.length - 1] = { ...last, to: j.to };
    else out.push(j);
  }
  return out;
}

/** Where both directions allow: the port ranges, each with the two reasons. */
export function combine(egress: readonly Judged[], ingress: readonly Judged[]): { proto: L4Protocol; from: number; to: number; allowed: boolean; egress: string; ingress: string }[] {
  const out: { proto: L4Protocol; from: number; to: number; allowed: boolean; egress: string; ingress: string }[] = [];
  for (const e of egress)
    for (const i of ingress) {
      if (e.proto !== i.proto) continue;
      const from = Math.max(e.from, i.from);
      const to = Math.min(e.to, i.to);
      if (from > to) continue;
      out.push({ proto: e.proto, from, to, allowed: e.allowed && i.allowed, egress: e.by, ingress: i.by });
    }
  return out;
}
