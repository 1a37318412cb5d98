// What `inspect` and `trace` say about the two hardening features: strict mode (read from the ruleset:
// the connmark DROP at the top of nf-FORWARD) and anti-spoofing (the programmed bridge table).

import type { ProgrammedAntiSpoof } from '../antispoof/read.js';
import { judgeFrame, type FrameKind, type SpoofVerdict } from '../antispoof/model.js';
import { toRule } from '../render/index.js';
import type { TraceResult } from '../trace/trace.js';
import type { Ruleset } from '../trace/ruleset.js';
import { wrap } from '../trace/wrap.js';

export interface StrictModeView {
  readonly on: boolean;
  /** The conntrack-mark bit whose flows nf-FORWARD drops. */
  readonly bit?: number;
  /** 1-based position of that rule in nf-FORWARD. */
  readonly position?: number;
  /** Live kernel only: conntrack entries of the shown family carrying the bit now. */
  readonly revokedFlows?: number;
  /** The same by local pod at either end (pods shown by this inspect; none listed have 0). */
  readonly revokedByPod?: readonly { readonly pod: string; readonly flows: number }[];
  /** Why conntrack could not be read (the counts are then absent). */
  readonly revokedUnreadable?: string;
}

/** Minimal shape of a conntrack entry this view needs (ctnetlink's CtEntry has it). */
interface MarkedEntry {
  readonly mark: number;
  readonly orig: { readonly src: string };
  readonly reply: { readonly src: string };
}

/**
 * How many flows carry the revoke bit, in all and per local pod at either end: the initiator is the
 * original tuple's source, the (post-DNAT) server the reply tuple's source.
 */
export function revokedFlows(
  entries: readonly MarkedEntry[],
  bit: number,
  pods: readonly { readonly pod?: string; readonly ip: string }[],
): Pick<StrictModeView, 'revokedFlows' | 'revokedByPod'> {
  const podOf = new Map(pods.map((p) => [p.ip, p.pod ?? p.ip]));
  const byPod = new Map<string, number>();
  let flows = 0;
  for (const e of entries) {
    if ((e.mark & bit) === 0) continue;
    flows++;
    for (const pod of new Set([podOf.get(e.orig.src), podOf.get(e.reply.src)]))
      if (pod !== undefined) byPod.set(pod, (byPod.get(pod) ?? 0) + 1);
  }
  return { revokedFlows: flows, revokedByPod: [...byPod].sort(([a], [b]) => a.localeCompare(b)).map(([pod, n]) => ({ pod, flows: n })) };
}

export function strictModeOf(ruleset: Ruleset, chainPrefix: string): StrictModeView {
  const forward = ruleset.chains.get(`${chainPrefix}FORWARD`);
  const rules = forward?.rules ?? [];
  for (const [i, saved] of rules.entries()) {
    const rule = saved.rule ?? toRule(saved.args);
    const m = rule?.match.find((x) => x.kind === 'connmark');
    if (rule?.action.kind === 'drop' && m?.kind === 'connmark' && !m.negate) return { on: true, bit: m.value, position: i + 1 };
  }
  return { on: false };
}

/** For a traced new packet: what strict mode does to an already established flow with the same tuple. */
export function establishedFate(strict: StrictModeView, result: TraceResult): string {
  if (!strict.on)
    return 'strict mode off: an established flow with this tuple keeps going whatever the verdict (connections are judged on their first packet)';
  return result.verdict === 'DROP'
    ? `strict mode on: an established flow with this tuple is revoked (conntrack mark 0x${(strict.bit ?? 0).toString(16)}) and dropped both ways`
    : 'strict mode on: an established flow with this tuple is allowed to go on';
}

export interface AntiSpoofView {
  readonly programmed: boolean;
  readonly ports: readonly { readonly port: string; readonly addresses: readonly string[]; readonly drops: number }[];
  readonly unknownPortDrops: number;
}

export function antiSpoofView(programmed: ProgrammedAntiSpoof | undefined): AntiSpoofView {
  if (!programmed) return { programmed: false, ports: [], unknownPortDrops: 0 };
  const drops = (port: string) =>
    [...programmed.counters].filter(([c]) => c.startsWith('nf:spoof ') && c.endsWith(` ${port}`)).reduce((n, [, v]) => n + v, 0);
  return {
    programmed: true,
    ports: programmed.state.bindings.map((b) => ({ port: b.port, addresses: [...b.ipv4, ...b.ipv6], drops: drops(b.port) })),
    unknownPortDrops: programmed.counters.get('nf:spoof unknown-port') ?? 0,
  };
}

export function formatHardening(strict: StrictModeView, spoof: AntiSpoofView | undefined): string[] {
  const out: string[] = [];
  out.push(
    ...wrap(
      strict.on
        ? `strict mode: on (nf-FORWARD #${strict.position} drops flows with conntrack mark 0x${(strict.bit ?? 0).toString(16)}, above the ESTABLISHED accepts)`
        : 'strict mode: off (established flows are not re-judged after a change)',
      '',
      '  ',
    ),
  );
  if (strict.revokedUnreadable !== undefined)
    out.push(...wrap(`revoked flows: conntrack not readable (${strict.revokedUnreadable})`, '  ', '    '));
  else if (strict.revokedFlows !== undefined) {
    const pods = (strict.revokedByPod ?? []).map((p) => `${p.pod} ${p.flows}`).join(', ');
    out.push(...wrap(`${strict.revokedFlows} flow(s) carry the revoke bit now${pods ? `; by local pod: ${pods}` : ''}`, '  ', '    '));
  }
  if (spoof === undefined) return out;
  if (!spoof.programmed) return [...out, 'anti-spoofing: no bridge table netfence (off, no CNI result cache, or not this node)'];
  out.push(`anti-spoofing: ${spoof.ports.length} pod port(s) bound; ${spoof.unknownPortDrops} packet(s) dropped from unknown ports`);
  for (const p of spoof.ports) out.push(...wrap(`${p.port}: ${p.addresses.join(', ')} (${p.drops} forged dropped)`, '  ', '    '));
  return out;
}

/** Trace: the bridge table's verdict for a frame entering `port` with the packet's source. */
export function antiSpoofVerdict(programmed: ProgrammedAntiSpoof, port: string, src: string, kind: FrameKind): SpoofVerdict {
  if (programmed.state.otherPorts.includes(port)) return { verdict: 'accept', why: `${port} is a port of another bridge: not checked` };
  return judgeFrame({ ...programmed.state, unknownPorts: [] }, { inPort: port, kind, src });
}
