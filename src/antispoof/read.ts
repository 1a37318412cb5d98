// The programmed anti-spoofing table read back from `nft -j list table bridge netfence`: which port is
// bound to which addresses and what each drop rule counted, so `inspect` and `trace` speak about what
// the kernel holds rather than what the daemon meant to write.

import type { AntiSpoofState, PortBinding } from './model.js';
import { portChain } from './render.js';

interface NftRule {
  readonly chain?: string;
  readonly comment?: string;
  readonly expr?: readonly Record<string, unknown>[];
}

export interface ProgrammedAntiSpoof {
  readonly state: AntiSpoofState;
  /** Packets dropped per rule comment (`nf:spoof ipv4 vethX`, `nf:spoof unknown-port`). */
  readonly counters: ReadonlyMap<string, number>;
}

/** Strings of a match's right-hand side: one value, a set, or prefixes (`fe80::/10`). */
function values(right: unknown): string[] {
  const one = (v: unknown): string[] => {
    if (typeof v === 'string') return [v];
    const prefix = (v as { prefix?: { addr?: string; len?: number } } | null)?.prefix;
    return prefix?.addr !== undefined ? [`${prefix.addr}/${prefix.len}`] : [];
  };
  const set = (right as { set?: unknown[] } | null)?.set;
  return Array.isArray(set) ? set.flatMap(one) : one(right);
}

interface Match {
  readonly protocol?: string;
  readonly field?: string;
  readonly meta?: string;
  readonly right: unknown;
}

function matchesOf(rule: NftRule): Match[] {
  return (rule.expr ?? []).flatMap((e) => {
    const m = e['match'] as
      { left?: { payload?: { protocol?: string; field?: string }; meta?: { key?: string } }; right?: unknown } | undefined;
    if (!m) return [];
    return [{ protocol: m.left?.payload?.protocol, field: m.left?.payload?.field, meta: m.left?.meta?.key, right: m.right } as Match];
  });
}

const verdictOf = (rule: NftRule): string | undefined =>
  (rule.expr ?? []).map((e) => Object.keys(e).find((k) => ['accept', 'drop', 'jump'].includes(k))).find((k) => k !== undefined);

/** Undefined when the JSON holds no netfence bridge table. */
export function readProgrammedAntiSpoof(json: string, bridge: string): ProgrammedAntiSpoof | undefined {
  const doc = JSON.parse(json) as { nftables?: { rule?: NftRule; chain?: { name?: string } }[] };
  const rules = (doc.nftables ?? []).flatMap((i) => (i.rule ? [i.rule] : []));
  if (!(doc.nftables ?? []).some((i) => i.chain?.name === 'prerouting')) return undefined;
  const counters = new Map<string, number>();
  for (const r of rules) {
    const c = (r.expr ?? []).find((e) => e['counter'] !== undefined)?.['counter'] as { packets?: number } | undefined;
    if (r.comment !== undefined && c?.packets !== undefined) counters.set(r.comment, c.packets);
  }
  const bindings: PortBinding[] = [];
  const otherPorts: string[] = [];
  for (const r of rules.filter((x) => x.chain === 'prerouting')) {
    const iif = matchesOf(r).find((m) => m.meta === 'iifname');
    if (!iif) continue;
    if (verdictOf(r) === 'accept') otherPorts.push(...values(iif.right));
    if (verdictOf(r) !== 'jump') continue;
    const port = values(iif.right)[0];
    if (port === undefined) continue;
    const mine = rules.filter((x) => x.chain === portChain(port) && verdictOf(x) === 'accept').flatMap(matchesOf);
    const sources = (protocol: string, field: string) =>
      mine.filter((m) => m.protocol === protocol && m.field === field).flatMap((m) => values(m.right));
    bindings.push({
      port,
      ipv4: sources('ip', 'saddr'),
      ipv6: sources('ip6', 'saddr').filter((a) => a !== '::' && !a.startsWith('fe80::')),
      source: 'programmed table',
    });
  }
  return { state: { bridge, bindings, unknownPorts: [], otherPorts, conflicts: [] }, counters };
}
