// `nft -j list table …` read into typed data: the one reader of nft's JSON. Callers (the drop counters, the
// programmed anti-spoofing table read back) work on these records, never on the JSON.

/** One match of a rule: what it reads (a payload field of a protocol, or a meta key) and the values it compares. */
export interface NftListedMatch {
  readonly protocol: string | undefined;
  readonly field: string | undefined;
  readonly meta: string | undefined;
  /** Strings of the right-hand side: one value, a set, or prefixes (`fe80::/10`); other kinds of value are left out. */
  readonly values: readonly string[];
}

export interface NftListedRule {
  readonly chain: string | undefined;
  readonly comment: string | undefined;
  /** The rule's first counter, as listed. */
  readonly counter: { readonly packets?: number; readonly bytes?: number } | undefined;
  readonly matches: readonly NftListedMatch[];
  /** Its first `accept`, `drop` or `jump` statement. */
  readonly verdict: 'accept' | 'drop' | 'jump' | undefined;
}

export interface NftListing {
  /** Names of the table's chains. */
  readonly chains: readonly string[];
  readonly rules: readonly NftListedRule[];
}

interface JsonRule {
  readonly chain?: string;
  readonly comment?: string;
  readonly expr?: readonly Record<string, unknown>[];
}

const VERDICTS = ['accept', 'drop', 'jump'] as const;

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

function matchesOf(rule: JsonRule): NftListedMatch[] {
  return (rule.expr ?? []).flatMap((e) => {
    const m = e['match'] as
      { left?: { payload?: { protocol?: string; field?: string }; meta?: { key?: string } }; right?: unknown } | undefined;
    if (!m) return [];
    return [{ protocol: m.left?.payload?.protocol, field: m.left?.payload?.field, meta: m.left?.meta?.key, values: values(m.right) }];
  });
}

const verdictOf = (rule: JsonRule): NftListedRule['verdict'] =>
  (rule.expr ?? []).map((e) => Object.keys(e).find((k) => (VERDICTS as readonly string[]).includes(k))).find((k) => k !== undefined) as
    NftListedRule['verdict'] | undefined;

/** `nft -j list table …` output as a listing; throws on text that is not JSON. */
export function parseNftListing(json: string): NftListing {
  const doc = JSON.parse(json) as { nftables?: { rule?: JsonRule; chain?: { name?: string } }[] };
  const items = doc.nftables ?? [];
  return {
    chains: items.flatMap((i) => (i.chain?.name !== undefined ? [i.chain.name] : [])),
    rules: items.flatMap((i) => {
      const r = i.rule;
      if (!r) return [];
      const counter = (r.expr ?? []).find((e) => e['counter'] !== undefined)?.['counter'] as NftListedRule['counter'];
      return [{ chain: r.chain, comment: r.comment, counter, matches: matchesOf(r), verdict: verdictOf(r) }];
    }),
  };
}

export interface NftCount {
  readonly packets: number;
  readonly bytes: number;
}

/** Comment → packets and bytes, summed over the rules that carry both a comment and a counter. */
export function nftCountsByComment(listing: NftListing): Map<string, NftCount> {
  const out = new Map<string, NftCount>();
  for (const { comment, counter } of listing.rules) {
    if (comment === undefined || counter?.packets === undefined) continue;
    const was = out.get(comment) ?? { packets: 0, bytes: 0 };
    out.set(comment, { packets: was.packets + counter.packets, bytes: was.bytes + (counter.bytes ?? 0) });
  }
  return out;
}
